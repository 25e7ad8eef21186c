#!/usr/bin/env bash
# Judges `sweep --predict` live on this machine kind's library: each library job swept in full at
# the library's seven CPU levels, then at once with --predict against the other jobs (the job held
# out), both at the same precision. Each pair's files go to tests/data/library-eval/<kind>/ and a
# row to walls.csv there; tests/matrices/predict.rs judges them. Resumable: a job with a row is
# skipped. Run it on a quiet machine, after scripts/record-library.sh.
#
#   scripts/evaluate-library.sh            # every library job
#   scripts/evaluate-library.sh light      # the jobs whose spec path contains a word
#
# Environment: PROFILER (default target/release/profiler), PRECISION (default 0.1).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
profiler=${PROFILER:-target/release/profiler}
precision=${PRECISION:-0.1}
source scripts/library-jobs.sh
[ -x "$profiler" ] || { echo "evaluate-library: $profiler is missing: cargo build --release" >&2; exit 1; }
kind=$("$profiler" doctor 2>/dev/null | sed -n 's/^ *kind \([^ ]*\)$/\1/p' | head -1 || true)
[ -n "$kind" ] || { echo "evaluate-library: profiler doctor named no machine kind" >&2; exit 1; }
library=tests/data/library/$kind
out=tests/data/library-eval/$kind
work=target/library-eval
mkdir -p "$out" "$work"
walls=$out/walls.csv
[ -f "$walls" ] || echo "job,precision,full_wall_s,full_launches,predict_wall_s,predict_launches,measured_levels" >"$walls"
# "(N launches, S s)" from a sweep's last line.
launches_of() { sed -n 's/.*(\([0-9]*\) launches, \([0-9.]*\) s)$/\1/p' "$1" | tail -1; }
wall_of() { sed -n 's/.*(\([0-9]*\) launches, \([0-9.]*\) s)$/\2/p' "$1" | tail -1; }
for spec in "${library_specs[@]}"; do
    [ -n "${1:-}" ] && [[ "$spec" != *"$1"* ]] && continue
    name=$(name_of "$spec")
    if grep -q "^$name," "$walls"; then
        echo "evaluate-library: $name is judged already" >&2
        continue
    fi
    # The library without this job.
    held=$work/without-$name/$kind
    rm -rf "$work/without-$name"
    mkdir -p "$held"
    for f in "$library"/*.matrix.jsonl; do
        [[ $(basename "$f") == "$name".* ]] || cp "$f" "$held/"
    done
    full=$out/$name.full.matrix.jsonl
    predicted=$out/$name.predict.matrix.jsonl
    rm -f "$full" "$predicted"
    rm -rf "${full%.jsonl}.logs" "${predicted%.jsonl}.logs"
    echo "evaluate-library: $name: full sweep at $library_levels CPUs" >&2
    "$profiler" sweep --job "$spec" --cpu "$library_levels" --precision "$precision" -o "$full" \
        </dev/null >"$work/$name.full.log" 2>&1 || { echo "evaluate-library: $name: full sweep failed; see $work/$name.full.log" >&2; continue; }
    echo "evaluate-library: $name: sweep --predict against the $(ls "$held" | wc -l) other jobs" >&2
    "$profiler" sweep --job "$spec" --cpu "$library_levels" --precision "$precision" --predict \
        --library "$work/without-$name" -o "$predicted" \
        </dev/null >"$work/$name.predict.log" 2>&1 || { echo "evaluate-library: $name: predict sweep failed; see $work/$name.predict.log" >&2; continue; }
    measured=$(grep -c '"source":"measured"' "$predicted" || true)
    rm -rf "${full%.jsonl}.logs" "${predicted%.jsonl}.logs"
    echo "$name,$precision,$(wall_of "$work/$name.full.log"),$(launches_of "$work/$name.full.log"),$(wall_of "$work/$name.predict.log"),$(launches_of "$work/$name.predict.log"),$measured" >>"$walls"
    tail -1 "$walls" >&2
done
