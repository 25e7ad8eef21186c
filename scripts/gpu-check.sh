#!/usr/bin/env bash
# The GPU check of a server: does a cell hold when the job runs again?
#
# Sweeps workloads/resnet18.toml (ResNet-18 with the ImageNet input pipeline, the typical
# CPU-sensitive GPU job) twice, at 2 CPUs and at every CPU the machine has, each sweep with up to
# LAUNCHES launches a point, and checks that every measured cell is steady and that each sweep's
# rates lie inside the other's intervals. Run as root from a copy of the repository holding the
# release binary (a GPU server needs no Rust: build it elsewhere and copy it):
#
#   sudo scripts/gpu-check.sh [OUT_DIR]        # default matrices/gpu-check
#
# Environment: PROFILER (default target/release/profiler), LAUNCHES (2), WARMUP_S (20),
# MAX_S (60), CPUS (TOML list items, default "2, <nproc>"), RUNS (sweeps, 2), DOCTOR (0 skips
# `profiler doctor --no-sweep`). Writes the doctor's checks, the matrices, their `show --cells` and the comparison (check.txt) to OUT_DIR as it goes, so an
# interrupted check keeps what it measured. Exits 1 when a cell is unsteady or outside the other
# sweep's interval.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/matrices/gpu-check}" && cd "${1:-$root/matrices/gpu-check}" && pwd)
profiler=${PROFILER:-$root/target/release/profiler}
python=${PYTHON:-python3}
levels=${CPUS:-"2, $(nproc)"}
spec=$out/resnet18-gpu-check.toml

# The spec as it ships, cut to the two CPU levels and the top memory level, with a shorter
# warm-up and measuring cap; paths made absolute so the copy can live beside its results.
sed -e "s|^name = .*|name = \"resnet18-gpu-check\"\nworking_dir = \"$root/workloads\"|" \
    -e "s|^cpu = .*|cpu = [$levels]|" \
    -e "s|^memory_pct_of_dataset = .*|memory_pct_of_dataset = [100]|" \
    -e "s|^path = \"data/|path = \"$root/workloads/data/|" \
    -e "s|^warmup_s = .*|warmup_s = ${WARMUP_S:-20}|" \
    -e "s|^max_s = .*|max_s = ${MAX_S:-60}|" \
    "$root/workloads/resnet18.toml" >"$spec"

nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
if [ "${DOCTOR:-1}" != 0 ]; then
    "$profiler" doctor --no-sweep 2>&1 | tee "$out/doctor.txt" || true
fi

for run in $(seq 1 "${RUNS:-2}"); do
    started=$(date +%s)
    "$profiler" sweep --job "$spec" --output "$out/sweep-$run.matrix.jsonl" \
        --launches "${LAUNCHES:-2}" </dev/null 2>&1 | tee "$out/sweep-$run.log"
    echo "sweep $run: $(($(date +%s) - started)) s" | tee -a "$out/walltime.txt"
    "$profiler" show --cells "$out/sweep-$run.matrix.jsonl" | tee "$out/sweep-$run.cells.txt"
done

[ "${RUNS:-2}" -ge 2 ] || exit 0
"$python" - "$out/sweep-1.matrix.jsonl" "$out/sweep-2.matrix.jsonl" <<'EOF' | tee "$out/check.txt"
import json, sys

def cells(path):
    lines = [json.loads(l) for l in open(path) if l.strip()]
    return {c["cpu"]: c for c in lines[1:] if c.get("source") != "modelled" and c.get("throughput")}

a, b = cells(sys.argv[1]), cells(sys.argv[2])
failed = False
for cpu in sorted(set(a) | set(b)):
    if cpu not in a or cpu not in b:
        print(f"{cpu} CPUs: measured in one sweep only"); failed = True; continue
    line = []
    for name, mine, other in (("1", a[cpu], b[cpu]), ("2", b[cpu], a[cpu])):
        t, o = mine["throughput"], other["throughput"]
        inside = o["ci95_low"] <= t["samples_per_s"] <= o["ci95_high"]
        steady = not (mine.get("note") or "").startswith("unsteady")
        failed |= not inside or not steady
        line.append(f"sweep {name} {t['samples_per_s']:.1f} [{t['ci95_low']:.1f}, {t['ci95_high']:.1f}]"
                    f" {len(t.get('launches') or [0])} launches"
                    f" {'steady' if steady else 'UNSTEADY'}, {'inside' if inside else 'OUTSIDE'} the other's")
    print(f"{cpu} CPUs: " + "; ".join(line))
print("every cell steady and inside the other sweep's interval" if not failed else "check failed")
sys.exit(1 if failed else 0)
EOF
