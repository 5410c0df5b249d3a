"""The main command's backend choice: measured once per machine, cached,
overridden by KERAS_BACKEND. Speed itself is for bench/, not for tests."""

import ast
import importlib
import json
import sys

import pytest

from keras_bert.runtime import backend as fastest_backend

pytestmark = pytest.mark.backend_independent


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "cache" / "fastest_backend.json"
    monkeypatch.setattr(fastest_backend, "CACHE_FILE", str(path))
    return path


class FakeProbe:
    """Seconds per step by backend (None: the probe failed); counts calls."""

    def __init__(self, **seconds):
        self.seconds = seconds
        self.calls = []

    def __call__(self, backend):
        self.calls.append(backend)
        return self.seconds[backend]


@pytest.mark.parametrize(
    "seconds, expected",
    [
        ({"tensorflow": 0.05, "jax": 0.09}, "tensorflow"),
        ({"tensorflow": 0.09, "jax": 0.05}, "jax"),
        ({"tensorflow": None, "jax": 0.5}, "jax"),
        ({"tensorflow": None, "jax": None}, None),
    ],
)
def test_pick_fastest(seconds, expected):
    assert fastest_backend.pick_fastest(seconds) == expected


def test_measured_once_then_read_from_the_cache(cache):
    probe = FakeProbe(tensorflow=0.09, jax=0.05)
    assert fastest_backend.fastest_backend(probe)[0] == "jax"
    assert probe.calls == ["tensorflow", "jax"]
    assert json.loads(cache.read_text())["backend"] == "jax"
    assert fastest_backend.fastest_backend(probe)[0] == "jax"
    assert len(probe.calls) == 2


def test_another_machine_or_a_corrupt_cache_measures_again(cache, monkeypatch):
    fastest_backend.fastest_backend(FakeProbe(tensorflow=0.09, jax=0.05))
    monkeypatch.setattr(fastest_backend, "machine_key", lambda: "other machine")
    assert fastest_backend.fastest_backend(FakeProbe(tensorflow=0.01, jax=0.05))[0] == "tensorflow"
    cache.write_text('{"machine": "other mach')  # Cut off mid-write.
    probe = FakeProbe(tensorflow=0.09, jax=0.05)
    assert fastest_backend.fastest_backend(probe)[0] == "jax"
    assert probe.calls == ["tensorflow", "jax"]


def test_no_backend_runs_falls_back_to_tensorflow_uncached(cache):
    backend, record = fastest_backend.fastest_backend(FakeProbe(tensorflow=None, jax=None))
    assert backend == "tensorflow"
    assert "tensorflow failed, jax failed" in fastest_backend.describe(record)
    assert not cache.exists()


def test_keras_backend_set_by_the_user_is_kept(cache, monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    monkeypatch.delitem(sys.modules, "keras", raising=False)
    monkeypatch.setattr(fastest_backend, "measure_step", lambda b: pytest.fail("measured"))
    fastest_backend.use_fastest_backend()
    assert fastest_backend.os.environ["KERAS_BACKEND"] == "torch"


def test_unset_backend_is_chosen_before_keras_loads(cache, monkeypatch, capsys):
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.delitem(sys.modules, "keras", raising=False)
    monkeypatch.setattr(fastest_backend, "measure_step", FakeProbe(tensorflow=0.2, jax=0.1))
    fastest_backend.use_fastest_backend()
    assert fastest_backend.os.environ["KERAS_BACKEND"] == "jax"
    assert (
        "Keras backend: jax (fastest here; BERT-Tiny step: tensorflow 200 ms, jax 100 ms"
        in capsys.readouterr().err
    )


def test_nothing_is_measured_once_keras_is_loaded(cache, monkeypatch):
    # Keras has read KERAS_BACKEND already (a test, a notebook): too late.
    import keras  # noqa: F401

    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.setattr(fastest_backend, "measure_step", lambda b: pytest.fail("measured"))
    fastest_backend.use_fastest_backend()
    assert "KERAS_BACKEND" not in fastest_backend.os.environ
    assert not cache.exists()


def test_a_backend_that_cannot_start_is_reported_not_raised(capsys):
    assert fastest_backend.measure_step("no_such_backend") is None
    assert "no_such_backend: probe failed" in capsys.readouterr().err


def test_probe_command_names_what_exists():
    # The subprocess imports these; a renamed module would make every
    # probe "fail" and the choice fall back to TensorFlow, silently.
    tree = ast.parse(fastest_backend.PROBE_COMMAND)
    imports = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert [node.module for node in imports] == [
        "keras_bert.runtime.backend",
        "keras_bert.pretraining.step_probe",
    ]
    for node in imports:
        module = importlib.import_module(node.module)
        assert all(hasattr(module, alias.name) for alias in node.names)


def test_machine_key_counts_the_accelerators(monkeypatch):
    keys = []
    for devices in ([], ["/dev/nvidia0"]):
        monkeypatch.setattr(fastest_backend, "accelerator_devices", lambda d=devices: d)
        keys.append(fastest_backend.machine_key())
    assert keys[0] != keys[1]
