#!/usr/bin/env python3
"""How often one spec's sweeps land inside each other's relative intervals.

Sweeps the spec SWEEPS times as a user runs it (its own design: launches, rounds, the live
check), back to back, then checks every measured cell other than the reference: a later
sweep's relative rate inside the first sweep's 95% interval (the cases the interval promises),
and every sweep against every other (more cases from the same sweeps, not independent ones).
Cells are matched by CPU level and the rank of their memory level (a sweep sizes its memory
levels from the job's own footprint, which moves a little between sweeps). Prints each sweep's
wall time, launches and median half-width, the coverage, and writes it all to OUT/coverage.json.

    scripts/sweep-coverage.py --profiler target/release/profiler \\
        --job workloads/input-pipeline.toml --sweeps 6 --out /tmp/sweep-coverage

Needs root (cgroups). The sweeps share the machine with nothing else: run it on a quiet one.
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time


def sweep(profiler, job, out):
    started = time.monotonic()
    proc = subprocess.run([profiler, "sweep", "--job", str(job), "--output", str(out)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"{job}: profiler sweep failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    lines = [l for l in out.read_text().splitlines() if l.strip()]
    header, cells = json.loads(lines[0]), [json.loads(l) for l in lines[1:]]
    levels = sorted({c["memory_bytes"] for c in cells}, reverse=True)
    relative = {}
    for c in cells:
        r = c.get("relative")
        if c.get("source") == "measured" and r and r["ci95_high"] > r["ci95_low"]:
            key = (c["cpu"], levels.index(c["memory_bytes"]), json.dumps(c.get("params") or {}))
            relative[key] = r
    launches = max((v["launch"] for c in cells for v in c.get("visits") or []), default=None)
    return {"wall_s": round(wall, 1), "launches": launches, "relative": relative}


def covered(first, later):
    """(cases, inside) of `later`'s relative rates against `first`'s intervals."""
    cases = inside = 0
    for key, r in later["relative"].items():
        f = first["relative"].get(key)
        if f is None:
            continue
        cases += 1
        inside += f["ci95_low"] <= r["rate"] <= f["ci95_high"]
    return cases, inside


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profiler", required=True)
    ap.add_argument("--job", required=True, type=pathlib.Path)
    ap.add_argument("--sweeps", type=int, default=6)
    ap.add_argument("--out", required=True, type=pathlib.Path)
    args = ap.parse_args()
    if args.sweeps < 2:
        sys.exit("--sweeps: at least 2 (a first sweep and a rerun)")
    args.out.mkdir(parents=True, exist_ok=True)
    sweeps = []
    for i in range(args.sweeps):
        s = sweep(args.profiler, args.job, args.out / f"sweep{i}.matrix.jsonl")
        halves = {k: (r["ci95_high"] - r["ci95_low"]) / 2 / r["rate"]
                  for k, r in s["relative"].items()}
        s["median_half_width"] = statistics.median(halves.values()) if halves else None
        sweeps.append(s)
        print(f"sweep {i}: {s['wall_s']:.1f} s, {s['launches']} launches, relative "
              + ", ".join(f"{k[0]} CPU mem#{k[1]} {r['rate']:.3f} ±{100 * halves[k]:.1f}%"
                          for k, r in sorted(s["relative"].items())), flush=True)
    first = [covered(sweeps[0], s) for s in sweeps[1:]]
    pairs = [covered(a, b) for i, a in enumerate(sweeps) for j, b in enumerate(sweeps) if i != j]
    report = {
        "job": str(args.job),
        "sweeps": [{k: v for k, v in s.items() if k != "relative"}
                   | {"relative": {f"{k[0]} CPU, memory level {k[1]}, {k[2]}": r
                                   for k, r in s["relative"].items()}} for s in sweeps],
    }
    for name, results in (("against_first", first), ("pairwise", pairs)):
        cases, inside = sum(c for c, _ in results), sum(i for _, i in results)
        report[name] = {"cases": cases, "inside": inside,
                        "coverage": inside / cases if cases else None}
        print(f"{name.replace('_', ' ')}: {inside}/{cases} relative rates inside "
              f"({100 * inside / max(cases, 1):.0f}%)")
    walls = [s["wall_s"] for s in sweeps]
    widths = [s["median_half_width"] for s in sweeps if s["median_half_width"] is not None]
    print(f"wall: median {statistics.median(walls):.1f} s ({min(walls):.1f}-{max(walls):.1f}); "
          f"median half-width: median {100 * statistics.median(widths):.1f}% "
          f"({100 * min(widths):.1f}-{100 * max(widths):.1f}%)")
    (args.out / "coverage.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
