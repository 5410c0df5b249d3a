"""Every registered task handler provides `FinetuningTask`."""

import pytest

from keras_bert.finetuning.sentence_task import SentenceTask
from keras_bert.finetuning.task import FinetuningTask
from keras_bert.finetuning.task_registry import TASKS
from tests import contracts

pytestmark = pytest.mark.backend_independent

HANDLERS = sorted({handler for handler, _ in TASKS.values()}, key=lambda c: c.__name__)


def test_the_contract_lists_what_the_callers_use():
    assert contracts.protocol_members(FinetuningTask) == [
        "__init__",
        "build_model",
        "compile_args",
        "evaluate",
        "model_class",
        "num_train_examples",
        "predict",
        "read_unlabelled",
        "train_dataset",
        "use_eval_file",
        "use_model",
    ]


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda c: c.__name__)
def test_registered_handler_provides_the_contract(handler):
    assert contracts.contract_breaches(FinetuningTask, handler) == []


def test_a_handler_without_a_member_breaks_the_contract():
    members = {k: v for k, v in vars(SentenceTask).items() if k != "use_eval_file"}
    stripped = type("Stripped", (), members)
    assert contracts.contract_breaches(FinetuningTask, stripped) == ["use_eval_file: missing"]

    class WrongSignature(SentenceTask):
        def predict(self, model, examples, batch_size):
            return []

    class NoProperty(SentenceTask):
        num_train_examples = 3

    assert contracts.contract_breaches(FinetuningTask, WrongSignature) == [
        "predict: missing a required argument: 'batch_size'"
    ]
    assert contracts.contract_breaches(FinetuningTask, NoProperty) == [
        "num_train_examples: not a property"
    ]
