#!/usr/bin/env bash
# Synergy's default scenario replayed on the zoo and on the zoo predicted model by model: each
# model cut to its cells at the given CPU levels (all memory levels) and predicted from the other
# eleven (`profiler predict --no-zoo --library`). Prints both replays' tables; the mean JCTs are
# what docs/findings/predict.md compares.
#
#   scripts/predict-zoo-replay.sh [CPUS]       # default 3,24
#
# Environment: PROFILER (default target/release/profiler), OUT (default target/predicted-zoo).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
profiler=${PROFILER:-target/release/profiler}
given=${1:-3,24}
out=${OUT:-target/predicted-zoo}/$given
rm -rf "$out"
mkdir -p "$out/partial" "$out/predicted"
for f in matrices/zoo/*.matrix.jsonl; do
    model=$(basename "$f" .matrix.jsonl)
    lib=$out/library-$model
    mkdir -p "$lib"
    for g in matrices/zoo/*.matrix.jsonl; do [ "$g" = "$f" ] || cp "$g" "$lib/"; done
    python3 - "$f" "$out/partial/$model.matrix.jsonl" "$given" <<'PY'
import json, sys
given = {float(x) for x in sys.argv[3].split(",")}
lines = open(sys.argv[1]).read().splitlines()
keep = []
for line in lines[1:]:
    cell = json.loads(line)
    if cell["cpu"] in given:
        cell["source"] = "measured"
        keep.append(json.dumps(cell))
open(sys.argv[2], "w").write("\n".join([lines[0]] + keep) + "\n")
PY
    "$profiler" predict "$out/partial/$model.matrix.jsonl" --no-zoo --library "$lib" \
        -o "$out/predicted/$model.matrix.jsonl" >/dev/null
    rm -rf "$lib"
done
schemes=fifo+proportional,fifo+tune,srtf+proportional,srtf+tune
echo "== the zoo"
"$profiler" replay --window 4000..4999 --profiles matrices/zoo --compare "$schemes" --draws 0
echo "== the zoo predicted from $given CPUs"
"$profiler" replay --window 4000..4999 --profiles "$out/predicted" --compare "$schemes" --draws 0
