#!/usr/bin/env python3
"""The WGSL-generator rule of scripts/check-rules.sh (issue 69): one emitter writes generated WGSL.

`core/src/model/wgsl/emit.rs` owns statements, braces, indentation and the names values are
given. Every other file that uses it (any `.rs` under core/src or shaders/src naming `emit::`)
is a generator, and outside its tests (from its first top-level `#[cfg(test)]` on):
- formats no text itself: no `format!`, `write!`, `writeln!` or `.push_str(` (expressions are the
  emitter's `expr!` templates, statements its methods);
- glues no name by hand: no string literal with a letter, digit or `_` right before a `{…}`
  placeholder (`"x{p}_{l}"`); names come from `emit::name` and its protocol names.

Prints one line a breach (as `RULE: ...`, what check-rules.sh counts) and exits 1 if any.
"""

import re
import subprocess
import sys

EMITTER = "core/src/model/wgsl/emit.rs"
FORMATS = re.compile(r"\b(format|write|writeln)!\s*\(|\.push_str\(")
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"', re.S)
GLUED = re.compile(r"[A-Za-z0-9_]\{(?!\{)")


def code_of(text):
    """The file up to its tests, comment lines and char literals left out."""
    lines = []
    for line in text.splitlines():
        if line.startswith("#[cfg(test)]"):
            break
        if line.lstrip().startswith("//"):
            lines.append("")
            continue
        lines.append(re.sub(r"'(\\.|[^'\\])'", "' '", line))
    return "\n".join(lines)


def main():
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "core/src/*.rs", "shaders/src/*.rs"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    breaches = []
    generators = 0
    for path in sorted(files):
        if path == EMITTER:
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            continue
        if not re.search(r"\bemit::", text):
            continue
        generators += 1
        code = code_of(text)
        for number, line in enumerate(code.splitlines(), 1):
            if FORMATS.search(line):
                breaches.append(f"{path}:{number}: a generator formats text itself (use the emitter): {line.strip()}")
        for literal in STRING.finditer(code):
            if GLUED.search(literal.group(1)):
                number = code.count("\n", 0, literal.start()) + 1
                breaches.append(f"{path}:{number}: a name glued by hand (use emit::name): \"{literal.group(1)}\"")
    for breach in breaches:
        print(f"RULE: {breach}")
    if generators == 0:
        print(f"RULE: no file uses {EMITTER}: the generator rule checks nothing")
        return 1
    print(f"generators: {generators} files write WGSL through the emitter only")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
