#!/usr/bin/env bash
# Writes what a change of structure must leave byte for byte the same: replays (Synergy's
# semantics and the exact engine, a grid, an elastic run), every export format and
# `show --demand`, from the shipped matrices and traces, into DIR.
# A move is checked by running it before and after and comparing: diff -r BEFORE AFTER.
# Usage: scripts/behaviour-snapshot.sh DIR [PROFILER]   (PROFILER: target/release/profiler)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/behaviour-snapshot.sh DIR [PROFILER]}
bin=${2:-target/release/profiler}
rm -rf "$out" && mkdir -p "$out"
static=workloads/traces/synergy/deploy_static_100job.csv
dynamic=workloads/traces/synergy/deploy_dynamic_100job.csv

"$bin" replay --cluster synergy-deploy --trace "$static" --semantics synergy --first-round-s 1 \
    --compare fifo+proportional,fifo+greedy,fifo+tune >"$out/replay-synergy.txt"
"$bin" replay --cluster synergy-deploy --trace "$dynamic" \
    --compare srtf+proportional,srtf+tune,las+tune,drf+greedy,tetris+tune --out "$out/replay-exact" \
    >"$out/replay-exact.txt"
"$bin" replay --window 4000..4499 --compare fifo+proportional,ftf+tune >"$out/replay-window.txt"
"$bin" replay --elastic all --elastic-trace ones:workloads/traces/ones/trace_1.csv --first 20 \
    --seeds 1 >"$out/replay-elastic.txt"

# What a run times (decision milliseconds, wall seconds) is not behaviour: the tables lose those
# columns, the CSV tables their decision and wall columns, and the Parquet copies of the CSVs go.
for f in "$out"/replay-*.txt; do
    awk '/dec ms|decide ms/ { timed = ($0 ~ /wall s/) ? 2 : 1 } timed && NF > 6 { NF -= timed } { print }' \
        "$f" >"$f.tmp" && mv "$f.tmp" "$f"
done
for f in "$out"/replay-exact/*.csv; do
    awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /decision|wall_s/) drop[i] = 1 }
        { line = ""; for (i = 1; i <= NF; i++) if (!(i in drop)) line = line (line == "" ? "" : OFS) $i; print line }' \
        "$f" >"$f.tmp" && mv "$f.tmp" "$f"
done
rm -f "$out"/replay-exact/*.parquet

m=matrices/examples/input-pipeline.validated.matrix.jsonl
zoo=matrices/zoo/resnet18.matrix.jsonl
for format in csv parquet json; do
    "$bin" export "$m" "$zoo" --format "$format" -o "$out/export.$format"
done
for format in gavel kubernetes; do
    "$bin" export "$zoo" --format "$format" --cell proportional -o "$out/export.$format"
done
for format in synergy blox slurm; do
    "$bin" export "$m" "$zoo" --format "$format" -o "$out/export-$format/"
done
# Synergy's profile.json needs the dataset's size, which the zoo's matrices do not record.
"$bin" export "$m" --format synergy-profile -o "$out/export-synergy-profile/"
for f in "$m" matrices/examples/input-pipeline.measured.matrix.jsonl matrices/zoo/*.matrix.jsonl; do
    echo "== $f"
    "$bin" show "$f" --demand
done >"$out/show-demand.txt"
echo "behaviour snapshot in $out"
