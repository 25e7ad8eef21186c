#!/usr/bin/env bash
# The fast test tier: needs no root, no Slurm and installs nothing. The library's unit tests,
# the matrices' and the replay's test binaries, and the Python package's suite where its venv
# is already there (scripts/python-env.sh made it; the package is rebuilt from this tree).
# Tests that need root, a cgroup controller or Slurm skip with a message. The full tier,
# scripts/test.sh, runs everything. Extra arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --lib --test matrices --test replay "$@"

venv=target/python-frameworks
if [ -x "$venv/bin/maturin" ]; then
    cargo build --bins
    python=$(scripts/python-package.sh | tail -1)
    PROFILER_BIN=target/debug/profiler "$python" -m pytest -q python/tests
else
    echo "test-fast: no Python venv under $venv (scripts/python-env.sh makes it): the Python" \
        "package's tests are left out" >&2
fi
