#!/usr/bin/env python3
"""Proptest regression files whose source file is gone: proptest reads
`proptest-regressions/<path>.txt` for `src/<path>.rs` only, so a file left behind when its
source moved is never replayed again.

    scripts/orphan-regressions.py      # exits 1 naming each orphan and where it would belong
"""
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
orphans = []
base = os.path.join(ROOT, "proptest-regressions")
for folder, _, names in os.walk(base):
    for name in names:
        if not name.endswith(".txt"):
            continue
        rel = os.path.relpath(os.path.join(folder, name), base)[: -len(".txt")]
        source = os.path.join(ROOT, "src", rel + ".rs")
        if not os.path.isfile(source):
            orphans.append(f"proptest-regressions/{rel}.txt: no src/{rel}.rs")
for o in orphans:
    print(o, file=sys.stderr)
sys.exit(1 if orphans else 0)
