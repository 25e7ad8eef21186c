#!/usr/bin/env bash
# A deploy on a predicted matrix, and the feedback it gives: one job kind of the shipped deploy
# workload (default light) predicted from two of its library cells (default 0.5 and 2 CPUs)
# against the other library jobs of this machine kind, deployed under FIFO + Tune, its rates fed back (OUT/deploy/fed-back/, feedback.txt).
# tests/data/feedback/ keeps what a run wrote; tests/matrices/predict.rs judges it against the
# job's full sweep in the library.
#
#   scripts/deploy-predicted.sh [JOB [CPUS [OUT]]]     # e.g. light 0.5,2 target/deploy-predicted
#
# The other kinds' matrices are their library sweeps.
#
# Environment: PROFILER (default target/release/profiler), SCHEMES (default fifo+tune),
# DEPLOY_ARGS (more flags for the deploy, e.g. --no-spot-check).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
profiler=${PROFILER:-target/release/profiler}
job=${1:-light}
given=${2:-0.5,2}
out=${3:-target/deploy-predicted}
schemes=${SCHEMES:-fifo+tune}
source scripts/library-jobs.sh
kind=$("$profiler" doctor 2>/dev/null | sed -n 's/^ *kind \([^ ]*\)$/\1/p' | head -1 || true)
truth=$(ls tests/data/library/"$kind"/"$job".*.matrix.jsonl | head -1 || true)
rm -rf "$out"
mkdir -p "$out/profiles" "$out/library/$kind"
for f in tests/data/library/"$kind"/*.matrix.jsonl; do
    [[ $(basename "$f") == "$job".* ]] || cp "$f" "$out/library/$kind/"
done
# The other job kinds' matrices: their library sweeps, the freshest of this machine kind.
for spec in workloads/deploy/jobs/*.toml; do
    other=$(name_of "$spec")
    [ "$other" = "$job" ] || cp tests/data/library/"$kind"/"$other".*.matrix.jsonl "$out/profiles/"
done
# The partial matrix: the full sweep's measured cells at the given CPU levels.
python3 - "$truth" "$out/$job.partial.matrix.jsonl" "$given" <<'PY'
import json, sys
given = {float(x) for x in sys.argv[3].split(",")}
lines = open(sys.argv[1]).read().splitlines()
keep = [l for l in lines[1:] if json.loads(l)["source"] == "measured" and json.loads(l)["cpu"] in given]
open(sys.argv[2], "w").write("\n".join([lines[0]] + keep) + "\n")
PY
"$profiler" predict "$out/$job.partial.matrix.jsonl" --library "$out/library" \
    --cpu "$library_levels" -o "$out/profiles/$job.matrix.jsonl"
"$profiler" deploy --trace workloads/deploy/trace.csv --profiles "$out/profiles" \
    --library "$out/library" --compare "$schemes" --out "$out/deploy" ${DEPLOY_ARGS:-} </dev/null
cat "$out/deploy/feedback.txt"
