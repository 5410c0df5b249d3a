"""`make test`'s split of the suite by Keras backend (tests/conftest.py):
`--backend-dependent-only` leaves out the tests marked
`backend_independent`, whole modules or single tests, and keeps the rest."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_independent

ROOT = Path(__file__).resolve().parents[1]
FILES = [
    "tests/runs/test_run_folder.py",  # Marked as a module.
    "tests/serving/test_serving_export.py",  # Some tests marked.
]


def test_backend_dependent_only_leaves_out_the_marked_tests():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "--backend-dependent-only",
            *FILES,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    kept = {line for line in result.stdout.splitlines() if "::" in line}
    assert not [test for test in kept if test.startswith("tests/runs/test_run_folder.py")]
    assert "tests/serving/test_serving_export.py::test_find_model_file" not in kept
    assert "tests/serving/test_serving_export.py::test_version_directory_layout" in kept
