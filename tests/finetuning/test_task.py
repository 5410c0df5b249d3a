"""Every registered task handler provides `FinetuningTask`, and every side
table a task's handler or head class keys answers each task."""

import pytest

from keras_bert.conversion.task_head import HEADS
from keras_bert.distillation.teacher import REFUSED_HANDLERS, TEACHER_HANDLERS
from keras_bert.finetuning.config import load_finetune_config
from keras_bert.finetuning.prediction_formats import PredictionFormat
from keras_bert.finetuning.sentence_task import SentenceTask
from keras_bert.finetuning.task import FinetuningTask
from keras_bert.finetuning.task_registry import TASKS
from keras_bert.paths import DATA
from keras_bert.serving.task_adapters import ADAPTERS
from tests import contracts

pytestmark = pytest.mark.backend_independent

VOCAB = str(DATA / "vocab" / "bert_uncased_vocab.txt")
HANDLERS = sorted(set(TASKS.values()), key=lambda c: c.__name__)


def test_the_contract_lists_what_the_callers_use():
    assert contracts.protocol_members(FinetuningTask) == [
        "__init__",
        "build_model",
        "compile_args",
        "evaluate",
        "model_class",
        "num_train_examples",
        "predict",
        "prediction_format",
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


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_task_reaches_prediction_and_serving_through_its_handler(name, tokenizer):
    # Issue 48: a task's output writer and serving adapter were side doors
    # (a table keyed by task name, one keyed by model class) that the
    # contract did not see.
    handler = TASKS[name](name, load_finetune_config(name), None, tokenizer)
    assert isinstance(handler.prediction_format, PredictionFormat)
    assert handler.prediction_format.extension.startswith(".")
    served = [c.__name__ for c in handler.model_class.__mro__ if c.__name__ in ADAPTERS]
    assert served, f"{name}: no serving adapter for {handler.model_class.__name__}"


@pytest.fixture(scope="module")
def tokenizer():
    from pipelines import BertTokenizer

    return BertTokenizer(VOCAB, lower_case=True)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_task_is_answered_by_conversion_and_distillation(name, tokenizer):
    # Issue 81 item 4: two tables keyed by class name that nothing checked;
    # a new task fails here until each says what it does with it.
    handler = TASKS[name](name, load_finetune_config(name), None, tokenizer)
    heads = [c.__name__ for c in handler.model_class.__mro__ if c.__name__ in HEADS]
    assert heads, f"{name}: conversion.task_head.HEADS has no head for {handler.model_class}"
    teaches = isinstance(handler, TEACHER_HANDLERS)
    refused = type(handler).__name__ in REFUSED_HANDLERS
    assert teaches != refused, (
        f"{name}: {type(handler).__name__} must be a distillation teacher "
        "(teacher.TEACHER_HANDLERS) or refused with a reason (teacher.REFUSED_HANDLERS)"
    )
