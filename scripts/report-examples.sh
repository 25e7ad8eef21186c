#!/usr/bin/env bash
# The README's example pages, its picture and the committed charts, from the committed matrices:
#   plots/report/input-pipeline.validated.html  the validated input-pipeline matrix
#   plots/report/zoo/                           Synergy's model zoo: an index and a page a model
#   plots/report/screen.png                     the first screen of the first page (Chromium)
#   plots/*.png                                 the charts plots/README.md lists
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/profiler
[[ -x $bin ]] || cargo build --release
rm -rf plots/report
"$bin" report matrices/examples/input-pipeline.validated.matrix.jsonl -o plots/report
"$bin" report matrices/zoo -o plots/report/zoo
browser=$(command -v chromium || true)
if [[ -z $browser ]]; then
    echo "report-examples.sh: no Chromium for the screenshot (apt-get install chromium)" >&2
    exit 1
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$profile" --window-size=1280,900 \
    --screenshot=plots/report/screen.png "file://$PWD/plots/report/input-pipeline.validated.html" \
    2>/dev/null
"$bin" plot matrices/zoo/*.matrix.jsonl --normalize proportional >/dev/null
"$bin" plot matrices/examples/*.matrix.jsonl >/dev/null
echo "wrote plots/report/ and the charts in plots/"
