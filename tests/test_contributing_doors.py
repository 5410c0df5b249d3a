"""CONTRIBUTING's doors name every list a change of their kind joins
(issue 81 item 4). A file of the package or the docs that names every
member of a kind (every command; every fine-tuning head class and task
handler class) is such a list: a new member belongs there too, so the
door's row in CONTRIBUTING.md must name the file. Tests that walk the
members are left out: they fail on their own until a new member is
answered."""

import re

import pytest

from keras_bert.finetuning.config import load_finetune_config
from keras_bert.finetuning.task_registry import TASKS
from tests.test_doc_references import COMMANDS, REPO

# Where a list of members may stand: the package, its pipelines, the docs.
PLACES = ("keras_bert/**/*.py", "pipelines/**/*.py", "docs/*.md", "README.md")


def _door(title):
    """The text of CONTRIBUTING.md's "Where a change goes" row `title`."""
    rows = re.findall(
        rf"^\| {re.escape(title)} \|(.*)$", (REPO / "CONTRIBUTING.md").read_text(), re.M
    )
    assert rows, f"CONTRIBUTING.md: no row `| {title} |`"
    return rows[0]


def _lists_of(words, pattern):
    """The places (repository-relative) that name every one of `words`."""
    found = []
    for path in sorted({p for pattern in PLACES for p in REPO.glob(pattern)}):
        text = path.read_text()
        if all(re.search(pattern.format(re.escape(w)), text) for w in words):
            found.append(path.relative_to(REPO))
    return found


def _cited(path, row):
    """Whether `row` names `path`: whole, from inside `keras_bert/`, or the
    README by name."""
    names = {str(path), str(path).removeprefix("keras_bert/")}
    if path.name == "README.md":
        names.add("README")
    return any(name in row for name in names)


def _task_classes():
    """`(head classes, handler classes)` of every registered task."""
    from pipelines import BertTokenizer

    tokenizer = BertTokenizer(
        str(REPO / "data" / "vocab" / "bert_uncased_vocab.txt"), lower_case=True
    )
    heads, handlers = set(), set()
    for name in TASKS:
        handler = TASKS[name](name, load_finetune_config(name), None, tokenizer)
        heads.add(handler.model_class.__name__)
        handlers.add(type(handler).__name__)
    return sorted(heads), sorted(handlers)


@pytest.mark.backend_independent
def test_the_command_door_names_every_list_of_commands():
    row = _door("a new command")
    lists = _lists_of(COMMANDS, r"keras_bert\.{0}\b|`{0}`")
    assert lists, "no list of every command found: the check finds nothing to check"
    missing = [str(path) for path in lists if not _cited(path, row)]
    assert not missing, f"CONTRIBUTING.md, `a new command`: does not name {missing}"


@pytest.mark.backend_independent
def test_the_task_door_names_every_list_of_heads_and_handlers():
    row = _door("a fine-tuning task")
    heads, handlers = _task_classes()
    lists = _lists_of(heads, r"\b{0}\b") + _lists_of(handlers, r"\b{0}\b")
    assert lists, "no list of every head or handler found: the check finds nothing to check"
    missing = sorted({str(path) for path in lists if not _cited(path, row)})
    assert not missing, f"CONTRIBUTING.md, `a fine-tuning task`: does not name {missing}"
