"""Shared set-up: tests run from the repository root (traces and matrices are read from
there), the examples are importable, and the CLI binary is found for side-by-side checks."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "python"))


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="session")
def profiler_bin() -> Path:
    """The CLI: $PROFILER_BIN, else the debug build `cargo test` leaves."""
    path = Path(os.environ.get("PROFILER_BIN", ROOT / "target" / "debug" / "profiler"))
    if not path.exists():
        pytest.fail(f"{path}: build the CLI first (cargo build) or set PROFILER_BIN")
    return path
