#!/usr/bin/env bash
# How long headless Chromium takes to load and render the index of a 1,000-matrix report (a
# fleet): the zoo's twelve matrices copied under 1,000 job names, `profiler report` over them,
# then Chromium's --dump-dom of the index against that of an empty page, five runs each,
# alternated; the difference of the medians is the index's own cost.
#   scripts/bench-report-index.sh [N]      (N matrices, default 1000; PROFILER: the binary,
#                                           target/release/profiler by default)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
bin=${PROFILER:-target/release/profiler}
[[ -x $bin ]] || cargo build --release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/fleet"
zoo=(matrices/zoo/*.matrix.jsonl)
for ((i = 0; i < n; i++)); do
    src=${zoo[i % ${#zoo[@]}]}
    # The first line is the header: a job name of its own for each copy.
    sed "1s/\"name\":\"\\([^\"]*\\)\"/\"name\":\"\\1-$i\"/" "$src" >"$work/fleet/job-$i.matrix.jsonl"
done
start=$(date +%s.%N)
"$bin" report "$work/fleet" -o "$work/report" >/dev/null
end=$(date +%s.%N)
echo "profiler report of $n matrices: $(echo "$end - $start" | bc) s"
echo '<!DOCTYPE html><html><body></body></html>' >"$work/empty.html"
load() {
    local t0 t1
    t0=$(date +%s.%N)
    chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/profile" \
        --dump-dom "file://$1" >/dev/null 2>&1
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}
index=() empty=()
for _ in 1 2 3 4 5; do
    index+=("$(load "$work/report/index.html")")
    empty+=("$(load "$work/empty.html")")
done
median() { printf '%s\n' "$@" | sort -n | sed -n 3p; }
echo "index of $n rows: $(median "${index[@]}") s median; an empty page: $(median "${empty[@]}") s"
echo "index size: $(du -h "$work/report/index.html" | cut -f1)"
