"""The examples in examples/python run as a user runs them, and check what they claim."""

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

EXAMPLES = sorted((ROOT / "examples" / "python").glob("*.py"))


def test_there_are_examples():
    assert {p.name for p in EXAMPLES} >= {
        "custom_policy.py",
        "custom_mechanism.py",
        "matrix_analysis.py",
    }


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(example: Path):
    done = subprocess.run(
        [sys.executable, str(example)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip()
