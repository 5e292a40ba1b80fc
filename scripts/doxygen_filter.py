#!/usr/bin/env python3
"""Doxygen's INPUT_FILTER for ember's headers (scripts/docs.sh): reads the house comment style as
documentation, so the headers need no second comment syntax.

  // text            (whole lines, above a declaration)  ->  /// text
  decl;  // text     (after a declaration or an enumerator) ->  decl;  ///< text
  the file's opening comment block                   ->  the file's documentation (\\file)
  // ---- section ----                                ->  stays a plain comment (not the next
                                                          declaration's documentation)
  T a, b, c;  (a member declaring several names)      ->  each name documented: the comment
                                                          above (or the trailing one) is repeated
  struct X { T v; };  (a one-line struct)             ->  its members get the struct's comment
  struct X {  // text,  template <...>  // text      ->  the comment documents X, the template
  EMBER_X(a) EMBER_X(b)  (a line of macro calls)      ->  a blank line (MACRO_EXPANSION is off: the
                                                          declarations they make are not seen)

Lines keep their numbers, so Doxygen's warnings point at the real header lines.
"""
import re
import sys

TRAILING = re.compile(r"^(\s*[^/\s].*?[;,{)}\w\]>])(\s+)//\s?(.*)$")


def prose(text):
    """Comment text as Doxygen reads it literally: its command characters escaped (a regex's \\s, a
    path's <dir>, #include, @name are text here, not commands, tags or links)."""
    text = text.replace("\\", "\\\\")
    text = text.replace("<", "\\<")
    text = re.sub(r"(?<![\w])::(?=[A-Za-z_])|(?<=[>)\]])::(?=[A-Za-z_])", r"\\::", text)
    text = re.sub(r"#(?=[A-Za-z])", r"\\#", text)
    text = re.sub(r"@(?=[A-Za-z])", r"\\@", text)
    return text


DIVIDER = re.compile(r"^\s*//\s*-{2,}")
OPENER = re.compile(r"^\s*((template\s*<.*>\s*)?(struct|class|enum|union)\b[^;]*\{|template\s*<.*>)\s*$")
MACRO_CALLS = re.compile(r"^\s*(EMBER_[A-Z0-9_]+\(.*\)\s*)+$")
OPEN = "([{<"
CLOSE = ")]}>"


def split_top(code, sep):
    """`code` cut at the `sep` characters outside brackets and string literals."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(code):
        if quote:
            if ch == quote and code[i - 1] != "\\":
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in OPEN:
            depth += 1
        elif ch in CLOSE:
            depth = max(0, depth - 1)
        elif ch == sep and depth == 0:
            parts.append(code[start:i])
            start = i + 1
    parts.append(code[start:])
    return parts


def inline_doc(text):
    return "/**< " + text.strip().replace("*/", "* /") + " */"


def several_names(code, doc_above, doc_trailing):
    """A member declaring several names (`T a = 0, b, c{};`) as one declaration a name, all on one
    line, each documented; None when `code` is not such a declaration."""
    body = code.rstrip()
    if not body.endswith(";") or body.lstrip().startswith(("return", "using", "template", "typedef", "#", "case")):
        return None
    parts = split_top(body[:-1], ",")
    if len(parts) < 2 or "(" in split_top(parts[0], "=")[0] or any("(" in p.split("=")[0] for p in parts[1:]):
        return None
    head = re.split(r"[={]", parts[0], maxsplit=1)[0].rstrip()
    m = re.match(r"^(.*?[\w>&*\]])\s+(\w+)$", head)
    if not m or not all(re.match(r"^\s*\w+\s*([={].*)?$", p, re.S) for p in parts[1:]):
        return None
    type_ = m.group(1)
    docs = [doc_trailing or doc_above] * len(parts)
    out = parts[0].rstrip() + ";"
    if doc_above is None and docs[0]:
        out += " " + inline_doc(docs[0])
    for p, d in zip(parts[1:], docs[1:]):
        out += " " + type_.strip() + " " + p.strip() + ";"
        if d:
            out += " " + inline_doc(d)
    return out


def one_line_struct(code, doc):
    """`struct X { T v; };` with each member documented by the struct's comment."""
    if not doc or not re.match(r"^\s*(template\s*<.*>\s*)?(struct|class)\b.*\{.*;.*\}\s*;\s*$", code):
        return None
    a, b = code.index("{"), code.rindex("}")
    inner = re.sub(r";", "; " + inline_doc(doc).replace("\\", "\\\\"), code[a + 1:b])
    return code[: a + 1] + inner + code[b:]


def convert(lines):
    out = []
    opening = True  # still in the file's first comment block
    doc = []  # the text of the doc comment block just above the current line
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith("//") and DIVIDER.match(line) and not opening:
            out.append(line)
            doc = []
            continue
        if stripped.startswith("//"):
            indent = line[: len(line) - len(stripped)]
            text = stripped[2:]
            if text.startswith("/") or text.startswith("!"):  # already a doc comment
                out.append(line)
                continue
            text = prose(text)
            doc.append(text.strip())
            if opening and not out:  # (a \file at the end of the line: the file is this one)
                out.append(indent + "///" + text.rstrip("\n") + " \\file\n")
            else:
                out.append(indent + "///" + text)
            continue
        if opening and out:
            opening = False
        elif opening and stripped == "":
            pass
        above = " ".join(doc) if doc else None
        doc = []
        m = TRAILING.match(line.rstrip("\n"))
        if m and '"' not in m.group(1).split("//")[0][-1:] and m.group(1).count('"') % 2 == 0:
            trailing = prose(m.group(3))
            code = several_names(m.group(1), above, trailing)
            struct = one_line_struct(m.group(1), trailing)
            if OPENER.match(m.group(1)):  # `struct X {  // text`, `template <...>  // text`: X's doc
                lead = m.group(1)[: len(m.group(1)) - len(m.group(1).lstrip())]
                out.append(lead + inline_doc(trailing).replace("/**<", "/**", 1) + " " + m.group(1).lstrip() + "\n")
            elif code:
                out.append(code + "\n")
            elif struct:  # (the trailing comment still documents the struct)
                out.append(struct + m.group(2) + "///< " + trailing + "\n")
            else:
                out.append(m.group(1) + m.group(2) + "///< " + trailing + "\n")
        elif MACRO_CALLS.match(line):  # (unexpanded, they would read as variables)
            out.append("\n")
        else:
            code = line.rstrip("\n")
            new = several_names(code, above, None) or one_line_struct(code, above)
            out.append(new + "\n" if new else line)
    return out


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write("".join(convert(f.readlines())))
