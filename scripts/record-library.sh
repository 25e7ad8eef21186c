#!/usr/bin/env bash
# Records the library `profiler predict` leans on for this machine kind: each job below swept at
# seven CPU levels from 0.25 to 2 cores into tests/data/library/<machine kind>/. Resumable: a job
# already in the kind's folder is skipped. Each sweep's output goes to target/library/<name>.log.
#
#   scripts/record-library.sh            # every job below
#   scripts/record-library.sh light      # the jobs whose spec path contains a word
#
# Environment: PROFILER (default target/release/profiler).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
profiler=${PROFILER:-target/release/profiler}
levels=0.25,0.5,0.75,1,1.25,1.5,2
specs=(
    workloads/input-pipeline.toml
    workloads/deploy/jobs/light.toml
    workloads/deploy/jobs/decode.toml
    workloads/deploy/jobs/cache.toml
    workloads/library/crop160.toml
    workloads/library/accel5.toml
    workloads/library/one-worker.toml
    workloads/frameworks/tqdm-loop.toml
)
[ -x "$profiler" ] || { echo "record-library: $profiler is missing: cargo build --release" >&2; exit 1; }
mkdir -p target/library tests/data/library
name_of() { sed -n 's/^name = "\(.*\)"/\1/p' "$1" | head -1; }
for spec in "${specs[@]}"; do
    [ -n "${1:-}" ] && [[ "$spec" != *"$1"* ]] && continue
    name=$(name_of "$spec")
    if compgen -G "tests/data/library/*/$name.*.matrix.jsonl" >/dev/null; then
        echo "record-library: $name is in the library" >&2
        continue
    fi
    out=target/library/$name.$(date +%s).matrix.jsonl
    echo "record-library: $name ($spec) at $levels CPUs -> $out" >&2
    start=$SECONDS
    if "$profiler" sweep --job "$spec" --cpu "$levels" -o "$out" --library tests/data/library \
        </dev/null >"target/library/$name.log" 2>&1; then
        echo "record-library: $name done in $((SECONDS - start)) s" >&2
    else
        echo "record-library: $name failed after $((SECONDS - start)) s; see target/library/$name.log" >&2
    fi
done
