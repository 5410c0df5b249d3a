# The two README commands. Each creates or refreshes the virtualenv first,
# so a fresh machine needs only python3 and pip.
#   make pretrain   pre-train a small BERT on the bundled corpus (the main job)
#   make test       the test suite under TensorFlow, its backend-dependent tests
#                   under JAX and PyTorch too
#   make lint       ruff's formatter and linter (pyproject.toml), as CI runs them
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Extra arguments: `make pretrain ARGS="--config budget"`,
# `make test PYTEST_ARGS="-x -k tokenizer"`.
ARGS ?=
PYTEST_ARGS ?=
# The whole suite runs under TensorFlow; JAX and PyTorch run only the tests
# whose result can depend on the backend. A test that checks nothing the
# backend changes (configs, files, command-line errors, the tf.data
# pipelines and readers, numpy metrics, the README) is marked
# `backend_independent` and runs once; the rule is in tests/conftest.py.
BACKEND_DEPENDENT_ONLY := --backend-dependent-only
# Tests run in one worker process per core (pytest-xdist), a file's tests in
# one worker, so a module's fixtures are built once.
PARALLEL := --numprocesses=auto --dist=loadfile

.PHONY: pretrain test lint

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.runtime-installed: $(BIN)/python requirements.txt pyproject.toml
	$(BIN)/python -m pip install --quiet -r requirements.txt -e .
	touch $@

$(VENV)/.dev-installed: $(VENV)/.runtime-installed requirements-dev.txt requirements-torch.txt
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

# The Keras backend is the one measured fastest on this machine
# (keras_bert/runtime/backend.py); `KERAS_BACKEND=jax make pretrain` picks one.
pretrain: $(VENV)/.runtime-installed
	$(BIN)/python -m keras_bert.pretrain $(ARGS)

test: $(VENV)/.dev-installed
	KERAS_BACKEND=tensorflow $(BIN)/python -m pytest $(PARALLEL) $(PYTEST_ARGS)
	KERAS_BACKEND=jax $(BIN)/python -m pytest $(PARALLEL) $(BACKEND_DEPENDENT_ONLY) $(PYTEST_ARGS)
	KERAS_BACKEND=torch $(BIN)/python -m pytest $(PARALLEL) $(BACKEND_DEPENDENT_ONLY) $(PYTEST_ARGS)

lint: $(VENV)/.dev-installed
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
