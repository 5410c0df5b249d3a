"""The fine-tuning tests' fixtures: a tiny backbone, the task files and
one fine-tuned run per task family, the teachers here."""

import pytest

from tests.finetuning.conftest import FIXTURES, checkpoint, fine_tuned, fixtures  # noqa: F401


@pytest.fixture(scope="session")
def masked_lm(tmp_path_factory):
    """A 1-layer `BertPretrainer` with the fixture vocabulary, as .keras."""
    from keras_bert.models import BertBackbone, BertPretrainer

    backbone = BertBackbone(
        vocabulary_size=174, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32
    )
    backbone.vocabulary = (FIXTURES / "vocab.txt").read_text().splitlines()
    path = tmp_path_factory.mktemp("mlm") / "pretrainer.keras"
    BertPretrainer(backbone).save(path)
    return str(path)
