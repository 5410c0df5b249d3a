"""A number measured on a machine lives in BENCHMARKS.md only
(CONTRIBUTING.md, "Numbers"): code, YAML and requirements state the rule it supports and
point at the section, because copies go stale. This catches the plain
cases, speed ratios, throughputs and wall times, not every wording."""

import pathlib
import re

import pytest

pytestmark = pytest.mark.backend_independent

REPO = pathlib.Path(__file__).resolve().parents[1]
SCANNED = [
    "keras_bert/**/*.py",
    "pipelines/**/*.py",
    "configs/**/*.yaml",
    "requirements*.txt",
    "Makefile",
]
MEASURED = re.compile(
    r"\d(\.\d+)?x (faster|slower)\b"  # "1.8x faster"
    r"|\d(\.\d+)?x (JAX|TensorFlow|PyTorch|Hugging Face)\b"  # "2x JAX"
    r"|\d(\.\d+)?% (faster|slower)\b"  # "12% slower"
    r"|\d%? ?(seq|sequences|tokens)/s\b"  # "+20-28% seq/s"
    r"|\d+ ?min(utes)? on\b"  # "25 minutes on 2 CPU cores"
    r"|\d+ min \d+ s\b"  # "8 min 52 s"
    r"|\d ?CPU-(second|minute|hour)s?\b"  # "about 2 CPU-minutes"
    r"|\d(\.\d+)? ?[MG]B/s\b"
)  # "120 MB/s"


def test_no_measured_number_outside_benchmarks_md():
    found = []
    for pattern in SCANNED:
        for path in sorted(REPO.glob(pattern)):
            lines = path.read_text(encoding="utf-8").splitlines()
            for number, line in enumerate(lines, 1):
                if MEASURED.search(line):
                    found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not found, (
        "Measured numbers belong in BENCHMARKS.md; state the rule and link "
        "the section instead:\n" + "\n".join(found)
    )


def test_the_patterns_catch_what_they_name():
    for text in (
        "XLA trains BERT 1.8x faster",
        "TensorFlow, 2x JAX",
        "bfloat16 measured +20-28% seq/s",
        "-10% at Tiny, 12% slower",
        "~25 minutes on 2 CPU cores",
        "8 min 52 s for make pretrain",
        "about 2 CPU-minutes",
        "reads 120 MB/s",
    ):
        assert MEASURED.search(text), text
    for text in (
        'f"{rate:.0f} seq/s"',
        "80% [MASK], 10% random",
        "learning rate warmup over the first 10,000 steps",
        "3.2x larger at t=1",
        "seconds, not minutes",
    ):
        assert not MEASURED.search(text), text
