#!/usr/bin/env python3
"""What a CPU hog started halfway through a sweep does to its relative cells.

Runs the spec's sweep twice, back to back: once on a quiet machine, then again with a CPU hog
(one process spinning on a core, outside the profiler's cgroups) started once the second sweep
has written half as many blocks as the quiet sweep ended with, and left running to the end. The
hog is timed from the second sweep's own progress: a sweep that relaunches or measures a block
again takes twice as long as one that does not, so half the quiet sweep's wall time can fall at
its end. Prints, for the second sweep, the blocks the profiler marked drifted or disturbed (left
out) and the passes it measured in their place, and for every measured cell its relative rate
against the quiet sweep's: the hog must leave them within --bound (5%) of each other, where
blocks it touched are marked or measured again.

    scripts/hog-halfway.py --profiler target/release/profiler \
        --job workloads/input-pipeline.toml --out /tmp/hog --quiet-again

`--quiet-again` sweeps a third time, quiet, and prints how far two quiet sweeps' cells differ:
on a host that moves in spells that is the floor any two sweeps show, hog or not.

Needs root (cgroups). Run it on a machine with nothing else running.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import time


def header_blocks(out):
    """Blocks in the header `out` holds now (0 before it is written or while it is rewritten)."""
    try:
        return len(json.loads(out.read_text().split("\n", 1)[0]).get("blocks") or [])
    except (OSError, ValueError):
        return 0


def sweep(profiler, job, out, hog_at_blocks=None):
    """Sweeps `job` into `out`; with `hog_at_blocks`, starts a hog once the sweep's header holds
    that many blocks. Returns (wall seconds, header, cells)."""
    out.unlink(missing_ok=True)
    started = time.monotonic()
    proc = subprocess.Popen([profiler, "sweep", "--job", str(job), "--output", str(out)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    hog = None
    try:
        if hog_at_blocks is not None:
            while proc.poll() is None and header_blocks(out) < hog_at_blocks:
                time.sleep(0.5)
            if proc.poll() is None:
                hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
                print(f"hog started at {time.monotonic() - started:.0f} s, after "
                      f"{header_blocks(out)} blocks", flush=True)
        _, err = proc.communicate()
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"profiler sweep failed ({proc.returncode}):\n{err[-3000:]}")
    if hog_at_blocks is not None and hog is None:
        sys.exit(f"the sweep ended after {wall:.0f} s before its block {hog_at_blocks}: no hog")
    lines = [json.loads(l) for l in out.read_text().splitlines() if l.strip()]
    return wall, lines[0], lines[1:]


def relative(cells):
    """(cpu, memory level) -> relative rate of each measured cell that has one. Memory levels
    are numbered from the top (0): two sweeps size levels relative to the dataset from what
    their own first launch held, so their bytes differ."""
    levels = sorted({c["memory_bytes"] for c in cells}, reverse=True)
    return {(c["cpu"], levels.index(c["memory_bytes"])): c["relative"]
            for c in cells if c.get("source") == "measured" and c.get("relative")}


def differences(quiet, other, key, label):
    """Prints each cell's relative rate in `other` (`label` on screen, `key` in the rows)
    against `quiet`, the references left out; returns the rows and the largest relative
    difference."""
    rows, worst = [], 0.0
    for cpu, level in sorted(quiet.keys() & other.keys()):
        q, o = quiet[(cpu, level)], other[(cpu, level)]
        if q["rate"] == 1.0:
            continue  # the reference: 1 in both
        diff = o["rate"] / q["rate"] - 1.0
        worst = max(worst, abs(diff))
        rows.append({"cpu": cpu, "memory_level": level, "quiet": q, key: o,
                     "difference": diff})
        print(f"  {cpu:>4} CPU, memory level {level}: quiet {q['rate']:.3f} "
              f"[{q['ci95_low']:.3g}, {q['ci95_high']:.3g}], {label} {o['rate']:.3f} "
              f"[{o['ci95_low']:.3g}, {o['ci95_high']:.3g}] ({100 * diff:+.1f}%, "
              f"{o['blocks']} blocks)", flush=True)
    return rows, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profiler", required=True)
    ap.add_argument("--job", required=True, type=pathlib.Path)
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--bound", type=float, default=0.05,
                    help="largest relative difference allowed between the two sweeps' cells")
    ap.add_argument("--quiet-again", action="store_true",
                    help="sweep once more on the quiet machine: how far two quiet sweeps differ")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    quiet_wall, quiet_header, quiet = sweep(args.profiler, args.job, args.out / "quiet.matrix.jsonl")
    quiet_blocks = len(quiet_header.get("blocks") or [])
    print(f"quiet sweep: {quiet_wall:.0f} s, {quiet_blocks} blocks", flush=True)
    hog_wall, header, hogged = sweep(args.profiler, args.job, args.out / "hog.matrix.jsonl",
                                     hog_at_blocks=max(1, quiet_blocks // 2))
    quiet_check = (quiet_header.get("live_check") or {}).get("outcome")
    hog_check = (header.get("live_check") or {}).get("outcome")
    blocks = header.get("blocks") or []
    drifted = sum(1 for b in blocks if b.get("drifted"))
    disturbed_blocks = sum(1 for b in blocks if b.get("disturbed"))
    disturbed = sum(1 for c in hogged if (c.get("interference") or {}).get("disturbed"))
    launches = max((v["launch"] for c in hogged for v in c.get("visits") or []), default=0)
    print(f"hogged sweep: {hog_wall:.0f} s, {launches} launches, {len(blocks)} blocks, "
          f"{drifted} drifted, {disturbed_blocks} disturbed, {disturbed} cells marked disturbed",
          flush=True)
    q, h = relative(quiet), relative(hogged)
    rows, worst = differences(q, h, "hog", "with the hog")
    if not rows:
        kept = len(blocks) - sum(1 for b in blocks if b.get("drifted") or b.get("disturbed"))
        sys.exit(f"no measured cell other than the reference has a relative rate in both sweeps "
                 f"(the hogged sweep kept {kept} of its {len(blocks)} blocks)")
    verdict = "within" if worst <= args.bound else "BEYOND"
    print(f"largest difference {100 * worst:.1f}%: {verdict} {100 * args.bound:.0f}%; live "
          f"check: quiet {quiet_check}, with the hog {hog_check}", flush=True)
    floor = None
    if args.quiet_again:
        # Two quiet sweeps differ too: what any two sweeps' relative cells show on this host.
        again_wall, _, again = sweep(args.profiler, args.job, args.out / "quiet-again.matrix.jsonl")
        print(f"second quiet sweep: {again_wall:.0f} s", flush=True)
        _, floor = differences(q, relative(again), "quiet_again", "quiet again")
        print(f"two quiet sweeps: largest difference {100 * floor:.1f}%")
    (args.out / "hog.json").write_text(json.dumps({
        "quiet_wall_s": quiet_wall, "hog_wall_s": hog_wall, "blocks": len(blocks),
        "drifted_blocks": drifted, "disturbed_blocks": disturbed_blocks,
        "disturbed_cells": disturbed, "launches": launches, "cells": rows,
        "largest_difference": worst, "quiet_again_largest_difference": floor}, indent=1))
    sys.exit(0 if worst <= args.bound else 1)


if __name__ == "__main__":
    main()
