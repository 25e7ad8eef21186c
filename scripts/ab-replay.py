#!/usr/bin/env python3
"""Two profiler binaries' replay speed side by side, in one run: the benchmark's scenarios
(benches/replay.rs) replayed by BEFORE and AFTER in turn, ROUNDS times each, in a fresh
random order every round (the host's slow spells then fall on both alike). Prints each
scenario's median wall time per binary and AFTER's over BEFORE's, with the range of that
ratio over the rounds.

    scripts/ab-replay.py --before /tmp/profiler-before --after target/release/profiler --rounds 5

Run it on a quiet machine; each replay uses one core per scheme.
"""
import argparse
import random
import statistics
import subprocess
import time

SCENARIOS = {
    # Synergy's default: 128 GPUs, 9 jobs/hour, metrics over jobs 4000..4999.
    "default fifo+tune": ["--window", "4000..4999", "--mechanism", "tune"],
    "default fifo+proportional": ["--window", "4000..4999"],
    # 100,000 jobs on 1,024 GPUs (128 servers), load scaled with the cluster.
    "100k jobs, 1,024 GPUs, fifo+tune": [
        "--cluster", "synergy-128", "--jobs", "100000", "--jobs-per-hour", "72",
        "--mechanism", "tune",
    ],
}


def timed(binary, args):
    started = time.perf_counter()
    subprocess.run([binary, "replay", *args], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", help="run only the scenarios whose name holds this")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    for name, scenario in SCENARIOS.items():
        if args.only and args.only not in name:
            continue
        times = {"before": [], "after": []}
        ratios = []
        for _ in range(args.rounds):
            order = ["before", "after"]
            rng.shuffle(order)
            got = {which: timed(getattr(args, which), scenario) for which in order}
            for which, t in got.items():
                times[which].append(t)
            ratios.append(got["after"] / got["before"])
        b, a = statistics.median(times["before"]), statistics.median(times["after"])
        print(
            f"{name}: before {b:.3f} s, after {a:.3f} s (medians of {args.rounds}); "
            f"after/before {statistics.median(ratios):.3f} "
            f"[{min(ratios):.3f}, {max(ratios):.3f}]"
        )


if __name__ == "__main__":
    main()
