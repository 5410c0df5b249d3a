"""The main command's backend choice: measured once per machine, cached,
overridden by KERAS_BACKEND. Speed itself is for bench/, not for tests."""

import ast
import importlib
import json
import os
import subprocess
import sys
import time

import pytest

from keras_bert.runtime import backend as fastest_backend

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.backend_independent


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "cache" / "fastest_backend.json"
    monkeypatch.setattr(fastest_backend, "CACHE_FILE", str(path))
    return path


class FakeProbe:
    """`measure_rounds`'s answer, given: seconds per step of each round by
    backend (None: the probe failed); counts calls."""

    def __init__(self, **seconds):
        self.seconds = seconds
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.seconds


@pytest.mark.parametrize(
    "seconds, expected",
    [
        # Apart by more than either spread: the fastest.
        ({"tensorflow": [0.05, 0.051], "jax": [0.09, 0.091]}, ("tensorflow", False)),
        ({"tensorflow": [0.09, 0.091], "jax": [0.05, 0.052]}, ("jax", False)),
        # The issue's 1707 against 1706 ms: within the rounds' spread, a tie.
        ({"tensorflow": [1.707, 1.715], "jax": [1.706, 1.709]}, ("tensorflow", True)),
        # The ranges of rounds overlap: a tie, whichever is faster.
        ({"tensorflow": [0.104, 0.106], "jax": [0.100, 0.104]}, ("tensorflow", True)),
        ({"tensorflow": [0.100, 0.104], "jax": [0.104, 0.106]}, ("tensorflow", True)),
        # Apart, however noisy the slower one: no tie.
        ({"tensorflow": [0.105, 0.140], "jax": [0.100, 0.104]}, ("jax", False)),
        ({"tensorflow": [1.125, 1.325], "jax": [2.374, 5.154]}, ("tensorflow", False)),
        # Of three rounds, each backend's slowest is set aside: a Zen 3's
        # probe, whose first JAX round was slow, is not a tie.
        ({"tensorflow": [0.485, 0.567, 0.580], "jax": [0.554, 0.308, 0.306]}, ("jax", False)),
        ({"tensorflow": [0.100, 0.102, 0.104], "jax": [0.101, 0.103, 0.300]}, ("tensorflow", True)),
        ({"tensorflow": None, "jax": [0.5]}, ("jax", False)),
        ({"tensorflow": None, "jax": None}, (None, False)),
    ],
)
def test_pick_backend_keeps_tensorflow_within_the_spread(seconds, expected):
    assert fastest_backend.pick_backend(seconds) == expected


def test_measured_once_then_read_from_the_cache(cache):
    probe = FakeProbe(tensorflow=[0.09, 0.095], jax=[0.05, 0.051])
    assert fastest_backend.fastest_backend(probe)[0] == "jax"
    assert json.loads(cache.read_text())["backend"] == "jax"
    assert fastest_backend.fastest_backend(probe)[0] == "jax"
    assert probe.calls == 1


def test_another_machine_or_a_corrupt_cache_measures_again(cache, monkeypatch):
    fastest_backend.fastest_backend(FakeProbe(tensorflow=[0.09], jax=[0.05]))
    monkeypatch.setattr(fastest_backend, "machine_key", lambda: "other machine")
    assert fastest_backend.fastest_backend(FakeProbe(tensorflow=[0.01], jax=[0.05]))[0] == (
        "tensorflow"
    )
    cache.write_text('{"machine": "other mach')  # Cut off mid-write.
    probe = FakeProbe(tensorflow=[0.09], jax=[0.05])
    assert fastest_backend.fastest_backend(probe)[0] == "jax"
    assert probe.calls == 1


def valid_record():
    return {
        "machine": "this machine",
        "backend": "jax",
        "tie": False,
        "seconds_per_step": {"tensorflow": [0.09, 0.1], "jax": [0.05, 0.06]},
    }


@pytest.mark.parametrize(
    "edit",
    [
        {"backend": "torch"},
        {"backend": "nonsense"},
        {"backend": 5},
        {"backend": None},
        {"tie": "no"},
        {"seconds_per_step": {"tensorflow": 0.09, "jax": 0.05}},  # Written before rounds.
        {"seconds_per_step": {"torch": [0.05]}},
        {"seconds_per_step": {"jax": [-1]}},
        {"seconds_per_step": {"jax": ["fast"]}},
        {"seconds_per_step": {"jax": []}},
        {"seconds_per_step": None},
        "backend",
        "tie",
        "seconds_per_step",
    ],
)
def test_a_cache_this_module_did_not_write_is_measured_again(cache, monkeypatch, edit, capsys):
    monkeypatch.setattr(fastest_backend, "machine_key", lambda: "this machine")
    record = valid_record()
    if isinstance(edit, dict):
        record.update(edit)
    else:
        del record[edit]
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps(record))
    probe = FakeProbe(tensorflow=[0.01], jax=[0.05])
    backend, record = fastest_backend.fastest_backend(probe)
    assert (backend, probe.calls) == ("tensorflow", 1)
    fastest_backend.describe(record)
    assert json.loads(cache.read_text())["backend"] == "tensorflow"


@pytest.mark.parametrize("text", ["[1, 2]", '"tensorflow"', "5", "null", "not json", ""])
def test_a_cache_that_is_no_record_is_measured_again(cache, text):
    cache.parent.mkdir(parents=True)
    cache.write_text(text)
    probe = FakeProbe(tensorflow=[0.09], jax=[0.05])
    assert fastest_backend.fastest_backend(probe)[0] == "jax"
    assert probe.calls == 1


def test_the_valid_record_is_read(cache, monkeypatch):
    # The cases above fail for their edit, not for the record they start from.
    monkeypatch.setattr(fastest_backend, "machine_key", lambda: "this machine")
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps(valid_record()))
    assert fastest_backend.fastest_backend(FakeProbe())[0] == "jax"


def test_an_unwritable_cache_keeps_tensorflow_without_measuring(tmp_path, monkeypatch):
    (tmp_path / "a file").write_text("")
    monkeypatch.setattr(
        fastest_backend, "CACHE_FILE", str(tmp_path / "a file" / "keras_bert" / "x.json")
    )
    probe = FakeProbe(tensorflow=[0.09], jax=[0.05])
    backend, record = fastest_backend.fastest_backend(probe)
    assert (backend, probe.calls) == ("tensorflow", 0)
    line = fastest_backend.describe(record)
    assert line.startswith("Keras backend: tensorflow (not measured: the choice could not be")
    assert "a file" in line and "set KERAS_BACKEND to choose another" in line


def test_a_tie_is_said(cache):
    backend, record = fastest_backend.fastest_backend(
        FakeProbe(tensorflow=[1.707, 1.715], jax=[1.706, 1.709])
    )
    assert backend == "tensorflow"
    assert fastest_backend.describe(record) == (
        "Keras backend: tensorflow (a tie: the others are within the probe's spread, "
        "and BENCHMARKS.md#training-step-speed favours tensorflow on a CPU; BERT-Tiny "
        "step by round: tensorflow 1707-1715 ms, jax 1706-1709 ms; set KERAS_BACKEND "
        "to choose another)"
    )
    assert json.loads(cache.read_text())["tie"] is True


def test_no_backend_runs_falls_back_to_tensorflow_uncached(cache):
    backend, record = fastest_backend.fastest_backend(FakeProbe(tensorflow=None, jax=None))
    assert backend == "tensorflow"
    assert "tensorflow failed, jax failed" in fastest_backend.describe(record)
    assert not cache.exists()


def test_keras_backend_set_by_the_user_is_kept(cache, monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    monkeypatch.delitem(sys.modules, "keras", raising=False)
    monkeypatch.setattr(fastest_backend, "measure_rounds", lambda: pytest.fail("measured"))
    fastest_backend.use_fastest_backend()
    assert fastest_backend.os.environ["KERAS_BACKEND"] == "torch"


def test_unset_backend_is_chosen_before_keras_loads(cache, monkeypatch, capsys):
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.delitem(sys.modules, "keras", raising=False)
    monkeypatch.setattr(
        fastest_backend, "measure_rounds", FakeProbe(tensorflow=[0.2, 0.21], jax=[0.1, 0.11])
    )
    fastest_backend.use_fastest_backend()
    assert fastest_backend.os.environ["KERAS_BACKEND"] == "jax"
    assert (
        "Keras backend: jax (fastest here; BERT-Tiny step by round: tensorflow 200-210 ms, "
        "jax 100-110 ms" in capsys.readouterr().err
    )


def test_nothing_is_measured_once_keras_is_loaded(cache, monkeypatch):
    # Keras has read KERAS_BACKEND already (a test, a notebook): too late.
    import keras  # noqa: F401

    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.setattr(fastest_backend, "measure_rounds", lambda: pytest.fail("measured"))
    fastest_backend.use_fastest_backend()
    assert "KERAS_BACKEND" not in fastest_backend.os.environ
    assert not cache.exists()


def test_a_backend_that_cannot_start_is_reported_not_raised(capsys):
    assert fastest_backend.measure_rounds(["no_such_backend"]) == {"no_such_backend": None}
    assert "no_such_backend: probe failed (ValueError: Unable to import backend" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("name, ok", [("nonsense", False), ("5", False), ("jax", True), ("", True)])
def test_keras_backend_that_keras_cannot_load_is_named(monkeypatch, name, ok):
    monkeypatch.setenv("KERAS_BACKEND", name)
    problem = fastest_backend.backend_variable_problem()
    assert (problem is None) == ok
    if not ok:
        assert problem == (
            f"KERAS_BACKEND='{name}' is not a Keras backend; set one of "
            "tensorflow, jax, torch, numpy, openvino"
        )


def test_keras_backend_not_installed_says_what_to_install(monkeypatch):
    # Issue 49, item 7: a `make pretrain` install has no torch.
    real = fastest_backend.importlib.util.find_spec
    monkeypatch.setattr(
        fastest_backend.importlib.util,
        "find_spec",
        lambda name: None if name == "torch" else real(name),
    )
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    assert fastest_backend.backend_variable_problem() == (
        "KERAS_BACKEND=torch needs the 'torch' package, which is not installed: "
        "pip install -r requirements-torch.txt"
    )


@pytest.mark.parametrize("name", ["numpy", "openvino"])
def test_a_backend_that_cannot_train_is_refused_by_training_commands(monkeypatch, name):
    monkeypatch.setattr(fastest_backend.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setenv("KERAS_BACKEND", name)
    assert fastest_backend.backend_variable_problem() is None  # predict may run on it
    assert fastest_backend.backend_variable_problem(training=True) == (
        f"KERAS_BACKEND={name}: Keras' {name} backend runs inference only and cannot train; "
        "set one of tensorflow, jax, torch"
    )


def test_probe_command_names_what_exists():
    # The subprocess imports these; a renamed module would make every
    # probe "fail" and the choice fall back to TensorFlow, silently.
    tree = ast.parse(fastest_backend.PROBE_COMMAND)
    imports = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert [node.module for node in imports] == [
        "keras_bert.runtime.allocator",
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


def test_machine_key_follows_the_default_runs_config(tmp_path, monkeypatch):
    """The probe trains the default run's model: a changed recipe measures
    again."""
    keys = []
    for text in ("model: bert_tiny\n", "model: bert_mini\n"):
        config = tmp_path / "default.yaml"
        config.write_text(text)
        monkeypatch.setattr(fastest_backend, "PROBE_CONFIG", config)
        keys.append(fastest_backend.machine_key())
    assert keys[0] != keys[1]


# A stand-in for the step probe, speaking its protocol: noise on stdout,
# "probe ready", then one "probe <seconds>" per line read; it logs the
# order in which the rounds ran.
FAKE_PROBE = """
import os, sys, time
backend = os.environ["KERAS_BACKEND"]
print("a library's notice", flush=True)
if backend == "hangs":
    time.sleep(60)
print("probe ready", flush=True)
for n, _ in enumerate(sys.stdin):
    with open(os.environ["PROBE_LOG"], "a") as log:
        log.write(f"{backend}{n} ")
    print("more notices", flush=True)
    print(f"probe {0.25 if backend == 'tensorflow' else 0.5}", flush=True)
"""


def test_probes_take_turns_and_skip_other_output(monkeypatch, tmp_path):
    log = tmp_path / "order"
    monkeypatch.setattr(fastest_backend, "PROBE_COMMAND", FAKE_PROBE)
    monkeypatch.setenv("PROBE_LOG", str(log))
    seconds = fastest_backend.measure_rounds(("tensorflow", "jax"), rounds=3, timeout=60)
    assert seconds == {"tensorflow": [0.25] * 3, "jax": [0.5] * 3}
    assert log.read_text().split() == ["tensorflow0", "jax0", "tensorflow1", "jax1"] + [
        "tensorflow2",
        "jax2",
    ]


def test_a_probe_that_does_not_answer_in_time_is_none(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(fastest_backend, "PROBE_COMMAND", FAKE_PROBE)
    monkeypatch.setenv("PROBE_LOG", str(tmp_path / "log"))
    seconds = fastest_backend.measure_rounds(("hangs", "jax"), rounds=2, timeout=2)
    assert seconds == {"hangs": None, "jax": [0.5, 0.5]}
    assert "hangs: no result within 2 s" in capsys.readouterr().err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_probe_ends_with_the_command_that_started_it(tmp_path):
    # Issue 49, item 11: a command killed during the backend measurement
    # left its probes compiling on for over a minute.
    starter = (
        "import subprocess, sys\n"
        "from keras_bert.runtime.backend import end_with_parent\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],"
        " preexec_fn=end_with_parent)\n"
        "print(child.pid, flush=True)\n"
        "child.wait()\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", starter], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 20
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # A zombie has ended.
    except FileNotFoundError:
        return False
