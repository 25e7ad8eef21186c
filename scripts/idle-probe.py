#!/usr/bin/env python3
"""What the guest can see of the host's spells: a capped job beside an idle probe on its CPUs.

Runs COMMAND (which appends {"samples", "t"} JSON lines to $PROFILER_PROGRESS_FILE, as the
progress-file protocol asks) in a cgroup v1 CPU cap and cpuset of its own. Beside it, on the
same CPUs, a probe runs a fixed loop for a short burst every 100 ms, in a cgroup of its own
marked idle (`cpu.idle`, `cpu.shares` 2) and under SCHED_IDLE, so it takes only time the job
leaves. The probe's work per second of its own CPU time is the speed the host gives those
virtual CPUs at that moment: a host that slows the guest slows both.

  duet: one run; for windows of 0.5, 1, 2 and 4 s, the job's rate and the probe's speed,
        their coefficients of variation, the correlation of their logs, the slope of the job's
        log rate on the probe's, and the spread of the job's rate left once the probe's speed
        is taken out (a control variate).
  ab:   the job alone and with the probe, alternated in adjacent runs, to see whether the
        probe changes what it watches (each pair's ratio, and their mean with its 95% interval).

  scripts/idle-probe.py --cores 0.5 --cpus 0 duet --seconds 60 -- \
      target/release/input-pipeline train --data workloads/data/input-pipeline-synth \
      --workers 2 --batch 16 --crop 112 --prefetch 1 --step-ms 10
  scripts/idle-probe.py --cores 0.5 --cpus 0 --duty 1 ab --rounds 6 -- COMMAND...

Needs root and cgroup v1 cpu and cpuset hierarchies under /sys/fs/cgroup (with `cpu.idle`,
Linux 5.15 or later).
"""
import argparse
import bisect
import json
import math
import os
import signal
import statistics as st
import subprocess
import sys
import tempfile
import time

FS = "/sys/fs/cgroup"
PERIOD_US = 100_000

PROBE = r"""
import os, sys, time
os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
out = open(sys.argv[1], "w", buffering=1)
busy = float(sys.argv[2])
n = 0
while True:
    start = time.monotonic()
    while time.monotonic() - start < busy:
        for _ in range(2000):
            n += 1
    out.write(f"{time.time()} {n} {time.thread_time()}\n")
    time.sleep(max(0.0, 0.1 - (time.monotonic() - start)))
"""


def write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


class Cgroup:
    """A cgroup v1 group in the cpu and cpuset hierarchies, removed on exit."""

    def __init__(self, name, cpus):
        self.dirs = [f"{FS}/cpu/{name}", f"{FS}/cpuset/{name}"]
        for d in self.dirs:
            os.mkdir(d)
        write(f"{FS}/cpuset/{name}/cpuset.cpus", cpus)
        with open(f"{FS}/cpuset/cpuset.mems") as f:
            write(f"{FS}/cpuset/{name}/cpuset.mems", f.read().strip())
        self.cpu = self.dirs[0]

    def enter(self):
        """For a child's preexec_fn: join both groups."""
        for d in self.dirs:
            write(f"{d}/cgroup.procs", os.getpid())

    def remove(self):
        for d in self.dirs:
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.1)


def run_once(args, command, with_probe, seconds, workdir):
    """Runs the job (and the probe) for `seconds`; returns the progress and probe files."""
    progress = os.path.join(workdir, "progress.jsonl")
    probe_out = os.path.join(workdir, "probe.txt")
    for p in (progress, probe_out):
        if os.path.exists(p):
            os.remove(p)
    job_group = Cgroup(f"idle-probe-job-{os.getpid()}", args.cpus)
    probe_group = None
    procs = []
    try:
        write(f"{job_group.cpu}/cpu.cfs_period_us", PERIOD_US)
        write(f"{job_group.cpu}/cpu.cfs_quota_us", int(args.cores * PERIOD_US))
        if with_probe:
            probe_group = Cgroup(f"idle-probe-probe-{os.getpid()}", args.cpus)
            write(f"{probe_group.cpu}/cpu.shares", 2)
            write(f"{probe_group.cpu}/cpu.idle", 1)
            probe = [args.probe] if args.probe else [sys.executable, "-c", PROBE]
            procs.append(subprocess.Popen(probe + [probe_out, str(args.duty / 1000.0)],
                                          preexec_fn=probe_group.enter))
        env = dict(os.environ, PROFILER_PROGRESS_FILE=progress)
        procs.append(subprocess.Popen(command, env=env, preexec_fn=job_group.enter,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(seconds)
    finally:
        for p in procs:
            p.send_signal(signal.SIGKILL)
            p.wait()
        job_group.remove()
        if probe_group:
            probe_group.remove()
    return progress, probe_out


def read_progress(path):
    reports = [json.loads(line) for line in open(path) if line.strip()]
    return [r["t"] for r in reports], [r["samples"] for r in reports]


def between(ts, a, b):
    i, j = bisect.bisect_left(ts, a), bisect.bisect_right(ts, b) - 1
    return (i, j) if j > i else None


def duet(args, command, workdir):
    progress, probe_out = run_once(args, command, True, args.seconds, workdir)
    jt, js = read_progress(progress)
    probe = [tuple(map(float, line.split())) for line in open(probe_out)]
    pt = [p[0] for p in probe]
    start, end = jt[0] + args.warmup, min(jt[-1], pt[-1])
    share = (probe[-1][2] - probe[0][2]) / (probe[-1][0] - probe[0][0])
    print(f"job {args.cores} cores on CPUs {args.cpus}, probe {args.duty} ms a 100 ms "
          f"(took {100 * share:.1f}% of a CPU), {end - start:.0f} s after {args.warmup} s warm-up")
    seconds = None
    print(f"{'window':>7} {'n':>4} {'job cv':>7} {'probe cv':>9} {'corr':>6} {'slope':>6} "
          f"{'left cv':>8}")
    for w in (0.5, 1.0, 2.0, 4.0):
        rates, speeds = [], []
        t = start
        while t + w <= end:
            j, p = between(jt, t, t + w), between(pt, t, t + w)
            t += w
            if not j or not p:
                continue
            (i0, i1), (k0, k1) = j, p
            cpu = probe[k1][2] - probe[k0][2]
            if cpu <= 0:
                continue
            rates.append((js[i1] - js[i0]) / (jt[i1] - jt[i0]))
            speeds.append((probe[k1][1] - probe[k0][1]) / cpu)
        if len(rates) < 4 or min(rates) <= 0:
            continue
        lx, ly = [math.log(r) for r in rates], [math.log(s) for s in speeds]
        slope = st.covariance(lx, ly) / st.variance(ly)
        my = st.mean(ly)
        left = [x - slope * (y - my) for x, y in zip(lx, ly)]
        cv = lambda xs: 100 * st.stdev(xs) / st.mean(xs)
        print(f"{w:>6}s {len(rates):>4} {cv(rates):>6.1f}% {cv(speeds):>8.1f}% "
              f"{st.correlation(lx, ly):>6.2f} {slope:>6.2f} {100 * st.stdev(left):>7.1f}%")
        if w == 1.0:
            seconds = (lx, ly)
    if seconds:
        print_lags(*seconds)


def print_lags(job, probe):
    """How long a spell lasts: the autocorrelation of the 1-s windows' log rate and log speed
    at several lags, and the spread of the difference between two windows that far apart."""
    print("lag s   job's autocorrelation   probe's   sd of the job's log-ratio between the two")
    for lag in (1, 2, 5, 10, 20, 30, 60, 120):
        if len(job) < lag + 10:
            break
        a = lambda xs: st.correlation(xs[:-lag], xs[lag:])
        diffs = [x1 - x0 for x0, x1 in zip(job[:-lag], job[lag:])]
        print(f"{lag:>5} {a(job):>23.2f} {a(probe):>9.2f} {100 * st.stdev(diffs):>10.1f}%")


def t_975(df):
    """Student's 97.5% quantile: the t where the density's integral from 0 reaches 0.475
    (Simpson's rule, then bisection)."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    density = lambda x: c * (1 + x * x / df) ** (-(df + 1) / 2)

    def area(t, n=2000):
        h = t / n
        inner = sum((4 if i % 2 else 2) * density(i * h) for i in range(1, n))
        return h / 3 * (density(0) + inner + density(t))

    low, high = 0.0, 100.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if area(mid) < 0.475 else (low, mid)
    return (low + high) / 2


def ab(args, command, workdir):
    ratios = []
    print(f"job {args.cores} cores on CPUs {args.cpus}, probe {args.duty} ms a 100 ms; "
          f"{args.seconds} s a run, rate after {args.warmup} s")
    for round_ in range(args.rounds):
        pair = {}
        for with_probe in (False, True) if round_ % 2 == 0 else (True, False):
            progress, _ = run_once(args, command, with_probe, args.seconds, workdir)
            jt, js = read_progress(progress)
            i = bisect.bisect_left(jt, jt[0] + args.warmup)
            pair[with_probe] = (js[-1] - js[i]) / (jt[-1] - jt[i])
        ratios.append(pair[True] / pair[False])
        print(f"round {round_ + 1}: alone {pair[False]:.1f}, with the probe {pair[True]:.1f} "
              f"samples/s ({100 * (ratios[-1] - 1):+.1f}%)")
    logs = [math.log(r) for r in ratios]
    m = st.mean(logs)
    half = t_975(len(logs) - 1) * st.stdev(logs) / math.sqrt(len(logs))
    print(f"with the probe / alone: {100 * (math.exp(m) - 1):+.1f}% "
          f"[{100 * (math.exp(m - half) - 1):+.1f}%, {100 * (math.exp(m + half) - 1):+.1f}%] "
          f"over {len(logs)} rounds")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", type=float, default=0.5, help="the job's CPU quota, in cores")
    parser.add_argument("--cpus", default="0", help="the job's (and the probe's) cpuset")
    parser.add_argument("--duty", type=float, default=2.0,
                        help="milliseconds the probe runs every 100 ms (100: all the time)")
    parser.add_argument("--probe", help="a probe program of one's own in place of the Python "
                        "loop, run as PROBE OUT BUSY_S: it writes `unix_time work thread_cpu_s` "
                        "to OUT after every burst of BUSY_S seconds, every 100 ms")
    parser.add_argument("--warmup", type=float, default=4.0, help="seconds left out at start")
    sub = parser.add_subparsers(dest="mode", required=True)
    d = sub.add_parser("duet", help="one run of the job beside the probe")
    d.add_argument("--seconds", type=float, default=60.0)
    a = sub.add_parser("ab", help="the job alone and with the probe, alternated")
    a.add_argument("--rounds", type=int, default=6)
    a.add_argument("--seconds", type=float, default=15.0)
    for p in (d, a):
        p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND...")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("a COMMAND after -- is needed")
    for needed in (f"{FS}/cpu/cpu.cfs_quota_us", f"{FS}/cpu/cpu.idle", f"{FS}/cpuset/cpuset.mems"):
        if not os.path.exists(needed):
            sys.exit(f"idle-probe: {needed} is missing: this needs root and cgroup v1 cpu and "
                     "cpuset hierarchies, with cpu.idle (Linux 5.15 or later)")
    with tempfile.TemporaryDirectory() as workdir:
        (duet if args.mode == "duet" else ab)(args, command, workdir)


if __name__ == "__main__":
    main()
