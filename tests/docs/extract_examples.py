#!/usr/bin/env python3
"""Finds the code examples of ember's public headers and docs and writes them out as C++.

The convention (docs/testing.md, "Code examples compile"):

Headers (include/ember/**/*.hpp), in the comment block at the top of the file:
  * An example is a run of lines indented three spaces past the comment (`//   code`) that
    starts after a blank comment line (`//`) or on the first line. Blank comment lines inside
    it do not end it; a prose line (`// text`) does.
  * A run indented the same way that follows a prose line directly (no blank line between) is
    part of that prose: a table, a formula, a list item's second line. It is not compiled.
    Indented text that is not C++ (a shell line, a directory layout) therefore gets a caption
    line ending in ':' right above it.
  * Setup lines `//   # code` belong to the example but are not part of what it shows: they
    declare the names the example assumes (`# Device dev = Device::cpu();`). A doc renderer
    would hide them. `given<T>()` (declared, never defined) stands for a value of type T in
    examples that are only compiled: `# auto& loader = given<data::DataLoader<...>>();`.
  * The setup line `# run` marks an example that is also run (cheap, complete ones only).

Markdown (README.md, docs/*.md, examples/*/README.md, and the book, docs/book/*.md, in a group of
its own):
  * Every fenced block names its language (```cpp, ```sh, ```text, ...).
  * A ```cpp block is an example. Attributes after the language: `run` (also run), `continued`
    (continues the previous cpp block of the page: same scope), `ignore` (a sketch that is not
    meant to compile, e.g. design.md's internal interfaces; counted and listed, not compiled).
  * Setup code goes in an HTML comment right above the fence: `<!-- setup: code -->` (one or
    more lines before the closing `-->`). Renderers hide it; the raw page shows it.
  * A page whose blocks are compiled elsewhere says so once:
    `<!-- examples: tests/tensor/pytorch_habits_test.cpp -->` (the file must exist).

In every example, `#include` lines are moved to the top of the translation unit; the rest
becomes the body of one function in a namespace of its own, after `using namespace ember;`,
with `#line` directives so that compiler errors point at the header or page line.

Usage:
  extract_examples.py ROOT OUTDIR [--no-apps]   write OUTDIR/docex_<group>.cpp and
                                                docex_run.cpp, print a summary
  extract_examples.py ROOT --check              only parse and report problems
  extract_examples.py --groups                  print the group names (for CMake)
Exit status 1 when a block is ambiguous or malformed (each problem printed as file:line: text).
"""

import os
import re
import sys

# Translation units: a group per layer family, so a failure names its layer and two cores
# compile them in parallel. A header belongs to the first group whose prefix it starts with.
GROUPS = [
    ("core", ["core/", "backends/", "kernels/", "decorators/", "tensor/", "ember.hpp", "version.hpp"]),
    ("nn", ["nn/", "nn.hpp", "optim/", "amp/", "amp.hpp", "store/", "onnx/", "quant/", "quant.hpp", "web.hpp"]),
    ("data_train", ["data/", "data.hpp", "train/", "distributed/", "distributed.hpp"]),
    ("docs", []),  # the markdown pages
    ("book", []),  # the book's chapters (docs/book/*.md): a translation unit of their own
]
MARKDOWN_GROUPS = ("docs", "book")
APP_PREFIXES = ("data/", "data.hpp", "train/")  # need EMBER_HAS_APPS (ember_data, ember_train)
CPP_END = (";", "{", "}")


class Example:
    def __init__(self, path, group):
        self.path = path          # relative to the repository root
        self.group = group
        self.lines = []           # (line number, text, is_setup)
        self.run = False

    @property
    def first_line(self):
        return self.lines[0][0] if self.lines else 0


def strip_comment(text):
    """The code part of a line, without a trailing // comment (roughly: not inside a string)."""
    out, quote = [], None
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                out.append(text[i:i + 2])
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif text.startswith("//", i):
            break
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2)
            if close < 0:
                break
            i = close + 2
            continue
        out.append(c)
        i += 1
    return "".join(out).rstrip()


def looks_like_cpp(texts):
    """True when some line ends a statement or a block: a C++ example, not a table or a shell line."""
    return any(strip_comment(t).endswith(CPP_END) for t in texts)


def all_statements(texts):
    """True when every line ends a statement or a block: looks like code, whatever its place."""
    code = [strip_comment(t) for t in texts if strip_comment(t)]
    return bool(code) and all(c.endswith(CPP_END) for c in code) and any(c.endswith(";") for c in code)


def group_of(rel_header):
    for name, prefixes in GROUPS:
        if any(rel_header.startswith(p) for p in prefixes):
            return name
    return None


def parse_header(root, rel, problems):
    """The examples of one header's leading comment block."""
    path = os.path.join(root, rel)
    sub = os.path.relpath(path, os.path.join(root, "include", "ember"))
    group = group_of(sub)
    if group is None:
        problems.append(f"{rel}:1: no group in tests/docs/extract_examples.py's GROUPS for this header")
        return []
    examples = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    state, current, table = "start", None, []  # state: start, blank, prose, example, table

    def end_table():
        if table and all_statements([t for _, t in table]):
            problems.append(f"{rel}:{table[0][0]}: an indented block right after a prose line looks like code; "
                            "put a blank '//' line before it if it is an example (else reword it)")
        table.clear()

    for number, line in enumerate(lines, 1):
        if not line.startswith("//"):
            break
        body = line[2:]
        if body.strip() == "":
            if state == "table":
                end_table()
            state = "blank" if state != "example" else "example"
            if state == "example":
                current.lines.append((number, "", False))
            continue
        if body.startswith("   "):
            text = body[3:]
            if state in ("start", "blank"):
                current = Example(rel, group)
                examples.append(current)
                state = "example"
            elif state == "prose":
                state = "table"
            if state == "table":
                table.append((number, text))
                continue
            stripped = text.strip()
            if stripped == "# run":
                current.run = True
                current.lines.append((number, "", True))
            elif stripped.startswith("# ") or stripped == "#":
                indent = text[: len(text) - len(text.lstrip())]
                current.lines.append((number, indent + stripped[2:], True))
            else:
                current.lines.append((number, text, False))
            continue
        if state == "table":
            end_table()
        state = "prose"
    if state == "table":
        end_table()
    for ex in examples:
        while ex.lines and ex.lines[-1][1] == "" and not ex.lines[-1][2]:
            ex.lines.pop()
        shown = [t for _, t, setup in ex.lines if not setup and t.strip()]
        if not looks_like_cpp(shown):
            problems.append(f"{rel}:{ex.first_line}: an indented block after a blank line is an example, but no "
                            "line of it ends in ';', '{' or '}'; if it is not code, give it a caption line "
                            "ending in ':' right above it (no blank line between)")
    return [ex for ex in examples if looks_like_cpp([t for _, t, s in ex.lines if not s and t.strip()])]


FENCE = re.compile(r"^(\s*)```(.*)$")


def parse_markdown(root, rel, problems, ignored, group="docs"):
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    elsewhere = re.search(r"<!-- examples: (\S+) -->", "\n".join(lines))
    if elsewhere and not os.path.isfile(os.path.join(root, elsewhere.group(1))):
        problems.append(f"{rel}:1: '<!-- examples: {elsewhere.group(1)} -->' names a file that does not exist")
    examples, previous = [], None
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        info = m.group(2).split()
        start = i
        end = i + 1
        while end < len(lines) and not re.match(r"^\s*```\s*$", lines[end]):
            end += 1
        if end == len(lines):
            problems.append(f"{rel}:{start + 1}: a fenced block that is never closed")
            break
        i = end + 1
        if not info:
            problems.append(f"{rel}:{start + 1}: a fenced block without a language: write ```cpp, ```sh, ```text, ...")
            continue
        lang, attrs = info[0], info[1:]
        if lang not in ("cpp", "c++"):
            continue
        unknown = [a for a in attrs if a not in ("run", "continued", "ignore")]
        if unknown:
            problems.append(f"{rel}:{start + 1}: unknown attribute(s) {unknown} on a cpp block "
                            "(known: run, continued, ignore)")
            continue
        if elsewhere:
            continue
        if "ignore" in attrs:
            ignored.append(f"{rel}:{start + 1}")
            continue
        setup = []
        # <!-- setup: ... --> directly above the fence
        j = start - 1
        if j >= 0 and lines[j].strip().endswith("-->"):
            k = j
            while k >= 0 and "<!--" not in lines[k]:
                k -= 1
            if k >= 0 and lines[k].strip().startswith("<!-- setup:"):
                for n in range(k, j + 1):
                    text = lines[n]
                    if n == k:
                        text = text.split("<!-- setup:", 1)[1]
                    if n == j:
                        text = text.rsplit("-->", 1)[0]
                    if text.strip():
                        setup.append((n + 1, text, True))
        body = [(n + 1, lines[n], False) for n in range(start + 1, end)]
        if "continued" in attrs:
            if previous is None:
                problems.append(f"{rel}:{start + 1}: 'continued' on the first cpp block of the page")
                continue
            previous.lines += setup + body
            previous.run = previous.run or "run" in attrs
            continue
        ex = Example(rel, group)
        ex.lines = setup + body
        ex.run = "run" in attrs
        examples.append(ex)
        previous = ex
    return examples


def collect(root, apps=True):
    problems, ignored, examples = [], [], []
    header_root = os.path.join(root, "include", "ember")
    for dirpath, _, files in sorted(os.walk(header_root)):
        for name in sorted(files):
            if not name.endswith(".hpp"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            sub = os.path.relpath(os.path.join(dirpath, name), header_root)
            found = parse_header(root, rel, problems)
            if not apps and sub.startswith(APP_PREFIXES):
                continue
            examples += found
    pages = ["README.md"]
    pages += sorted(os.path.join("docs", p) for p in os.listdir(os.path.join(root, "docs")) if p.endswith(".md"))
    ex_dir = os.path.join(root, "examples")
    pages += sorted(os.path.join("examples", d, "README.md") for d in os.listdir(ex_dir)
                    if os.path.isfile(os.path.join(ex_dir, d, "README.md")))
    book_dir = os.path.join(root, "docs", "book")
    book = sorted(os.path.join("docs", "book", p) for p in os.listdir(book_dir)
                  if p.endswith(".md")) if os.path.isdir(book_dir) else []
    for page in pages + book:
        for ex in parse_markdown(root, page, problems, ignored, "book" if page in book else "docs"):
            # Without the data and train layers (--no-apps), a page's example that names them is left out.
            if apps or not any(re.search(r"\b(data|train)::", t) for _, t, _ in ex.lines):
                examples.append(ex)
            else:
                ignored.append(f"{ex.path}:{ex.first_line} (no data/train layers in this build)")
    return examples, problems, ignored


def function_body(ex, root, index):
    """(includes, C++ text of a namespace holding the example as function run())."""
    includes, body = [], []
    last = None
    for number, text, _ in ex.lines:
        if re.match(r"^\s*#\s*include\b", text):
            includes.append(text.strip())
            last = None
            continue
        if last is None or number != last + 1:
            body.append(f'#line {number} "{os.path.join(root, ex.path)}"')
        body.append("  " + text if text else "")
        last = number
    ns = f"docex_{index}"
    out = [f"namespace {ns} {{  // {ex.path}:{ex.first_line}",
           "void run() {",
           "  using namespace ember;",
           "  using namespace docex;"]
    out += body
    out += ["}", f"}}  // namespace {ns}", ""]
    return includes, "\n".join(out)


PRELUDE = """\
// Generated by tests/docs/extract_examples.py from the examples in ember's headers and docs.
// Do not edit: edit the example where the #line directives point.
{includes}
#include <iostream>
#include <memory>
#include <string>
#include <vector>

// An example computes values to show them; it need not use them.
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wunused-value"
#pragma GCC diagnostic ignored "-Wunused-result"
#pragma GCC diagnostic ignored "-Wunused-local-typedefs"
#pragma GCC diagnostic ignored "-Wunused-parameter"

{apps}#include "{root}/tests/docs/docex.hpp"  // given<T>(), Model, Batch

"""


def prelude(root, apps, includes):
    return PRELUDE.format(includes="\n".join(includes), root=root, apps="#define DOCEX_HAS_APPS 1\n" if apps else "")


def public_headers(root, apps):
    header_root = os.path.join(root, "include", "ember")
    out = []
    for dirpath, _, files in sorted(os.walk(header_root)):
        for name in sorted(files):
            if name.endswith(".hpp"):
                sub = os.path.relpath(os.path.join(dirpath, name), header_root)
                if apps or not sub.startswith(APP_PREFIXES):
                    out.append(f"#include <ember/{sub}>")
    return out


def write_if_changed(path, text):
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


SELF_TEST_HEADER = """\
// A header. A table follows its caption:
//   name   what
//   x      a tensor
//
//   # DynTensor x = DynTensor::ones({2});
//   auto y = x + 1;
//
//   std::cout << y;
//   # run
// Prose again; then an indented block that looks like code but follows prose:
//   auto z = y * 2;
//   z = z + 1;
//
//   EMBER_TRACE=t.json ./prog
#pragma once
"""

SELF_TEST_PAGE = """\
# A page
```
no language
```
<!-- setup: int n = 2; -->
```cpp run
int m = n;
```
```cpp continued
m += 1;
```
```cpp ignore
not code
```
```cpp nonsense
```
"""


def self_test():
    """The convention on a made-up header and page: what is an example, what is reported."""
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "include", "ember", "core"))
        with open(os.path.join(root, "include", "ember", "core", "h.hpp"), "w") as f:
            f.write(SELF_TEST_HEADER)
        with open(os.path.join(root, "page.md"), "w") as f:
            f.write(SELF_TEST_PAGE)
        problems, ignored = [], []
        found = parse_header(root, "include/ember/core/h.hpp", problems)
        assert len(found) == 1, found
        ex = found[0]
        assert ex.run and ex.first_line == 5, (ex.run, ex.first_line)
        assert [t for _, t, s in ex.lines if s and t] == ["DynTensor x = DynTensor::ones({2});"], ex.lines
        assert [t for _, t, s in ex.lines if not s and t] == ["auto y = x + 1;", "std::cout << y;"], ex.lines
        assert len(problems) == 2, problems
        assert problems[0].startswith("include/ember/core/h.hpp:11: an indented block right after a prose line"), problems
        assert problems[1].startswith("include/ember/core/h.hpp:14: an indented block after a blank line"), problems
        pages = parse_markdown(root, "page.md", problems, ignored)
        assert len(pages) == 1 and pages[0].run, pages
        assert [t for _, t, _ in pages[0].lines] == [" int n = 2; ", "int m = n;", "m += 1;"], pages[0].lines
        assert ignored == ["page.md:12"], ignored
        assert len(problems) == 4, problems
        assert "page.md:2: a fenced block without a language" in problems[2], problems
        assert "page.md:15: unknown attribute" in problems[3], problems
        # The book's chapters (docs/book/*.md) are found and make a group of their own.
        for d in ("docs/book", "examples"):
            os.makedirs(os.path.join(root, d))
        for page in ("README.md", "docs/book/chapter.md"):
            with open(os.path.join(root, page), "w") as f:
                f.write("```cpp\nint k = 1;\n```\n")
        found, problems, ignored = collect(root)
        assert [(ex.path, ex.group) for ex in found if ex.path.endswith(".md")] == [
            ("README.md", "docs"), ("docs/book/chapter.md", "book")], found
    print("extractor self-test: ok")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if argv[1:] == ["--groups"]:
        print(";".join(name for name, _ in GROUPS))
        return 0
    root = os.path.abspath(argv[1])
    check = "--check" in argv
    apps = "--no-apps" not in argv
    examples, problems, ignored = collect(root, apps)
    for p in problems:
        print(p, file=sys.stderr)
    runs = [ex for ex in examples if ex.run]
    with_examples = {ex.path for ex in examples if ex.group not in MARKDOWN_GROUPS}
    header_root = os.path.join(root, "include", "ember")
    without = sorted(os.path.relpath(os.path.join(d, n), root) for d, _, fs in os.walk(header_root) for n in fs
                     if n.endswith(".hpp") and os.path.relpath(os.path.join(d, n), root) not in with_examples
                     and (apps or not os.path.relpath(os.path.join(d, n), header_root).startswith(APP_PREFIXES)))
    headers = sum(1 for ex in examples if ex.group not in MARKDOWN_GROUPS)
    in_book = sum(1 for ex in examples if ex.group == "book")
    print(f"doc examples: {len(examples)} found ({headers} in headers, {len(examples) - headers - in_book} in "
          f"markdown, {in_book} in the book), "
          f"{len(runs)} run, {len(ignored)} cpp blocks left out ({', '.join(ignored) or 'none'}), "
          f"{len(problems)} problem(s); headers without an example: {', '.join(without) or 'none'}")
    if problems:
        return 1
    if check:
        return 0
    out_dir = argv[2]
    os.makedirs(out_dir, exist_ok=True)
    base = public_headers(root, apps)
    for name, _ in GROUPS:
        includes, parts = [], []
        for index, ex in enumerate(examples):
            if ex.group == name:
                inc, text = function_body(ex, root, index)
                includes += inc
                parts.append(text)
        all_includes = list(dict.fromkeys(base + includes))
        text = prelude(root, apps, all_includes) + "\n".join(parts)
        write_if_changed(os.path.join(out_dir, f"docex_{name}.cpp"), text)
    # The runnable examples again, in a program that runs each and reports it.
    includes, parts, calls = [], [], []
    for index, ex in enumerate(examples):
        if ex.run:
            inc, text = function_body(ex, root, index)
            includes += inc
            parts.append(text)
            calls.append(f'  {{"{ex.path}:{ex.first_line}", docex_{index}::run}},')
    all_includes = list(dict.fromkeys(base + includes))
    main_text = ["int main() {",
                 "  struct Entry { const char* where; void (*run)(); };",
                 "  const Entry examples[] = {"] + calls + [
                 "  };",
                 "  int failed = 0;",
                 "  for (const Entry& e : examples) {",
                 '    std::cout << "== " << e.where << std::endl;',
                 "    try {",
                 "      e.run();",
                 '      std::cout << "ok " << e.where << std::endl;',
                 "    } catch (const std::exception& err) {",
                 '      std::cout << "FAILED " << e.where << ": " << err.what() << std::endl;',
                 "      ++failed;",
                 "    }",
                 "  }",
                 '  std::cout << "doc examples run: " << (std::size(examples) - failed) << " passed, " << failed',
                 '            << " failed" << std::endl;',
                 "  return failed == 0 ? 0 : 1;",
                 "}", ""]
    text = prelude(root, apps, all_includes) + "\n".join(parts) + "\n".join(main_text)
    write_if_changed(os.path.join(out_dir, "docex_run.cpp"), text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
