"""The harness every command runs in: what a raised error becomes (one line
on stderr, an exit status), and that a bug keeps its traceback."""

import os
import subprocess
import sys

import pytest
import tensorflow as tf

from keras_bert.errors import ConfigError, UserError
from keras_bert.runtime import command

pytestmark = pytest.mark.backend_independent

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fail_with(error):
    def body():
        raise error

    return body


def test_result_and_status(capsys):
    assert command.run_command(lambda: print("done"), "out") == 0
    assert command.run_command(lambda: 3, "out") == 3
    assert capsys.readouterr().out == "done\n"


@pytest.mark.parametrize("error", [UserError("bad input x"), ConfigError("bad input x")])
def test_a_user_error_is_one_line_and_exit_2(error, capsys):
    assert command.run_command(fail_with(error), "out") == 2
    assert capsys.readouterr().err == "error: bad input x\n"


def test_a_command_names_its_own_user_errors_and_prefix(capsys):
    body = fail_with(ValueError("`seq_len` must be at least 5"))
    assert (
        command.run_command(body, "out", error_prefix="prog: error: ", user_errors=(ValueError,))
        == 2
    )
    assert capsys.readouterr().err == "prog: error: `seq_len` must be at least 5\n"


@pytest.mark.parametrize(
    "error, line",
    [
        (
            FileNotFoundError(2, "No such file or directory", "/data/x.txt"),
            "[Errno 2] No such file or directory: '/data/x.txt'",
        ),
        (OSError(21, "Is a directory", "/data"), "[Errno 21] Is a directory: '/data'"),
        (
            PermissionError(13, "Permission denied", "/data/x.txt"),
            "[Errno 13] Permission denied: '/data/x.txt'",
        ),
        (
            FileExistsError("`version` must be new; '/m/1' already exists."),
            "`version` must be new; '/m/1' already exists.",
        ),
        (
            tf.errors.NotFoundError(None, None, "/data/x.txt; No such file or directory"),
            "/data/x.txt; No such file or directory",
        ),
        (
            tf.errors.FailedPreconditionError(None, None, "/data; Is a directory"),
            "/data; Is a directory",
        ),
        (
            tf.errors.UnimplementedError(
                None, None, "File system scheme 'foo' not implemented (file: 'foo://x')"
            ),
            "File system scheme 'foo' not implemented (file: 'foo://x')",
        ),
    ],
)
def test_a_file_error_on_the_users_path_is_one_line(error, line, capsys):
    assert command.run_command(fail_with(error), "out") == 2
    assert capsys.readouterr().err == f"error: {line}\n"


def test_a_real_missing_file_names_its_path(tmp_path, capsys):
    missing = str(tmp_path / "missing.txt")

    def read():
        with tf.io.gfile.GFile(missing) as f:
            f.read()

    assert command.run_command(read, "out") == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {missing}") and err.count("\n") == 1


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("a bug"),
        KeyError("x"),
        OSError(5, "Input/output error"),
        tf.errors.NotFoundError(None, None, "Op type not registered 'Foo'"),
    ],
)
def test_anything_else_keeps_its_traceback(error):
    with pytest.raises(type(error)):
        command.run_command(fail_with(error), "out")


def test_ctrl_c_is_one_line_and_exit_130(capsys):
    body = fail_with(KeyboardInterrupt())
    assert command.run_command(body, "out", interrupted="Stopped.") == 130
    assert capsys.readouterr().err == "Stopped.\n"


@pytest.mark.parametrize("output", ["'runs/x'", "lambda: 'runs/x'"])
def test_a_full_disk_is_one_line_and_exit_1_at_once(output):
    # os._exit: run in a child, whose exit status is the command's.
    code = (
        "from keras_bert.runtime.command import run_command\n"
        "def body():\n"
        "    raise OSError(28, 'No space left on device')\n"
        f"run_command(body, {output})\n"
        "print('not reached')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip().splitlines()[-1] == (
        "error: no space left on device in runs/x: free space and run the same "
        "command again (it replaces what this run wrote; nothing is left "
        "half-written)."
    )


@pytest.mark.parametrize(
    "command, args",
    [
        ("pretrain", []),
        ("finetune", ["--task", "sst2", "--data_dir", "d", "--init_checkpoint", "c"]),
        ("evaluate", ["--model_dir", "m", "--input", "i"]),
        ("predict", ["--model_dir", "m", "--input", "i"]),
        ("data", ["--input", "i", "--output_dir", "o", "--vocab", "v"]),
        ("vocab", ["--input", "i", "--output", "o"]),
        ("convert", ["src", "dst"]),
        # Not export: it runs under TensorFlow whatever KERAS_BACKEND says.
    ],
)
def test_keras_backend_that_keras_cannot_load_is_one_line_from_every_command(
    command, args, tmp_path
):
    if command == "finetune":
        args = [*args, "--model_dir", str(tmp_path / "run")]
    result = subprocess.run(
        [sys.executable, "-m", f"keras_bert.{command}", *args],
        cwd=tmp_path,
        env={**os.environ, "KERAS_BACKEND": "nonsense", "XDG_CACHE_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "error: KERAS_BACKEND='nonsense' is not a Keras backend; set one of "
        "tensorflow, jax, torch, numpy, openvino"
    )
    assert list(tmp_path.iterdir()) == []  # Nothing written, nothing measured.


def test_the_backend_is_checked_before_anything_loads(monkeypatch, capsys):
    monkeypatch.setenv("KERAS_BACKEND", "5")
    monkeypatch.setattr(command, "start_up", lambda choose_backend: pytest.fail("started"))
    assert command.run_command(lambda: pytest.fail("ran"), "out") == 2
    assert capsys.readouterr().err.startswith("error: KERAS_BACKEND='5' is not a Keras backend")


def test_the_check_answers_before_the_backend_measurement(monkeypatch, capsys):
    # Issue 49 item 11: a bad key once cost the backend probe (~2 minutes on
    # a slow machine) before its one-line error.
    monkeypatch.setattr(command, "start_up", lambda choose_backend: pytest.fail("started"))
    body = fail_with(AssertionError("the body ran"))
    status = command.run_command(
        body, "out", choose_backend=True, check=fail_with(ConfigError("bad key x"))
    )
    assert status == 2
    assert capsys.readouterr().err == "error: bad key x\n"


def test_a_passing_check_then_starts_up_and_runs_the_body(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(command, "start_up", lambda choose_backend: calls.append("start_up"))
    status = command.run_command(
        lambda: calls.append("body"), "out", check=lambda: calls.append("check")
    )
    assert (status, calls) == (0, ["check", "start_up", "body"])


@pytest.mark.parametrize("module", ["keras_bert.evaluate", "keras_bert.convert"])
def test_a_commands_verbose_flag_reaches_the_harness(module, monkeypatch, tmp_path):
    # Issue 48: --verbose was parsed by argparse but read from sys.argv.
    import importlib

    monkeypatch.setenv("KERAS_BERT_VERBOSE", "0")  # Restored (unset) after the test.
    seen = []
    monkeypatch.setattr(
        command,
        "start_up",
        lambda choose_backend: seen.append(os.environ.get("KERAS_BERT_VERBOSE")),
    )
    args = {
        "keras_bert.evaluate": ["--model_dir", str(tmp_path), "--input", str(tmp_path / "x")],
        "keras_bert.convert": [str(tmp_path / "src"), str(tmp_path / "dst")],
    }[module]
    monkeypatch.setattr(sys, "argv", ["prog"])  # Not on sys.argv: handed over.
    importlib.import_module(module).main([*args, "--verbose"])
    assert seen == ["1"]
