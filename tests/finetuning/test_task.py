"""Every registered task handler provides `FinetuningTask`."""

import inspect

import pytest

from keras_bert.finetuning.sentence_task import SentenceTask
from keras_bert.finetuning.task import FinetuningTask
from keras_bert.finetuning.task_registry import TASKS

pytestmark = pytest.mark.backend_independent

HANDLERS = sorted({handler for handler, _ in TASKS.values()}, key=lambda c: c.__name__)


def protocol_members():
    """The contract's members: its public names and the constructor."""
    return sorted(
        name for name in vars(FinetuningTask) if not name.startswith("_") or name == "__init__"
    )


def contract_breaches(cls):
    """What `cls` lacks of `FinetuningTask`, one line a member.

    A method must take the call the contract describes: its arguments
    without a default by position, those with one by keyword (as the
    runner and `inference` call them)."""
    breaches = []
    for name in protocol_members():
        expected = inspect.getattr_static(FinetuningTask, name)
        actual = inspect.getattr_static(cls, name, None)
        if actual is None or (name == "__init__" and actual is object.__init__):
            breaches.append(f"{name}: missing")
        elif isinstance(expected, property):
            if not isinstance(actual, property):
                breaches.append(f"{name}: not a property")
        elif not callable(actual):
            breaches.append(f"{name}: not a method")
        else:
            parameters = list(inspect.signature(expected).parameters.values())[1:]
            args = [p.name for p in parameters if p.default is p.empty]
            kwargs = {p.name: p.default for p in parameters if p.default is not p.empty}
            try:
                inspect.signature(actual).bind("self", *args, **kwargs)
            except TypeError as error:
                breaches.append(f"{name}: {error}")
    return breaches


def test_the_contract_lists_what_the_callers_use():
    assert protocol_members() == [
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
    assert contract_breaches(handler) == []


def test_a_handler_without_a_member_breaks_the_contract():
    members = {k: v for k, v in vars(SentenceTask).items() if k != "use_eval_file"}
    stripped = type("Stripped", (), members)
    assert contract_breaches(stripped) == ["use_eval_file: missing"]

    class WrongSignature(SentenceTask):
        def predict(self, model, examples, batch_size):
            return []

    class NoProperty(SentenceTask):
        num_train_examples = 3

    assert contract_breaches(WrongSignature) == [
        "predict: missing a required argument: 'batch_size'"
    ]
    assert contract_breaches(NoProperty) == ["num_train_examples: not a property"]
