"""`keras_bert.finetuning`'s public names are the objects where they live."""

import pytest

import keras_bert.finetuning as finetuning
from keras_bert.finetuning import config, inference, runner, task, task_registry

pytestmark = pytest.mark.backend_independent


def test_public_api():
    assert finetuning.__all__ == [
        "FinetuningTask",
        "TASKS",
        "load_finetune_config",
        "run_evaluation",
        "run_finetune",
        "run_prediction",
    ]
    assert finetuning.run_finetune is runner.run_finetune
    assert finetuning.run_evaluation is inference.run_evaluation
    assert finetuning.run_prediction is inference.run_prediction
    assert finetuning.load_finetune_config is config.load_finetune_config
    assert finetuning.TASKS is task_registry.TASKS
    assert finetuning.FinetuningTask is task.FinetuningTask
    from keras_bert.finetuning import FinetuningTask, run_finetune  # noqa: F401


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="run_training"):
        _ = finetuning.run_training
