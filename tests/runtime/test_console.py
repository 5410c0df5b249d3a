"""TensorFlow's start-up notices are dropped without an accelerator; every
other line written while it loads is kept; `--verbose` keeps them all."""

import importlib
import os
import subprocess
import sys

import pytest

from keras_bert.runtime import console, hardware

pytestmark = pytest.mark.backend_independent

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTICES = (
    "WARNING: All log messages before absl::InitializeLog() is called are "
    "written to STDERR\n"
    "I0000 00:00:1.2 1 port.cc:153] oneDNN custom operations are on. You may "
    "see slightly different numerical results\n"
    "I0000 00:00:1.2 1 cudart_stub.cc:31] Could not find cuda drivers on your "
    "machine, GPU will not be used.\n"
    "E0000 00:00:1.2 1 cuda_platform.cc:52] failed call to cuInit: INTERNAL: "
    "CUDA error\n"
    "E0000 00:00:1.2 1 util.cc:131] oneDNN supports DT_INT32 only on platforms "
    "with AVX-512. Falling back to the default Eigen-based implementation if "
    "present.\n"
)
# A stand-in for TensorFlow: it writes the notices and one real line to
# file descriptor 2, as the native libraries do.
FAKE_TENSORFLOW = f"""
import os
os.write(2, {NOTICES!r}.encode() + b"E0000 real.cc:1] a real problem\\n")
class config:
    list_physical_devices = staticmethod(lambda: [])
constant = transpose = lambda x: x
"""
# The console and what it imports, `hardware`, are loaded by path: they are
# standard library only, while importing the package loads Keras.
RUN_CONSOLE = f"""
import importlib.util, sys
def load(name):
    spec = importlib.util.spec_from_file_location(
        "keras_bert.runtime." + name,
        {os.path.join(REPO, "keras_bert", "runtime")!r} + "/" + name + ".py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
load("hardware")
console = load("console")
console.import_tensorflow_quietly()
print("tensorflow" in sys.modules)
import tensorflow  # As Keras does next.
"""


def run_with_fake_tensorflow(tmp_path, *args, **env):
    (tmp_path / "tensorflow.py").write_text(FAKE_TENSORFLOW)
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CUDA_VISIBLE_DEVICES", "TPU_NAME", "KERAS_BERT_VERBOSE")
    }
    return subprocess.run(
        [sys.executable, "-c", RUN_CONSOLE, *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**clean, "PYTHONPATH": str(tmp_path), **env},
    )


@pytest.mark.skipif(hardware.accelerator_expected(), reason="a GPU or TPU is here")
def test_notices_dropped_and_other_lines_kept(tmp_path):
    result = run_with_fake_tensorflow(tmp_path)
    assert result.stdout == "True\n"
    assert result.stderr == "E0000 real.cc:1] a real problem\n"


@pytest.mark.parametrize("how", ["KERAS_BERT_VERBOSE", "CUDA_VISIBLE_DEVICES"])
def test_verbose_or_an_expected_gpu_keeps_every_line(tmp_path, how):
    # A command's --verbose sets KERAS_BERT_VERBOSE (tests/runtime/test_command.py).
    result = run_with_fake_tensorflow(tmp_path, **{how: "1"})
    assert result.stdout == "False\n"
    assert result.stderr == NOTICES + "E0000 real.cc:1] a real problem\n"


@pytest.mark.skipif(hardware.accelerator_expected(), reason="a GPU or TPU is here")
def test_real_tensorflow_starts_quietly(tmp_path):
    # A command that parses its arguments, starts up and fails on its input.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "keras_bert.evaluate",
            "--model_dir",
            str(tmp_path / "missing"),
            "--input",
            str(tmp_path / "dev.tsv"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert not [
        line for line in result.stderr.splitlines() if console.STARTUP_NOTICES.search(line)
    ], result.stderr


@pytest.mark.skipif(hardware.accelerator_expected(), reason="a GPU or TPU is here")
def test_masked_lm_gather_prints_no_onednn_notice_after_the_import():
    # What the masked-LM head does in every training step.
    # As a command starts: the quiet import before Keras.
    code = (
        RUN_CONSOLE.replace("import tensorflow  # As Keras does next.", "")
        + "import keras, numpy as np; "
        "keras.ops.take_along_axis(np.ones((1, 4, 2), 'float32'), "
        "np.zeros((1, 2, 1), 'int32'), axis=1); print('ran')"
    )
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BERT_VERBOSE"}
    env["KERAS_BACKEND"] = "tensorflow"
    runs = {
        verbose: subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
            env={**env, "KERAS_BERT_VERBOSE": "1"} if verbose else env,
        )
        for verbose in (False, True)
    }
    if "oneDNN supports" not in runs[True].stderr:
        pytest.skip("this TensorFlow prints no oneDNN data-type notice")
    assert runs[False].stdout.endswith("ran\n")
    assert "oneDNN supports" not in runs[False].stderr, runs[False].stderr


@pytest.mark.parametrize(
    "module",
    [
        "keras_bert.pretrain",
        "keras_bert.finetune",
        "keras_bert.data",
        "keras_bert.vocab",
        "keras_bert.export",
        "keras_bert.convert",
        "keras_bert.predict",
        "keras_bert.evaluate",
    ],
)
def test_every_command_takes_verbose(module, capsys):
    with pytest.raises(SystemExit):
        importlib.import_module(module).main(["--help"])
    assert "--verbose" in capsys.readouterr().out


@pytest.mark.parametrize("verbose", [False, True])
def test_other_libraries_info_lines_only_when_verbose(verbose):
    code = (
        "import logging, sys; from keras_bert.runtime.console import configure_logging; "
        "configure_logging(); logging.getLogger('jax._src.xla_bridge').info('tpu?'); "
        "logging.getLogger('keras_bert.finetune').info('ours'); "
        "logging.getLogger('pipelines.corpus').warning('corpus')"
    )
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BERT_VERBOSE"}
    if verbose:
        env["KERAS_BERT_VERBOSE"] = "1"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env=env,
    )
    lines = [l for l in result.stderr.splitlines() if l in ("tpu?", "ours", "corpus")]
    assert lines == (["tpu?", "ours", "corpus"] if verbose else ["ours", "corpus"])
