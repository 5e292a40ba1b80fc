#!/usr/bin/env python3
"""Doxygen's INPUT_FILTER for ember's headers (scripts/docs.sh): reads the house comment style as
documentation, so the headers need no second comment syntax.

  // text            (whole lines, above a declaration)  ->  /// text
  decl;  // text     (after a declaration or an enumerator) ->  decl;  ///< text
  the file's opening comment block                   ->  the file's documentation (\\file)

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


def convert(lines):
    out = []
    opening = True  # still in the file's first comment block
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith("//"):
            indent = line[: len(line) - len(stripped)]
            text = stripped[2:]
            if text.startswith("/") or text.startswith("!"):  # already a doc comment
                out.append(line)
                continue
            text = prose(text)
            if opening and not out:  # (a \file at the end of the line: the file is this one)
                out.append(indent + "///" + text.rstrip("\n") + " \\file\n")
            else:
                out.append(indent + "///" + text)
            continue
        if opening and out:
            opening = False
        elif opening and stripped == "":
            pass
        m = TRAILING.match(line.rstrip("\n"))
        if m and '"' not in m.group(1).split("//")[0][-1:] and m.group(1).count('"') % 2 == 0:
            out.append(m.group(1) + m.group(2) + "///< " + prose(m.group(3)) + "\n")
        else:
            out.append(line)
    return out


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write("".join(convert(f.readlines())))
