"""The fine-tuning tests' fixtures: a tiny backbone, the task files and
one fine-tuned run per task family, the teachers here."""

import pytest

from tests.finetuning.conftest import (  # noqa: F401
    FIXTURES,
    checkpoint,
    fine_tuned,
    fixtures,
    tiny_backbone,
)


@pytest.fixture(scope="session")
def masked_lm(tmp_path_factory):
    """A `BertPretrainer` on `tiny_backbone`, as .keras."""
    from keras_bert.models import BertPretrainer

    path = tmp_path_factory.mktemp("mlm") / "pretrainer.keras"
    BertPretrainer(tiny_backbone(max_sequence_length=512)).save(path)
    return str(path)
