"""The distillation recipe's defaults, where they differ from fine-tuning's."""

import pytest

from keras_bert.distillation.config import load_distill_config
from keras_bert.errors import ConfigError
from keras_bert.finetuning.config import load_finetune_config

pytestmark = pytest.mark.backend_independent


def test_the_students_batches_are_grouped_by_length_unless_set_otherwise():
    # Issue 79 item 3: padding was most of a student step's work.
    assert load_distill_config("sst2").training.group_by_length
    assert not load_finetune_config("sst2").training.group_by_length
    off = load_distill_config("stsb", overrides=["training.group_by_length=false"])
    assert not off.training.group_by_length


def test_the_labelling_limit_may_be_infinite_and_nothing_else_may():
    # `.inf` is the documented "no limit" (the bench's); the generic check
    # that every number is finite refused it.
    config = load_distill_config(
        "sst2", overrides=["distillation.transfer.max_labelling_hours=.inf"]
    )
    assert config.distillation.transfer.max_labelling_hours == float("inf")
    for key in ["optimizer.learning_rate", "distillation.transfer.mask_probability"]:
        with pytest.raises(ConfigError, match=key):
            load_distill_config("sst2", overrides=[f"{key}=.inf"])
