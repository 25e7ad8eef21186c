#!/usr/bin/env bash
# Sets up, once, the Python virtual environment the real-framework tests use
# (tests/harness/frameworks.rs): current releases from PyPI of what
# workloads/frameworks/requirements.txt lists, in target/python-frameworks/ (git ignores target/).
#
#   scripts/python-env.sh            # prints the venv's python on the last line of stdout
#
# Idempotent and cached: a stamp file holds the hash of the requirement list (and of the base
# Python's version); when it matches, nothing is installed and the script returns at once.
# Everything but the python path goes to stderr. Non-interactive (no stdin needed, CI=true fine).
# Environment: PYTHON (base interpreter, default python3), PYTHON_FRAMEWORKS_VENV (venv
# directory, default target/python-frameworks under the repository).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${PYTHON_FRAMEWORKS_VENV:-$root/target/python-frameworks}
requirements=$root/workloads/frameworks/requirements.txt
base_python=${PYTHON:-python3}
stamp=$venv/.requirements.sha256

want=$({ cat "$requirements"; "$base_python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)
cached() { [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; }

if ! cached; then
    mkdir -p "$(dirname "$venv")"
    # One set-up at a time (test binaries and CI steps may call this together); the second
    # waits, then finds the stamp.
    exec 9>"$venv.lock"
    flock 9
    if ! cached; then
        start=$SECONDS
        echo "python-env: setting up $venv from $requirements (torch is large; minutes)" >&2
        rm -f "$stamp"
        [ -x "$venv/bin/python" ] || "$base_python" -m venv "$venv" >&2
        # No wheel cache: the venv is the cache, and torch's CUDA wheels would take ~4 GB twice.
        export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_PROGRESS_BAR=off PIP_NO_CACHE_DIR=1
        "$venv/bin/python" -m pip install --upgrade pip </dev/null >&2
        "$venv/bin/python" -m pip install --upgrade -r "$requirements" </dev/null >&2
        # A broken install fails here rather than in a test.
        KERAS_BACKEND=torch "$venv/bin/python" -c 'import torch, torchvision, tqdm, transformers, accelerate, keras, lightning, rich, datasets, webdataset, lmdb, litdata, h5py, zarr, torchdata.nodes' >&2
        echo "$want" >"$stamp"
        echo "python-env: ready in $((SECONDS - start)) s" >&2
    fi
fi
echo "$venv/bin/python"
