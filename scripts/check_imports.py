#!/usr/bin/env python3
"""The import rules of scripts/check-rules.sh: core's layers and no import circles.

- Each folder (or file) directly under core/src has a layer (LAYERS, lowest first, as
  ARCHITECTURE.md's "Core's layers" draws them); code may name its own layer and those below,
  never one above. A new top-level module must be given a layer here.
- No import circle between the children of any module of core/src or of app/src/cli: if a
  child names a sibling (through `super::`, `self::` or `crate::`), that sibling must not name it
  back, directly or around a loop.

Paths are read from the code, comments left out: `crate::`, `super::` and `self::` paths,
`use` groups in braces included. Test modules count too: a test that needs a higher layer
belongs in the higher layer's tests or in tests/.

Prints one line a breach (as `RULE: ...`, what check-rules.sh counts) and exits 1 if any.
"""

import functools
import os
import re
import sys

CORE = "core/src"
# Lowest first. Modules on one line share a layer (they must not name each other).
LAYERS = [
    ["io", "base"],
    ["set"],
    ["model"],
    ["bundle"],
    ["options"],
    ["decode"],
    ["export"],
    ["eval"],
    ["analyse"],
    ["train"],
    ["pipeline"],
    ["drivers"],
]
# Trees whose import graphs must be free of circles: (crate root, the subtree checked).
# `True`: every level of the subtree; `False`: its top level only (core's folders may have loops
# inside them, e.g. the trainer's kernel and sampler).
CIRCLE_FREE = [("core/src", "", False), ("app/src", "cli", True)]

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def module_path(root, file):
    """The module path of `file` in the crate rooted at `root` (lib.rs/main.rs: [])."""
    rel = os.path.relpath(file, root)[: -len(".rs")].split(os.sep)
    if rel[-1] in ("mod", "lib", "main") and (len(rel) > 1 or rel[-1] != "mod"):
        rel = rel[:-1]
    return rel


def code_of(file):
    """The file's text with comments blanked (line and block comments, not inside strings)."""
    text = open(file, encoding="utf-8").read()
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def use_tree(text, i):
    """Expands the path starting at text[i] (after a `crate`/`super`/`self` head) into its
    leaf paths as lists of segments: `a::{b, c::d}` gives [a, b], [a, c, d]."""
    paths, segs = [], []
    while True:
        m = IDENT.match(text, i)
        if m:
            segs.append(m.group(0))
            i = m.end()
        elif i < len(text) and text[i] == "{":
            depth, j = 1, i + 1
            while j < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            inner = text[i + 1 : j - 1]
            parts, depth, start = [], 0, 0
            for k, ch in enumerate(inner):
                depth += {"{": 1, "}": -1}.get(ch, 0)
                if ch == "," and depth == 0:
                    parts.append(inner[start:k])
                    start = k + 1
            parts.append(inner[start:])
            for part in parts:
                part = part.strip()
                if part:
                    for sub in use_tree(part, 0):
                        paths.append(segs + sub)
            return paths
        else:
            break
        if text.startswith("::", i):
            i += 2
        else:
            break
    return [segs] if segs else []


def references(code, here):
    """Absolute paths (segment lists) the code names through `crate::`, `super::`, `self::`."""
    found = []
    for m in re.finditer(r"(?<![A-Za-z0-9_:])((?:crate|self|super)(?:::super)*)::", code):
        heads = m.group(1).split("::")
        if heads[0] == "crate":
            base = []
        else:
            ups = heads.count("super")
            if ups > len(here):
                continue
            base = here[: len(here) - ups]
        for tail in use_tree(code, m.end()):
            found.append(base + [s for s in tail if s != "self"])
    return found


def crate_modules(root):
    """Every module path of the files under `root`, with each file's path."""
    files = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            if name.endswith(".rs"):
                file = os.path.join(dirpath, name)
                files[file] = tuple(module_path(root, file))
    return files


@functools.lru_cache(maxsize=None)
def edges_between_siblings(root, subtree):
    """{parent: {(child_from, child_to)}}: a module under child_from names one under child_to."""
    files = crate_modules(root)
    known = set(files.values())
    edges = {}
    for file, here in files.items():
        if subtree and (not here or here[0] != subtree):
            continue
        for path in references(code_of(file), list(here)):
            target = None
            for k in range(len(path), 0, -1):
                if tuple(path[:k]) in known:
                    target = tuple(path[:k])
                    break
            if target is None or (subtree and target[0] != subtree):
                continue
            common = 0
            while common < min(len(here), len(target)) and here[common] == target[common]:
                common += 1
            if common < len(here) and common < len(target):
                edges.setdefault(here[:common], set()).add((here[common], target[common], file))
    return edges


def cycles(pairs):
    """The strongly connected groups (of two or more) of a directed graph given as pairs."""
    graph = {}
    for a, b in pairs:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    breaches = []
    rank = {name: r for r, names in enumerate(LAYERS) for name in names}
    top = set()
    for name in os.listdir(CORE):
        if name == "lib.rs" or not (name.endswith(".rs") or os.path.isdir(os.path.join(CORE, name))):
            continue
        top.add(name[: -len(".rs")] if name.endswith(".rs") else name)
    for name in sorted(top - set(rank)):
        breaches.append(f"core/src/{name} has no layer: add it to LAYERS in scripts/check_imports.py and to ARCHITECTURE.md")
    core_edges = edges_between_siblings(CORE, "")
    seen = set()
    for child, target, file in sorted(core_edges.get((), set())):
        if child in rank and target in rank and rank[target] >= rank[child] and (child, target) not in seen:
            seen.add((child, target))
            where = "the same layer as" if rank[target] == rank[child] else "a layer above"
            breaches.append(f"core layers: {file} names crate::{target}, {where} {child} (lowest first: {' → '.join('/'.join(l) for l in LAYERS)})")
    for root, subtree, every_level in CIRCLE_FREE:
        for parent, pairs in sorted(edges_between_siblings(root, subtree).items()):
            if not every_level and len(parent) > len([subtree] if subtree else []):
                continue
            for group in cycles((a, b) for a, b, _ in pairs):
                at = os.path.join(root, *parent) if parent else root
                files = sorted({f for a, b, f in pairs if a in group and b in group})
                breaches.append(f"import circle under {at}: {' ↔ '.join(group)} ({', '.join(files)})")
    for line in breaches:
        print(f"RULE: {line}")
    if breaches:
        sys.exit(1)
    print(f"imports: {len(LAYERS)} core layers kept, no circle in core/src or app/src/cli")


if __name__ == "__main__":
    main()
