"""Fixtures for fine-tuning tests: the tiny vocabulary, its tokenizer and a
tiny backbone saved with it."""

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


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory):
    """A 1-layer, 16-wide backbone with the fixture vocabulary, as .keras."""
    from keras_bert.models import BertBackbone

    backbone = BertBackbone(
        vocabulary_size=174,
        num_layers=1,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=384,
    )
    backbone.vocabulary = (FIXTURES / "vocab.txt").read_text().splitlines()
    path = tmp_path_factory.mktemp("ckpt") / "tiny.keras"
    backbone.save(path)
    return str(path)
