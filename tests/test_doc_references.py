"""Docs that cannot drift (CONTRIBUTING.md, "Tests": docs are checked like code):
every relative link and its anchor, every `keras_bert.*` / `pipelines.*`
name, every repository path in backticks, and every flag of a `python -m
keras_bert.X` line in the Markdown files resolve; names and paths in YAML
comments and docstrings too. A rename then fails here, not for a reader."""

import argparse
import importlib
import os
import pathlib
import re

import pytest

pytestmark = pytest.mark.backend_independent

REPO = pathlib.Path(__file__).resolve().parents[1]
MARKDOWN = sorted(
    p for p in REPO.rglob("*.md") if not any(part.startswith(".") for part in p.parts)
)
SOURCES = sorted(
    [*REPO.glob("keras_bert/**/*.py"), *REPO.glob("pipelines/**/*.py"), *REPO.glob("bench/*.py")]
    + [*REPO.glob("configs/**/*.yaml")]
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
NAME = re.compile(r"`((?:keras_bert|pipelines)(?:\.[A-Za-z_]\w*)+)")
PATH = re.compile(r"`((?:keras_bert|pipelines|configs|tests|bench|docs|data|notebooks)/[\w./*-]+)`")
COMMAND = re.compile(r"python -m keras_bert\.(\w+)((?:[^\n`]|\\\n)*)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z_-]*)")


def _relative(path):
    return str(path.relative_to(REPO))


def _anchors(path):
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to
    hyphens."""
    headings = re.findall(r"^#+\s+(.+)$", path.read_text(), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def _resolves(name):
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def _path_problem(text_path):
    text_path = text_path.rstrip(".")
    if "*" in text_path:
        return None if list(REPO.glob(text_path)) else "matches nothing"
    return None if (REPO / text_path).exists() else "does not exist"


@pytest.mark.parametrize("doc", MARKDOWN, ids=_relative)
def test_links_and_anchors_resolve(doc):
    problems = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file) if file else doc
        if not path.exists():
            problems.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            problems.append(f"{target}: no such heading in {_relative(path)}")
    assert not problems, f"{_relative(doc)}: {problems}"


@pytest.mark.parametrize("source", MARKDOWN + SOURCES, ids=_relative)
def test_names_and_paths_resolve(source):
    text = source.read_text()
    if source.suffix == ".yaml":  # Its comments only.
        text = "\n".join(line.partition("#")[2] for line in text.splitlines())
    problems = [
        f"`{n}` does not resolve" for n in sorted(set(NAME.findall(text))) if not _resolves(n)
    ]
    for text_path in sorted(set(PATH.findall(text))):
        problem = _path_problem(text_path)
        if problem:
            problems.append(f"`{text_path}` {problem}")
    assert not problems, f"{_relative(source)}: {problems}"


class _Parsed(Exception):
    def __init__(self, parser):
        super().__init__()
        self.parser = parser


COMMANDS = ("pretrain", "finetune", "evaluate", "predict", "data", "vocab", "convert", "export")


def _parser(command, monkeypatch):
    """`python -m keras_bert.<command>`'s parser, caught as the command
    parses its arguments."""

    def catch(parser, *args, **kwargs):
        raise _Parsed(parser)

    # Some commands set the backend variable when imported; keep ours.
    monkeypatch.setenv("KERAS_BACKEND", os.environ.get("KERAS_BACKEND", "tensorflow"))
    module = importlib.import_module(f"keras_bert.{command}")
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", catch)
    entry = getattr(module, "parse_args", None) or module.main
    with pytest.raises(_Parsed) as parsed:
        entry([])
    return parsed.value.parser


def test_every_documented_flag_is_in_its_commands_parser(monkeypatch):
    documented = {}
    for doc in MARKDOWN:
        for command, rest in COMMAND.findall(doc.read_text()):
            for flag in FLAG.findall(rest.replace("\\\n", " ")):
                documented.setdefault(command, {}).setdefault(flag, _relative(doc))
    assert documented, "no `python -m keras_bert.X` line found"
    problems = []
    for command, flags in sorted(documented.items()):
        known = set(_parser(command, monkeypatch)._option_string_actions)
        problems += [f"{doc}: {command} {flag}" for flag, doc in flags.items() if flag not in known]
    assert not problems, f"flags no parser knows: {problems}"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_flag_has_help(command, monkeypatch):
    actions = _parser(command, monkeypatch)._actions
    assert not [a.option_strings or a.dest for a in actions if not a.help]
