#!/usr/bin/env python3
"""Pairs of source files that import each other (a module and its own submodules aside).

    scripts/mutual-imports.py [SRC_DIR]     # default: the crate's src/

Reads the `crate::`, `super::` and `self::` paths of every file (its test module left out) and
resolves each to the longest module path that is a file. Exits 1 when it finds a pair.
"""
import os
import re
import sys

PATH = re.compile(r"\b(crate|super(?:::super)*|self)::((?:[a-z_][a-z0-9_]*::)*[A-Za-z_]\w*)")
GROUP = re.compile(r"use (crate|super(?:::super)*)::((?:[a-z_][a-z0-9_]*::)*)\{([^}]*)\}")


def modules(root):
    """Each .rs file under `root` and its module path (`harness/sweep/mod.rs` -> harness, sweep)."""
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(folder, name)
                parts = os.path.relpath(path, root)[:-3].split("/")
                if parts[-1] in ("mod", "lib", "main"):
                    parts = parts[:-1]
                out[path] = tuple(parts)
    return out


def base(head, module):
    """The module a path's head (`crate`, `self`, `super::super`) names, seen from `module`."""
    if head == "crate":
        return []
    if head == "self":
        return list(module)
    return list(module)[: len(module) - head.count("super")]


def imports(path, module, known):
    """The other modules the file at `path` refers to."""
    text = re.sub(r"//[^\n]*", "", open(path, encoding="utf-8").read())
    cut = text.find("#[cfg(test)]\nmod tests {")
    if cut >= 0:
        text = text[:cut]

    def resolve(parts):
        for n in range(len(parts), 0, -1):
            if tuple(parts[:n]) in known:
                return tuple(parts[:n])
        return None

    found = set()
    for m in PATH.finditer(text):
        found.add(resolve(base(m.group(1), module) + m.group(2).split("::")))
    for m in GROUP.finditer(text):
        prefix = base(m.group(1), module) + [p for p in m.group(2).split("::") if p]
        for name in m.group(3).split(","):
            name = name.strip().split("::")[0].split(" ")[0]
            if name:
                found.add(resolve(prefix + [name]))
    found.discard(None)
    found.discard(module)
    return found


def main():
    default = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    root = sys.argv[1] if len(sys.argv) > 1 else default
    files = modules(root)
    known = set(files.values())
    edges = {module: imports(path, module, known) for path, module in files.items()}
    pairs = set()
    for a, refs in edges.items():
        for b in refs:
            nested = a == b[: len(a)] or b == a[: len(b)]
            if a in edges.get(b, ()) and not nested:
                pairs.add(tuple(sorted(["/".join(a), "/".join(b)])))
    for a, b in sorted(pairs):
        print(f"{a} <-> {b}")
    print(f"{len(pairs)} pair(s) of files import each other")
    return 1 if pairs else 0


if __name__ == "__main__":
    sys.exit(main())
