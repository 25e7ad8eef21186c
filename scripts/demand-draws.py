#!/usr/bin/env python3
"""How often a first sweep's best-case demand is its reruns', with and without the passes the
sweep adds where the demand is in doubt (src/matrix/doubt.rs), from a rerun-coverage run.

Draws first sweeps of three blocks from the reruns' own blocks (each rerun of
scripts/rerun-coverage.py is one relaunched pass, so one block: its 1-CPU rate over its 2-CPU
reference), reads each draw as the sweep does (the mean log-ratio; a prediction interval with
Student's quantile for the draws' spread), adds a block while the threshold (1 - eps) lies in
doubt, at most two, and counts the reruns whose demand (1 CPU where their ratio reaches the
threshold, else 2) is the draw's.

    scripts/demand-draws.py /tmp/coverage/coverage.json
"""
import argparse
import json
import math
import random
import statistics

# Student's 97.5% quantile by degrees of freedom, for the few blocks a draw has.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571}
DOUBT_QUARTILE = 0.674


def interval(logs):
    """Mean log-ratio and the half-width of where another sweep's mean of as many lands."""
    k = len(logs)
    return statistics.fmean(logs), T975[k - 1] * statistics.stdev(logs) * math.sqrt(2 / k)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("coverage", help="coverage.json of scripts/rerun-coverage.py")
    ap.add_argument("--draws", type=int, default=20000)
    ap.add_argument("--eps", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    threshold = math.log(1 - args.eps)
    for job, v in json.load(open(args.coverage))["jobs"].items():
        logs = [math.log(r["1.0"]["default_relative"]["rate"]) for r in v["reruns"]
                if (r.get("1.0") or {}).get("default_relative")]
        if len(logs) < 3:
            continue
        reruns = [x >= threshold for x in logs]
        plain = doubt = extra = 0.0
        for _ in range(args.draws):
            blocks = rng.sample(logs, 3)
            chose = interval(blocks)[0] >= threshold
            plain += sum(r == chose for r in reruns) / len(reruns)
            added = 0
            while added < 2:
                m, half = interval(blocks)
                if abs(m - threshold) >= DOUBT_QUARTILE * half / 1.96:
                    break
                blocks.append(rng.choice(logs))
                added += 1
            chose = interval(blocks)[0] >= threshold
            doubt += sum(r == chose for r in reruns) / len(reruns)
            extra += added
        n = args.draws
        print(f"{job}: {len(logs)} reruns (median relative {math.exp(statistics.median(logs)):.3f}, "
              f"{sum(reruns)} reaching the threshold); demand the reruns': {plain / n:.3f} without "
              f"the passes in doubt, {doubt / n:.3f} with them ({extra / n:.2f} passes a sweep)")


if __name__ == "__main__":
    main()
