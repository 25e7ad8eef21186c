"""Replay speed with Python plug-ins, side by side with the all-Rust replay in one run.

    PROFILE=release scripts/python-package.sh
    target/python-frameworks/bin/python python/bench/replay_speed.py

Prints the best of three wall times of each case and the ratios docs/PYTHON.md quotes.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "python"))

import jobprofiler as jp  # noqa: E402
from custom_mechanism import Greedy  # noqa: E402
from custom_policy import Fifo, Las  # noqa: E402


def best_of(runs, **kwargs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = jp.replay(**kwargs)
        times.append(time.perf_counter() - start)
    return min(times), result


DEFAULT = {"window": (4000, 4999)}
SYNTHETIC_10K = {"jobs": 10000}
cases = [
    ("default scenario, fifo + tune (all Rust)", dict(DEFAULT, policy="fifo", mechanism="tune")),
    ("default scenario, Python FIFO + tune", dict(DEFAULT, policy=Fifo(), mechanism="tune")),
    ("default scenario, las + tune (all Rust)", dict(DEFAULT, policy="las", mechanism="tune")),
    ("default scenario, Python LAS + tune", dict(DEFAULT, policy=Las(), mechanism="tune")),
    ("10,000 jobs, fifo + greedy (all Rust)", dict(SYNTHETIC_10K, policy="fifo", mechanism="greedy")),
    ("10,000 jobs, Python FIFO + Python greedy", dict(SYNTHETIC_10K, policy=Fifo(), mechanism=Greedy())),
]
timed = {}
for name, kwargs in cases:
    seconds, result = best_of(3, **kwargs)
    timed[name] = seconds
    print(f"{name}: {seconds:.3f} s ({result.jobs.height} jobs)")
print()
print(f"Python FIFO / Rust: {timed[cases[1][0]] / timed[cases[0][0]]:.2f}x")
print(f"Python LAS / Rust: {timed[cases[3][0]] / timed[cases[2][0]]:.2f}x")
print(f"Python policy + mechanism / Rust, 10,000 jobs: {timed[cases[5][0]] / timed[cases[4][0]]:.1f}x")
