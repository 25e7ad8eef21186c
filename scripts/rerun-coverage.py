#!/usr/bin/env python3
"""How often a rerun lands inside a sweep's interval.

For each real script in workloads/frameworks/: one sweep as a user runs it (the spec's
defaults, `measure.launches` as given), then RERUNS relaunched sweeps of one launch per point
(`--mode relaunch --launches 1`: the job started again on each allocation). A case is one
rerun at one CPU level; it is covered when the rerun's rate lies inside the first sweep's
interval for that level. The same for relative rates (each cell over the reference of its own
block, the reference itself left out): a rerun's relative rate inside the first sweep's
relative interval; and whether the rerun's best-case demand (`profiler export --format json`:
CPUs and GB per GPU) is the first sweep's. Prints per-job and overall coverage, the median
relative half-width of the first sweep's intervals, and each sweep's wall time, and writes them
to OUT/coverage.json.
A rerun the profiler marked disturbed (its interference check found the machine busy) is listed
and counted apart: the promise is about the job on its allocation, and the cell says it was not.

    scripts/rerun-coverage.py --profiler target/release/profiler \
        --python "$(scripts/python-env.sh | tail -1)" --reruns 7 --out /tmp/coverage

With --compare-single, each job also gets a first sweep of one launch per point
(`--launches 1`, as every sweep was measured before the spread between launches was), and
the same reruns are checked against its intervals too.

Needs root (cgroups). The sweeps share the machine with nothing else: run it on a quiet one.
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "workloads" / "frameworks"

# name, batch, arguments after the python, [throughput] lines (as the framework tests read them)
JOBS = [
    ("tqdm-loop", 8, ["tqdm_loop.py", "--batch-size", "8"], 'format = "tqdm"'),
    ("plain-torch", 32, ["plain_torch.py", "--batch-size", "32", "--print-every", "1"],
     "regex = 'samples (?P<samples>\\d+)'"),
    ("lightning-rich", 8, ["lightning_fit.py", "--batch-size", "8"], 'format = "lightning"'),
]

SPEC = """schema_version = 1
name = "{name}"
command = [{command}]
gpus = 0
batch_size_per_gpu = {batch}
[env]
TRUTH_FILE = "/dev/null"
[throughput]
protocol = "log"
{throughput}
[measure]
warmup_s = 4
settle_s = 2
window_s = 1.5
steady_windows = 4
steady_cv = 0.08
max_s = 14
startup_timeout_s = 150
stop_grace_s = 5
[sweep]
cpu = [{cpus}]
"""


def sweep(profiler, spec, out, extra):
    started = time.monotonic()
    proc = subprocess.run(
        [profiler, "sweep", "--job", str(spec), "--output", str(out), *extra],
        stdin=subprocess.DEVNULL, capture_output=True, text=True)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"{spec}: profiler sweep failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    lines = out.read_text().splitlines()
    header, cells = json.loads(lines[0]), [json.loads(l) for l in lines[1:] if l.strip()]
    rates = {c["cpu"]: dict(c["throughput"], relative=c.get("relative"),
                            disturbed=(c.get("interference") or {}).get("disturbed", False))
             for c in cells if c.get("throughput")}
    return header, rates, wall, demand(profiler, out)


def demand(profiler, matrix):
    """The best-case demand `profiler export --format json` gives: (CPUs, GB) per GPU."""
    proc = subprocess.run([profiler, "export", str(matrix), "--format", "json", "-o", "-"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{matrix}: profiler export failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    d = json.loads(proc.stdout)[0].get("demand") or {}
    return d.get("cpus_per_gpu"), d.get("mem_gb_per_gpu")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profiler", required=True)
    ap.add_argument("--python", required=True, help="the test venv's python")
    ap.add_argument("--reruns", type=int, default=7)
    ap.add_argument("--cpus", default="1, 2", help="CPU levels, TOML list items")
    ap.add_argument("--compare-single", action="store_true",
                    help="also check the reruns against a first sweep of one launch per point")
    ap.add_argument("--jobs", default=",".join(j[0] for j in JOBS))
    ap.add_argument("--out", required=True, type=pathlib.Path)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    wanted = args.jobs.split(",")
    report = {"jobs": {}}
    cases, covered, halves, disturbed = {}, {}, {}, {}
    # Relative rates (each cell over its block's reference, the reference itself left out) and
    # the best-case demand, per kind of first sweep.
    rel_cases, rel_covered, rel_halves, same_demand = {}, {}, {}, {}
    for name, batch, argv, throughput in (j for j in JOBS if j[0] in wanted):
        command = ", ".join(json.dumps(a) for a in
                            [args.python, str(SCRIPTS / argv[0]), *argv[1:]])
        spec = args.out / f"{name}.toml"
        spec.write_text(SPEC.format(name=name, batch=batch, command=command,
                                    throughput=throughput, cpus=args.cpus))
        firsts = {"default": []}
        if args.compare_single:
            firsts["single"] = ["--launches", "1"]
        job = {"reruns": []}
        for kind, extra in firsts.items():
            header, rates, wall, first_demand = sweep(
                args.profiler, spec, args.out / f"{name}.first-{kind}.matrix.jsonl", extra)
            cells = {}
            for cpu, t in rates.items():
                half = (t["ci95_high"] - t["ci95_low"]) / 2 / t["samples_per_s"]
                halves.setdefault(kind, []).append(half)
                cells[cpu] = {"rate": t["samples_per_s"], "low": t["ci95_low"],
                              "high": t["ci95_high"], "relative_half_width": round(half, 4),
                              "launches": len(t.get("launches", [])) or 1,
                              "relative": t["relative"]}
                r = t["relative"]
                if r and r["rate"] != 1.0:
                    rel_halves.setdefault(kind, []).append(
                        (r["ci95_high"] - r["ci95_low"]) / 2 / r["rate"])
            job[kind] = {"wall_s": round(wall, 1), "launch_spread": header.get("launch_spread"),
                         "cells": cells, "demand": first_demand}
            print(f"{name} first sweep ({kind}): {wall:.0f} s; " + ", ".join(
                f"{c} CPU {v['rate']:.1f} [{v['low']:.1f}, {v['high']:.1f}] "
                f"({v['launches']} launches)" for c, v in cells.items()), flush=True)
        for i in range(args.reruns):
            _, rerun, wall, rerun_demand = sweep(
                args.profiler, spec, args.out / f"{name}.rerun{i}.matrix.jsonl",
                ["--mode", "relaunch", "--launches", "1"])
            row = {"wall_s": round(wall, 1), "demand": rerun_demand}
            for kind in firsts:
                same = rerun_demand == job[kind]["demand"]
                same_demand.setdefault(kind, []).append(same)
            for cpu, t in rerun.items():
                row[cpu] = {"rate": t["samples_per_s"], "disturbed": t["disturbed"]}
                for kind in firsts:
                    f = job[kind]["cells"].get(cpu)
                    if f is None:
                        continue
                    inside = f["low"] <= t["samples_per_s"] <= f["high"]
                    row[cpu][kind] = inside
                    fr, rr = f["relative"], t["relative"]
                    if fr and rr and fr["rate"] != 1.0 and not t["disturbed"]:
                        rel_inside = fr["ci95_low"] <= rr["rate"] <= fr["ci95_high"]
                        row[cpu][f"{kind}_relative"] = {"rate": rr["rate"], "inside": rel_inside}
                        rel_cases[kind] = rel_cases.get(kind, 0) + 1
                        rel_covered[kind] = rel_covered.get(kind, 0) + rel_inside
                    if t["disturbed"]:
                        disturbed[kind] = disturbed.get(kind, 0) + 1
                        continue
                    cases[kind] = cases.get(kind, 0) + 1
                    covered[kind] = covered.get(kind, 0) + inside
            job["reruns"].append(row)
            print(f"{name} rerun {i}: " + ", ".join(
                f"{c} CPU {r['rate']:.1f}{' (disturbed)' if r['disturbed'] else ''} " + " ".join(
                    f"{k}:{'in' if r[k] else 'OUT'}"
                    + (f" relative {r[k + '_relative']['rate']:.3f}:"
                       f"{'in' if r[k + '_relative']['inside'] else 'OUT'}"
                       if k + "_relative" in r else "")
                    for k in firsts if k in r)
                for c, r in row.items() if c not in ("wall_s", "demand")), flush=True)
        report["jobs"][name] = job
    for kind in cases:
        report[kind] = {
            "cases": cases[kind], "covered": covered[kind],
            "disturbed_reruns": disturbed.get(kind, 0),
            "coverage": covered[kind] / cases[kind],
            "median_relative_half_width": statistics.median(halves[kind]),
        }
        print(f"{kind} first sweep: coverage {covered[kind]}/{cases[kind]} = "
              f"{100 * covered[kind] / cases[kind]:.0f}% ({disturbed.get(kind, 0)} disturbed "
              f"reruns apart); median interval half-width "
              f"{100 * statistics.median(halves[kind]):.1f}%")
    for kind in rel_cases:
        same = same_demand.get(kind, [])
        report[kind].update({
            "relative_cases": rel_cases[kind], "relative_covered": rel_covered[kind],
            "relative_coverage": rel_covered[kind] / rel_cases[kind],
            "median_relative_rate_half_width": statistics.median(rel_halves.get(kind, [0.0])),
            "same_demand": sum(same), "reruns": len(same),
        })
        print(f"{kind} first sweep, relative rates: coverage {rel_covered[kind]}/"
              f"{rel_cases[kind]} = {100 * rel_covered[kind] / rel_cases[kind]:.0f}%; median "
              f"half-width {100 * statistics.median(rel_halves.get(kind, [0.0])):.1f}%; "
              f"best-case demand the same in {sum(same)} of {len(same)} reruns")
    (args.out / "coverage.json").write_text(json.dumps(report, indent=1))

if __name__ == "__main__":
    main()
