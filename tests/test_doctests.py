"""The `>>>` examples in the docstrings of keras_bert/ and pipelines/ run
and print what they say, as keras-hub runs every module's examples.

Every module whose source holds `>>>` is a case, found by walking the two
packages, so a new example is tested without being listed. Examples are
cheap (tiny models, the bundled vocabulary and corpus, read from the
repository root); one that needs a trained model, big data, the network or
seconds of work is written as a plain code block instead, never skipped
(`# doctest: +SKIP` fails here). Modules under pipelines/ are tf.data only
(STYLE.md), so their cases run once, under TensorFlow; the rest, which
build Keras layers and models, run under every backend.
"""

import doctest
import importlib
import io
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("keras_bert", "pipelines")
# The tf.data-only package (tests/conftest.py: the pipelines are
# backend-independent).
TF_DATA_PACKAGE = "pipelines"
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _modules_with_examples():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if ">>>" in path.read_text(encoding="utf-8"):
                yield ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _case(module_name):
    tf_data_only = module_name.split(".")[0] == TF_DATA_PACKAGE
    marks = [pytest.mark.backend_independent] if tf_data_only else []
    return pytest.param(module_name, id=module_name, marks=marks)


MODULES = [_case(name) for name in _modules_with_examples()]


@pytest.mark.backend_independent
def test_modules_with_examples_are_found():
    # An empty parameter list would skip the test below without a word.
    assert MODULES


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name, monkeypatch):
    # The examples name the bundled data by paths from the repository root.
    monkeypatch.chdir(ROOT)
    module = importlib.import_module(module_name)
    tests = [test for test in doctest.DocTestFinder().find(module) if test.examples]
    examples = [example for test in tests for example in test.examples]
    assert examples, f"{module_name} holds `>>>` outside any docstring doctest finds"
    skipped = [
        f"line {test.lineno + example.lineno + 1}: {example.source.strip()}"
        for test in tests
        for example in test.examples
        if example.options.get(doctest.SKIP)
    ]
    assert not skipped, (
        f"{module_name}: write an example too heavy to run as a plain code block, "
        f"not `# doctest: +SKIP`: {skipped}"
    )
    report = io.StringIO()
    runner = doctest.DocTestRunner(verbose=False, optionflags=OPTIONS)
    for test in tests:
        runner.run(test, out=report.write)
    assert not runner.failures, report.getvalue()
