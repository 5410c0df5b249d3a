"""Docs that cannot drift (CONTRIBUTING.md, "Tests": docs are checked like code):
every relative link and its anchor, every `keras_bert.*` / `pipelines.*`
name (and every name a Markdown `from ... import` line takes), every
repository path in backticks, and every flag of a `python -m keras_bert.X`
line in the Markdown files resolve; names and paths in YAML comments and
docstrings too, and a Markdown heading anchor cited in code, YAML,
requirements or the notebook. Each command's page has a synopsis with every
flag its parser takes, the README's map names every top-level module of
`keras_bert/`, and the run-folder tables list the files a run writes. A
rename then fails here, not for a reader."""

import argparse
import importlib
import itertools
import os
import pathlib
import re
from fnmatch import fnmatch

import pytest

pytestmark = pytest.mark.backend_independent

REPO = pathlib.Path(__file__).resolve().parents[1]


def _repo_files(*patterns):
    """The repository's files whose names match one of `patterns`, hidden
    folders (`.git`, `.venv`) and caches left out."""
    found = []
    for folder, subfolders, files in os.walk(REPO):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d != "__pycache__"]
        found += [pathlib.Path(folder, f) for f in files if any(fnmatch(f, p) for p in patterns)]
    return sorted(found)


MARKDOWN = _repo_files("*.md")
SOURCES = sorted(
    [*REPO.glob("keras_bert/**/*.py"), *REPO.glob("pipelines/**/*.py"), *REPO.glob("bench/*.py")]
    + [*REPO.glob("configs/**/*.yaml")]
)
# Where code points a reader at a heading: comments, docstrings, messages.
POINTING = [
    p
    for p in _repo_files("*.py", "*.yaml", "*.yml", "requirements*.txt", "*.ipynb")
    if not str(p.relative_to(REPO)).startswith(("runs", "build"))
]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
NAME = re.compile(r"`((?:keras_bert|pipelines)(?:\.[A-Za-z_]\w*)+)")
PATH = re.compile(r"`((?:keras_bert|pipelines|configs|tests|bench|docs|data|notebooks)/[\w./*-]+)`")
COMMAND = re.compile(r"python -m keras_bert\.(\w+)((?:[^\n`]|\\\n)*)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z_-]*)")
IMPORT = re.compile(r"^from ((?:keras_bert|pipelines)[\w.]*) import ([\w, ]+)$", re.M)
ANCHORED = re.compile(r"([\w./-]+\.md)#([\w-]+)")
# A command's synopsis: a plain ``` block that opens with its invocation.
SYNOPSIS = re.compile(r"^```\n(python -m keras_bert\.(\w+)\b.*?)^```$", re.M | re.S)


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
    names = set(NAME.findall(text))
    if source.suffix == ".md":
        for module, imported in IMPORT.findall(text):
            names.update(f"{module}.{name.strip()}" for name in imported.split(","))
    problems = [f"`{n}` does not resolve" for n in sorted(names) if not _resolves(n)]
    for text_path in sorted(set(PATH.findall(text))):
        problem = _path_problem(text_path)
        if problem:
            problems.append(f"`{text_path}` {problem}")
    assert not problems, f"{_relative(source)}: {problems}"


class _Parsed(Exception):
    def __init__(self, parser):
        super().__init__()
        self.parser = parser


@pytest.mark.parametrize("source", POINTING, ids=_relative)
def test_anchors_cited_in_code_resolve(source):
    problems = []
    for file, anchor in sorted(set(ANCHORED.findall(source.read_text(encoding="utf-8")))):
        path = next((b / file for b in (source.parent, REPO) if (b / file).is_file()), None)
        if path is None:
            problems.append(f"{file}#{anchor}: no such file")
        elif anchor not in _anchors(path):
            problems.append(f"{file}#{anchor}: no such heading in {_relative(path)}")
    assert not problems, f"{_relative(source)}: {problems}"


# The commands: the modules of keras_bert/ that run as `python -m`.
COMMANDS = tuple(
    sorted(
        p.stem
        for p in (REPO / "keras_bert").glob("*.py")
        if 'if __name__ == "__main__":' in p.read_text(encoding="utf-8")
    )
)


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


def _section(path, heading):
    """The text under `## heading` in `path`, up to the next `## `."""
    text = path.read_text()
    assert f"\n## {heading}\n" in text, f"{_relative(path)}: no heading `## {heading}`"
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def _command_pages():
    """Each command's page: the docs link that ends its row of the README's
    command table (`| `name` | ... | [page](docs/page.md) |`)."""
    rows = re.findall(
        r"^\| `(\w+)` \|.*\]\((docs/[\w.]+\.md)[^)]*\) \|$",
        (REPO / "README.md").read_text(),
        flags=re.M,
    )
    return {command: REPO / page for command, page in rows}


def test_the_readme_command_table_lists_every_command():
    listed = set(_command_pages())
    assert listed == set(COMMANDS), (
        f"README.md's command table (a row ending in a docs link) lacks "
        f"{sorted(set(COMMANDS) - listed)}; names no command {sorted(listed - set(COMMANDS))}"
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_every_flag_is_in_its_pages_synopsis(command, monkeypatch):
    page = _command_pages().get(command)
    assert page, f"{command}: no row in the README's command table"
    synopses = {name: text for text, name in SYNOPSIS.findall(page.read_text())}
    assert command in synopses, (
        f"{_relative(page)}: no synopsis (a plain ``` block opening "
        f"`python -m keras_bert.{command}`)"
    )
    parser = _parser(command, monkeypatch)
    shown = set(FLAG.findall(synopses[command]))
    flags = [
        next(o for o in action.option_strings if o.startswith("--"))
        for action in parser._actions
        if action.option_strings and not isinstance(action, argparse._HelpAction)
    ]
    missing = [flag for flag in flags if flag not in shown]
    unknown = sorted(shown - set(parser._option_string_actions))
    assert not missing and not unknown, (
        f"{_relative(page)}, {command}'s synopsis: lacks {missing}; no such flag {unknown}"
    )


def test_every_top_level_module_is_in_the_readme_map():
    code_map = re.search(
        r"```\nkeras_bert/\n(.*?)```", _section(REPO / "README.md", "Where the code lives"), re.S
    )
    assert code_map, "README.md, Where the code lives: no map opening `keras_bert/`"
    named = set()  # A line's first column: the names before its description.
    for line in itertools.takewhile(lambda l: l.startswith(" "), code_map.group(1).splitlines()):
        named.update(line.strip().split("  ")[0].split())
    package = REPO / "keras_bert"
    modules = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    modules |= {f"{p.parent.name}/" for p in package.glob("*/__init__.py")}
    assert named == modules, (
        f"README.md's map lacks {sorted(modules - named)}; names no module {sorted(named - modules)}"
    )


def _run_files(kind):
    from keras_bert.finetuning.run_kind import FINETUNING_RUN
    from keras_bert.pretraining.run_kind import PRETRAINING_RUN

    run = PRETRAINING_RUN if kind == "pretraining" else FINETUNING_RUN
    return run.files() | run.kept | {run.lock_file}


@pytest.mark.parametrize(
    "page, heading, kind, every_file",
    [
        ("docs/pretraining.md", "Outputs", "pretraining", True),
        ("docs/finetuning.md", "Outputs", "finetuning", True),
        ("README.md", "Quick start", "pretraining", False),  # The default run's.
    ],
)
def test_run_folder_tables_list_the_runs_files(page, heading, kind, every_file):
    listed = set()
    for first_cell in re.findall(r"^\|([^|\n]*)\|", _section(REPO / page, heading), re.M):
        listed.update(path.split("/")[0] for path in re.findall(r"`([^`]+)`", first_cell))
    files = _run_files(kind)
    missing = sorted(files - listed) if every_file else []
    assert not missing and listed <= files, (
        f"{page}, {heading}: lacks {missing}; not a {kind} run's file {sorted(listed - files)}"
    )
