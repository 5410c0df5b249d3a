"""BENCHMARKS.md stays readable whole (its rule, at its top): one current row
per target; a superseded run moves to a JSON file in `bench/results/` that
names the command, machine and date behind its numbers, and History points at
it. The scripts' own output in the folders below (`bench/results/train/`, …)
keeps the format its script writes."""

import json
import pathlib

import pytest

pytestmark = pytest.mark.backend_independent

REPO = pathlib.Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "BENCHMARKS.md"
LIMIT = 30_000  # bytes, as the project's own check counts them (UTF-8: "±" is two)
MOVED_RUNS = sorted((REPO / "bench" / "results").glob("*.json"))


def test_benchmarks_md_stays_under_its_limit():
    size = len(BENCHMARKS.read_bytes())
    assert size <= LIMIT, (
        f"BENCHMARKS.md is {size} bytes, over {LIMIT}: move superseded runs to "
        "bench/results/*.json with a History line each (the rule at its top)"
    )


def test_there_are_moved_runs():
    assert MOVED_RUNS, "no bench/results/*.json"


@pytest.mark.parametrize("path", MOVED_RUNS, ids=lambda path: path.name)
def test_a_moved_run_names_its_command_machine_and_date(path):
    run = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(run, dict), f"{path.name}: a JSON object expected"
    missing = sorted({"command", "machine", "date"} - run.keys())
    assert not missing, f"{path.name}: no {missing}"


@pytest.mark.parametrize("path", MOVED_RUNS, ids=lambda path: path.name)
def test_history_points_at_a_moved_run(path):
    assert f"bench/results/{path.name}" in BENCHMARKS.read_text(encoding="utf-8")
