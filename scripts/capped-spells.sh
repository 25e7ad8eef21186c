#!/usr/bin/env bash
# Where a capped job's spread comes from: runs a command that appends {"samples", "t"} JSON lines
# to $PROFILER_PROGRESS_FILE (as the progress-file protocol asks) in a cgroup v1 CPU cap of its
# own, and prints, second by second, its rate beside the CPU time the cgroup was charged
# (cpuacct), then the coefficient of variation of each and of the work done per CPU-second.
# Work per CPU-second that swings while the charged time holds is the host, not the cap.
#
#   scripts/capped-spells.sh QUOTA_US PERIOD_US CPUSET SECONDS COMMAND...
#   scripts/capped-spells.sh 50000 100000 0 40 python3 spin.py     # half a core on CPU 0
#
# Needs root and cgroup v1 cpu, cpuacct and cpuset hierarchies under /sys/fs/cgroup.
set -euo pipefail
quota=$1 period=$2 cpus=$3 seconds=$4
shift 4
g=capped-spells-$$
fs=/sys/fs/cgroup
progress=$(mktemp) usage=$(mktemp)
mkdir "$fs/cpu/$g" "$fs/cpuacct/$g" "$fs/cpuset/$g"
cleanup() {
    if [ -n "${job:-}" ]; then
        kill "$job" 2>/dev/null || true
        wait "$job" 2>/dev/null || true
    fi
    # A killed task leaves its cgroup a moment after it is reaped.
    for c in cpu cpuacct cpuset; do
        for _ in $(seq 50); do rmdir "$fs/$c/$g" 2>/dev/null && break; sleep 0.1; done
    done
    rm -f "$progress" "$usage"
}
trap cleanup EXIT
echo "$period" >"$fs/cpu/$g/cpu.cfs_period_us"
echo "$quota" >"$fs/cpu/$g/cpu.cfs_quota_us"
echo "$cpus" >"$fs/cpuset/$g/cpuset.cpus"
cat "$fs/cpuset/cpuset.mems" >"$fs/cpuset/$g/cpuset.mems"
(
    for c in cpu cpuacct cpuset; do echo "$BASHPID" >"$fs/$c/$g/cgroup.procs"; done
    PROFILER_PROGRESS_FILE=$progress exec "$@" >/dev/null 2>&1
) &
job=$!
end=$((SECONDS + seconds))
while [ $SECONDS -lt $end ]; do
    echo "$(date +%s.%N) $(cat "$fs/cpuacct/$g/cpuacct.usage")" >>"$usage"
    sleep 1
done
python3 - "$progress" "$usage" <<'PY'
import json, statistics as st, sys
reports = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
usage = [tuple(map(float, l.split())) for l in open(sys.argv[2])]
def samples_at(t):
    before = [r["samples"] for r in reports if r["t"] <= t]
    return before[-1] if before else 0
rows = []
for (t0, u0), (t1, u1) in zip(usage[3:], usage[4:]):  # the first 3 s are start-up
    rows.append(((samples_at(t1) - samples_at(t0)) / (t1 - t0), (u1 - u0) / 1e9 / (t1 - t0)))
for rate, cores in rows:
    print(f"{rate:8.1f} samples/s  {cores:.3f} cores")
cv = lambda xs: 100 * st.stdev(xs) / st.mean(xs)
rates, cores = [r for r, _ in rows], [c for _, c in rows]
print(f"rate {st.mean(rates):.1f} samples/s, cv {cv(rates):.1f}%; charged {st.mean(cores):.3f} "
      f"cores, cv {cv(cores):.1f}%; work per CPU-second cv {cv([r / c for r, c in rows]):.1f}%")
PY
