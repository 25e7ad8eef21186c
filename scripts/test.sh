#!/usr/bin/env bash
# The project's test command: installs what the tests need where it is missing, then runs every
# test. Idempotent: on a machine that has it all, it goes straight to `cargo test`.
#   - Chromium (the report's tests open its pages headless, tests/matrices/report.rs)
#   - Lua 5.1 (the Slurm export test runs the generated job_submit.lua under Slurm's plugin Lua)
#   - Slurm's daemons, client and munge (the Slurm tests bring up a local single-node cluster,
#     scripts/local-slurm.sh)
#   - a Python venv with current PyTorch, torchvision, tqdm, Transformers, Keras, Lightning from PyPI
#     (scripts/python-env.sh; the real-framework tests run their training scripts in it)
#   - the Python package (python/) built and installed into that venv with pytest
#     (scripts/python-package.sh); its tests and the examples in examples/python run first
# Run as root, so the real-cgroup tests run instead of skipping. Extra arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v lua5.1 >/dev/null || missing+=(lua5.1)
command -v slurmctld >/dev/null || missing+=(slurmctld slurmd slurm-client munge slurm-wlm-basic-plugins)
[[ -x /usr/bin/chromium ]] || missing+=(chromium)
if ((${#missing[@]})); then
    if [[ $(id -u) -ne 0 ]]; then
        echo "scripts/test.sh: missing Debian packages ${missing[*]}; run as root to install them" >&2
    else
        echo "scripts/test.sh: installing ${missing[*]}" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    fi
fi

# The sweeps the tests run keep their machine kind's reading speed apart from the machine's own.
export PROFILER_STATE_DIR="$PWD/target/tmp/state"

# The venv is cached under target/; the tests find it there.
scripts/python-env.sh >/dev/null

# The Python package's suite compares with the CLI, and its deploy example runs the
# input-pipeline job, so both binaries are built first.
cargo build --bins
python=$(scripts/python-package.sh | tail -1)
PROFILER_BIN=target/debug/profiler "$python" -m pytest -q python/tests

cargo test "$@"
