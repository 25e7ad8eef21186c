#!/usr/bin/env bash
# Records real sweeps into the estimator's corpus (tests/data/sweeps/<machine kind>/), one at a
# time, until the corpus holds COUNT sweeps of the job. Resumable: run it again and it records
# only what is missing. Each sweep is written under target/corpus/ first and moved into the
# corpus only when it finished, so a sweep stopped halfway never enters it.
#
#   scripts/record-corpus.sh input-pipeline 20     # README command 1's sweep
#   scripts/record-corpus.sh tqdm-loop 5           # a relaunching PyTorch loop (needs scripts/python-env.sh)
#
# Environment: PROFILER (default target/release/profiler), PROFILER_COMMIT (the commit it was
# built from, default HEAD; tests/data/sweeps/recorded.csv lists it with each sweep's wall), EXTRA_ARGS (more sweep flags, split on
# spaces). Each sweep's output goes to target/corpus/<name>.<unix seconds>.log.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
job=${1:?job: input-pipeline or tqdm-loop}
count=${2:?how many sweeps the corpus should hold}
profiler=${PROFILER:-target/release/profiler}
commit=${PROFILER_COMMIT:-$(git rev-parse --short HEAD)}

case "$job" in
    input-pipeline) spec=workloads/input-pipeline.toml ;;
    tqdm-loop) spec=workloads/frameworks/tqdm-loop.toml ;;
    *) echo "record-corpus: unknown job '$job' (input-pipeline or tqdm-loop)" >&2; exit 2 ;;
esac
[ -x "$profiler" ] || { echo "record-corpus: $profiler is missing: cargo build --release" >&2; exit 1; }

mkdir -p target/corpus tests/data/sweeps
# The corpus keeps a folder per machine kind, named by the kind the sweep's header records.
kind_of() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["machine"]["kind"])' "$1"; }
# COUNT is the corpus's total for the job, over every machine kind.
have() { find tests/data/sweeps -name "$job.*.matrix.jsonl" | wc -l; }
while [ "$(have)" -lt "$count" ]; do
    stamp=$(date +%s)
    out=target/corpus/$job.$stamp.matrix.jsonl
    log=target/corpus/$job.$stamp.log
    echo "record-corpus: $job sweep $(($(have) + 1)) of $count -> $out" >&2
    start=$SECONDS
    # shellcheck disable=SC2086
    if "$profiler" sweep --job "$spec" -o "$out" ${EXTRA_ARGS:-} </dev/null >"$log" 2>&1; then
        corpus=tests/data/sweeps/$(kind_of "$out")
        mkdir -p "$corpus"
        mv "$out" "$corpus/"
        # Which binary recorded it, and the sweep's whole wall time (what a user waited).
        echo "$corpus/$(basename "$out"),$((SECONDS - start)),$commit" >>tests/data/sweeps/recorded.csv
        echo "record-corpus: done in $((SECONDS - start)) s" >&2
    else
        echo "record-corpus: the sweep failed after $((SECONDS - start)) s; see $log" >&2
        exit 1
    fi
done
echo "record-corpus: tests/data/sweeps holds $(have) $job sweeps" >&2
