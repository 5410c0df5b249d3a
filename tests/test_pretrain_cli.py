"""`python -m keras_bert.pretrain`: argument handling, one-line errors,
and kill -9 / rerun resumption as a subprocess."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from keras_bert import pretrain
from tests.pretraining.conftest import write_corpus

pytestmark = pytest.mark.backend_independent

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--set", "optimizer.lr=1"], "Unknown config key 'optimizer.lr'"),
        (["--set", "precision=fp8"], "`precision` must be one of"),
        (["--config", "bert_huge"], "No pre-training config 'bert_huge'"),
        (["--set", "data.train_files=/nonexistent/*.txt"], "No corpus file matches"),
        (["--set", "data.vocab_file=/nonexistent/vocab.txt"], "vocab"),
        (["--strategy", "tpu", "--tpu", "my-tpu-that-does-not-exist"], "No TPU could be reached"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys, tmp_path):
    code = pretrain.main(argv + ["--model_dir", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("error: ") and message in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_bad_strategy_choice_is_rejected_by_argparse(capsys):
    with pytest.raises(SystemExit) as exit_info:
        pretrain.main(["--strategy", "gpus"])
    assert exit_info.value.code == 2


def test_the_time_budget_counts_from_the_commands_start(monkeypatch, tmp_path):
    # The imports and the backend choice spend the budget too, so that
    # `make pretrain` ends on time whatever they took on this machine.
    from keras_bert.pretraining import runner

    seen = {}

    def run_pretraining(config, **kwargs):
        seen.update(kwargs, called=time.monotonic())
        return {"preempted": False, "eval": {}, "pretraining": SimpleNamespace(objective=None)}

    monkeypatch.setattr(runner, "run_pretraining", run_pretraining)
    before = time.monotonic()
    assert pretrain.main(["--model_dir", str(tmp_path / "run")]) == 0
    assert before <= seen["budget_started"] <= seen["called"]


def start_without_a_backend(args, tmp_path):
    """`python -m keras_bert.pretrain ARGS` as on a fresh machine: no
    KERAS_BACKEND, nothing cached."""
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return subprocess.run(
        [sys.executable, "-m", "keras_bert.pretrain", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "args, code", [(["--help"], 0), (["--strategy", "gpus"], 2), (["--no_such_flag"], 2)]
)
def test_help_and_bad_flags_answer_before_start_up(args, code, tmp_path):
    result = start_without_a_backend(args, tmp_path)
    assert result.returncode == code, result.stderr
    assert "usage: python -m keras_bert.pretrain" in result.stdout + result.stderr
    assert "Measuring which Keras backend" not in result.stderr
    assert not (tmp_path / "cache").exists()  # Nothing measured, nothing cached.


def run_cli(args, log=None):
    """Starts the CLI; output to the file `log` (a full pipe would block a
    long run) or to a pipe."""
    return subprocess.Popen(
        [sys.executable, "-m", "keras_bert.pretrain", *args],
        cwd=ROOT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        stdout=open(log, "w") if log else subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_subprocess_error_has_no_traceback(tmp_path):
    process = run_cli(["--set", "nope=1", "--model_dir", str(tmp_path)])
    output, _ = process.communicate(timeout=300)
    assert process.returncode == 2
    assert "Traceback" not in output
    assert "error: Unknown config key 'nope'" in output


def tiny_cli_args(tmp_path, corpus, steps=40):
    return [
        "--model_dir",
        str(tmp_path / "run"),
        "--set",
        "model_overrides={num_layers: 1, hidden_dim: 16, num_heads: 2, intermediate_dim: 32}",
        "--set",
        f"data.train_files={corpus}",
        "--set",
        "data.holdout_fraction=0.3",
        "--set",
        "data.shuffle=false",
        "--set",
        "phases.0.seq_len=32",
        "--set",
        "phases.0.max_predictions=5",
        "--set",
        "phases.0.batch_size=4",
        "--set",
        "phases.1.seq_len=64",
        "--set",
        "phases.1.max_predictions=10",
        "--set",
        "phases.1.batch_size=2",
        "--set",
        f"phases.0.steps={steps // 2}",
        "--set",
        f"train_steps={steps}",
        "--set",
        "train_budget_minutes=null",
        "--set",
        "optimizer.warmup_steps=2",
        "--set",
        "checkpoint.every_steps=5",
        "--set",
        "steps_per_loop=5",
        "--set",
        "eval_steps=1",
    ]


def checkpoint_steps(model_dir):
    directory = model_dir / "checkpoints"
    if not directory.exists():
        return []
    return sorted(
        int(p.name.split("-")[1]) for p in directory.glob("ckpt-*") if (p / "state.json").exists()
    )


@pytest.mark.slow
def test_kill_9_then_rerun_resumes_and_finishes(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    args = tiny_cli_args(tmp_path, corpus, steps=40)
    model_dir = tmp_path / "run"
    process = run_cli(args, tmp_path / "first.log")
    deadline = time.time() + 400
    while time.time() < deadline and not [s for s in checkpoint_steps(model_dir) if s >= 10]:
        if process.poll() is not None:
            pytest.fail(
                "finished before it could be killed:\n" + (tmp_path / "first.log").read_text()
            )
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed_at = max(checkpoint_steps(model_dir))
    assert 10 <= killed_at < 40
    assert (model_dir / "config.yaml").exists()

    rerun = run_cli(args, tmp_path / "rerun.log")
    rerun.wait(timeout=600)
    output = (tmp_path / "rerun.log").read_text()
    assert rerun.returncode == 0, output
    assert f"Resuming from {model_dir}/checkpoints/ckpt-{killed_at:08d}: step {killed_at}" in output
    assert "held-out seq_len=64: mlm_accuracy=" in output
    assert checkpoint_steps(model_dir)[-1] == 40
    assert (model_dir / "pretrainer.keras").exists()


@pytest.mark.slow
def test_sigterm_saves_and_exits_0(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    args = tiny_cli_args(tmp_path, corpus, steps=400)
    model_dir = tmp_path / "run"
    process = run_cli(args, tmp_path / "run.log")
    deadline = time.time() + 400
    while time.time() < deadline and not checkpoint_steps(model_dir):
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=120)
    output = (tmp_path / "run.log").read_text()
    assert process.returncode == 0, output
    assert "Run the same command to resume." in output
    steps = checkpoint_steps(model_dir)
    assert steps[-1] > 5 or steps == [5]


@pytest.mark.slow
def test_kill_9_during_export_then_rerun_finishes(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    args = tiny_cli_args(tmp_path, corpus, steps=10)
    model_dir = tmp_path / "run"
    process = run_cli(args, tmp_path / "first.log")
    # The SavedModel export writes into a temporary folder for seconds.
    deadline = time.time() + 400
    while time.time() < deadline and not list(model_dir.glob("saved_model/.tmp-*")):
        if process.poll() is not None:
            pytest.fail(
                "finished before it could be killed:\n" + (tmp_path / "first.log").read_text()
            )
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()

    rerun = run_cli(args, tmp_path / "rerun.log")
    rerun.wait(timeout=600)
    output = (tmp_path / "rerun.log").read_text()
    assert rerun.returncode == 0, output
    assert "taking over the lock" in output
    assert "Exported backbone and pretrainer" in output
    assert not list(model_dir.glob(".*")) + list(model_dir.glob("saved_model/.*"))
    assert not list(model_dir.glob("**/variables_temp"))
    assert (model_dir / "saved_model" / "pretrainer" / "saved_model.pb").exists()


def test_ctrl_c_says_which_checkpoint_is_kept(tmp_path):
    # Issue 49, item 11: Ctrl-C during the backend measurement said "the
    # last checkpoint is the one to resume from" when there was none.
    assert pretrain.interrupted_line(str(tmp_path)) == (
        "Interrupted before the first checkpoint; nothing to resume from."
    )
    for step in ("ckpt-00000500", "ckpt-00001000", "ckpt-00001000.tmp-1"):
        (tmp_path / "checkpoints" / step).mkdir(parents=True)
    assert pretrain.interrupted_line(str(tmp_path)) == (
        f"Interrupted without saving; the newest checkpoint, {tmp_path}/checkpoints/"
        "ckpt-00001000, is the one the same command resumes from."
    )
