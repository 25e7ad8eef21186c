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
source scripts/library-jobs.sh
[ -x "$profiler" ] || { echo "record-library: $profiler is missing: cargo build --release" >&2; exit 1; }
mkdir -p target/library tests/data/library
for spec in "${library_specs[@]}"; do
    [ -n "${1:-}" ] && [[ "$spec" != *"$1"* ]] && continue
    name=$(name_of "$spec")
    if compgen -G "tests/data/library/*/$name.*.matrix.jsonl" >/dev/null; then
        echo "record-library: $name is in the library" >&2
        continue
    fi
    out=target/library/$name.$(date +%s).matrix.jsonl
    echo "record-library: $name ($spec) at $library_levels CPUs -> $out" >&2
    start=$SECONDS
    if "$profiler" sweep --job "$spec" --cpu "$library_levels" -o "$out" --library tests/data/library \
        </dev/null >"target/library/$name.log" 2>&1; then
        echo "record-library: $name done in $((SECONDS - start)) s" >&2
    else
        echo "record-library: $name failed after $((SECONDS - start)) s; see target/library/$name.log" >&2
    fi
done
