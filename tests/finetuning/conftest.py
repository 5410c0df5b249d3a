"""Fixtures for fine-tuning tests: the tiny vocabulary and tokenizer."""

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def fixtures():
    return FIXTURES


@pytest.fixture(scope="session")
def tokenizer():
    import pipelines

    return pipelines.BertTokenizer(str(FIXTURES / "vocab.txt"))
