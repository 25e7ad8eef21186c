#!/usr/bin/env bash
# Builds the Python package (python/, pyo3 + maturin, one abi3 wheel for CPython 3.10+) and
# installs it into the project's test venv (scripts/python-env.sh), with what its tests need
# (python/requirements-test.txt). Prints the venv's python on the last line of stdout.
#
#   scripts/python-package.sh            # dev profile: shares the build of `cargo test`
#   PROFILE=release scripts/python-package.sh   # the wheel users install; for speed figures
#
# The wheel is left in target/wheels/. Non-interactive; everything but the python path goes to
# stderr.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=$("$root/scripts/python-env.sh" | tail -1)
venv=$(dirname "$(dirname "$python")")
requirements=$root/python/requirements-test.txt
stamp=$venv/.package-requirements.sha256
profile=${PROFILE:-dev}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_PROGRESS_BAR=off

want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "python-package: installing $requirements into $venv" >&2
    "$python" -m pip install --upgrade -r "$requirements" </dev/null >&2
    echo "$want" >"$stamp"
fi

echo "python-package: building the wheel ($profile profile)" >&2
rm -f "$root"/target/wheels/jobprofiler-*.whl
"$venv/bin/maturin" build --manifest-path "$root/python/Cargo.toml" --profile "$profile" \
    --strip --interpreter "$python" --out "$root/target/wheels" </dev/null >&2
"$python" -m pip install --force-reinstall --no-deps "$root"/target/wheels/jobprofiler-*.whl </dev/null >&2
echo "$python"
