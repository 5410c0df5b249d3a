"""End-to-end runs of `run_pretraining` on a tiny corpus and model."""

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest
import yaml

from keras_bert.pretraining import CheckpointManager, ConfigError, run_pretraining
from tests.pretraining.conftest import (
    VOCAB,
    StepRecorder,
    tiny_cli_args,
    tiny_config,
    tiny_overrides,
)


def read_scalars(log_dir):
    import tensorflow as tf

    scalars = {}
    for path in tf.io.gfile.glob(os.path.join(log_dir, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append(
                    (event.step, float(tf.make_ndarray(value.tensor)))
                )
    return scalars


def test_finishes_all_phases(full_run):
    config, results, _ = full_run
    state = results["state"]
    assert state.step == 9 and state.finished
    assert int(results["pretraining"].model.optimizer.iterations) == 9
    assert set(results["eval"]) == {0, 1}
    # The run trains on the default's sampled softmax; held-out batches are
    # scored over the whole vocabulary: a full-softmax loss (~log 30,522 =
    # 10.3 this early), not the 2,048 candidates' (~log 2,048 = 7.6).
    assert config.sampled_softmax_candidates == 2048
    for metrics in results["eval"].values():
        assert 0.0 <= metrics["mlm_accuracy"] <= 1.0
        assert metrics["mlm_loss"] > 9.0
        # The default config has no next-sentence task: nothing to report.
        assert config.data.next_sentence_rate == 0
        assert "nsp_accuracy" not in metrics


def test_phase_switch_at_the_right_step(full_run):
    config, results, recorder = full_run
    # Phase 0 runs updates 0..5 at 32 tokens, phase 1 updates 6..8 at 64.
    assert recorder.seen == list(range(9))
    scalars = read_scalars(os.path.join(config.model_dir, "logs", "train"))
    phase_by_step = dict(scalars["phase"])
    assert phase_by_step[2] == 0 and phase_by_step[6] == 0
    assert phase_by_step[8] == 1 and phase_by_step[9] == 1


def test_tensorboard_scalars(full_run):
    config, _, _ = full_run
    scalars = read_scalars(os.path.join(config.model_dir, "logs", "train"))
    for tag in (
        "loss",
        "mlm_loss",
        "mlm_accuracy",
        "learning_rate",
        "examples_per_second",
        "tokens_per_second",
        "phase",
    ):
        assert tag in scalars, tag
    # One continuous schedule: warmup 2, linear decay to 0 at step 9.
    learning_rate = dict(scalars["learning_rate"])
    np.testing.assert_allclose(learning_rate[2], 1e-3, rtol=1e-5)
    np.testing.assert_allclose(learning_rate[6], 1e-3 * 3 / 7, rtol=1e-5)
    np.testing.assert_allclose(learning_rate[9], 0.0, atol=1e-9)
    assert read_scalars(os.path.join(config.model_dir, "logs", "eval"))


def test_outputs_written(full_run):
    config, results, _ = full_run
    model_dir = config.model_dir
    assert os.path.exists(os.path.join(model_dir, "config.yaml"))
    backbone = keras.saving.load_model(os.path.join(model_dir, "backbone.keras"))
    assert backbone.vocabulary[:1] == ["[PAD]"]
    pretrainer = keras.saving.load_model(os.path.join(model_dir, "pretrainer.keras"), compile=False)
    assert pretrainer.count_params() == results["pretraining"].model.count_params()
    # Issue 82 item 10: a fresh interpreter loads both, compiled as saved,
    # after nothing but `import keras_bert`.
    load = (
        "import keras, keras_bert, sys; "
        "print(*(type(keras.saving.load_model(p)).__name__ for p in sys.argv[1:]))"
    )
    paths = [os.path.join(model_dir, f"{name}.keras") for name in ("backbone", "pretrainer")]
    done = subprocess.run([sys.executable, "-c", load, *paths], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-2:] == ["BertBackbone", "BertPretrainer"]
    if keras.backend.backend() != "torch":
        for name in ("backbone", "pretrainer"):
            assert os.path.exists(os.path.join(model_dir, "saved_model", name, "saved_model.pb"))
    steps = [s for s, _ in CheckpointManager(os.path.join(model_dir, "checkpoints")).checkpoints()]
    assert steps == [6, 9]  # keep=2; every 3 steps and at each phase end
    state = CheckpointManager.read_state(os.path.join(model_dir, "checkpoints", "ckpt-00000009"))
    assert state["finished"] and state["phase"] == 2


def copy_of_full_run(full_run, tmp_path, tiny_corpus):
    """A finished run to rerun, without training one: `full_run`'s folder
    copied, and its config with no evaluation (a key reruns may change)."""
    shutil.copytree(full_run[0].model_dir, tmp_path / "run")
    return tiny_config(tmp_path, tiny_corpus, eval_steps=0)


class SignalAt(keras.callbacks.Callback):
    def __init__(self, step, signum=signal.SIGTERM):
        super().__init__()
        self.step = step
        self.signum = signum

    def on_train_batch_end(self, batch, logs=None):
        if int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) == self.step:
            os.kill(os.getpid(), self.signum)


def interrupted_run(tmp_path, tiny_corpus, signum):
    """A tiny run sent `signum` after update 4: it saves and returns."""
    keras.utils.set_random_seed(7)
    # No evaluation: it does not touch the weights, and it halves the time.
    config = tiny_config(tmp_path, tiny_corpus, eval_steps=0)
    # What Ctrl-C did before (SIG_IGN when the shell started us in the
    # background) is what it does after the run.
    int_handler = signal.getsignal(signal.SIGINT)
    first = run_pretraining(config, verbose=0, callbacks=[SignalAt(4, signum)])
    assert first["preempted"]
    assert signal.getsignal(signal.SIGINT) is int_handler
    # The flag is seen at the next batch boundary: saved after update 5.
    latest = CheckpointManager(os.path.join(config.model_dir, "checkpoints")).latest()
    assert json.load(open(os.path.join(latest, "state.json")))["step"] == 5
    return config


@pytest.mark.backend_independent
def test_ctrl_c_saves_and_stops_as_sigterm_does(tmp_path, tiny_corpus):
    # The same flag and checkpoint; the resume after it is the one below.
    interrupted_run(tmp_path, tiny_corpus, signal.SIGINT)


@pytest.mark.backend_independent
def test_signal_then_resume_matches_uninterrupted_run(full_run, tmp_path, tiny_corpus):
    reference = full_run[1]["pretraining"].model
    config = interrupted_run(tmp_path, tiny_corpus, signal.SIGTERM)

    # Same global seed as the first run: `pipelines` derives its stateless
    # mask seeds from `data.seed` *and* TensorFlow's global seed (a fresh
    # CLI process always has the same one).
    keras.utils.set_random_seed(7)
    recorder = StepRecorder()
    second = run_pretraining(config, verbose=0, callbacks=[recorder])
    assert recorder.seen == list(range(5, 9))
    assert second["state"].step == 9 and second["state"].finished
    resumed = second["pretraining"].model
    # Same weights, optimizer moments and step as the uninterrupted run:
    # same data position, schedule position, optimizer state and the
    # sampled softmax's draws (their seed state is in the checkpoint).
    for a, b in zip(reference.get_weights(), resumed.get_weights()):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6)
    for a, b in zip(reference.optimizer.variables, resumed.optimizer.variables):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b), rtol=2e-4, atol=2e-6
        )

    # A third run finds the finished state and does nothing.
    third = run_pretraining(config, verbose=0)
    assert third["state"].finished and not third["eval"]
    assert not any(second["eval"].values())  # eval_steps=0


@pytest.mark.backend_independent
def test_console_lines_held_out_curve_and_fill_mask(tmp_path, tiny_corpus, capsys):
    config = tiny_config(
        tmp_path, tiny_corpus, eval_every_steps=2, fill_mask_probes=["the [MASK] of the [MASK] ."]
    )
    results = run_pretraining(config)
    out = capsys.readouterr().out
    assert "step 2/9  phase 0 (seq 32)  loss " in out
    assert "step 8/9  phase 1 (seq 64)" in out
    # Each step line ends with the time so far and an estimate of the rest.
    assert re.search(r"seq/s  (\d+ min )?\d+ s elapsed, ~(\d+ min )?\d+ s left", out)
    assert "Epoch" not in out
    # Held-out inside the phases at multiples of 2 (phase ends apart).
    held_out = [line for line in out.splitlines() if "| held-out" in line]
    assert [line.split("/")[0] for line in held_out] == ["step 2", "step 4", "step 8"]
    scalars = read_scalars(os.path.join(config.model_dir, "logs", "eval"))
    assert [s for s, _ in sorted(scalars["mlm_accuracy_seq32"])] == [2, 4, 6]
    assert [s for s, _ in sorted(scalars["mlm_accuracy_seq64"])] == [8, 9]
    # Two [MASK]s: five fillers each, for the trained and the fresh model.
    for name in ("trained", "untrained"):
        (fillers_per_mask,) = results["fill_mask"][name]
        assert [len(f) for f in fillers_per_mask] == [5, 5]
        assert f"{name}: " in out


def test_fill_mask_reads_each_mask_position():
    from keras_bert import BertBackbone
    from keras_bert.models import BertPretrainer
    from keras_bert.pretraining.fill_mask import fill_mask
    from pipelines import BertTokenizer

    tokenizer = BertTokenizer("data/vocab/bert_uncased_vocab.txt")
    model = BertPretrainer(
        BertBackbone(
            vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32
        )
    )
    states = tokenizer.token_to_id("states")
    bias = np.zeros(30522, "float32")
    bias[states] = 50.0
    (output_bias,) = [w for w in model.mlm_head.weights if w.path.endswith("output_bias")]
    output_bias.assign(bias)
    (sentence,) = fill_mask(model, tokenizer, ["[MASK] of the united [MASK]"], top_k=3)
    assert len(sentence) == 2
    for fillers in sentence:
        assert fillers[0][0] == "states" and fillers[0][1] > 0.99
        assert len(fillers) == 3


def test_fill_mask_batch_answers_as_each_sentence_alone():
    # The probes run as one padded batch: a shorter sentence, or one with
    # fewer [MASK]s, gets what it gets on its own (padding masked out).
    from keras_bert import BertBackbone
    from keras_bert.models import BertPretrainer
    from keras_bert.pretraining.fill_mask import fill_mask
    from pipelines import BertTokenizer

    tokenizer = BertTokenizer("data/vocab/bert_uncased_vocab.txt")
    keras.utils.set_random_seed(1)
    model = BertPretrainer(
        BertBackbone(
            vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32
        )
    )
    sentences = [
        "she opened the door and walked into the [MASK] , then sat [MASK] .",
        "the [MASK] said .",
        "[MASK] of the united [MASK] and the [MASK] of",
    ]
    batched = fill_mask(model, tokenizer, sentences, top_k=4)
    for sentence, answers in zip(sentences, batched):
        (alone,) = fill_mask(model, tokenizer, [sentence], top_k=4)
        assert len(answers) == sentence.count("[MASK]")
        for got, expected in zip(answers, alone):
            assert [t for t, _ in got] == [t for t, _ in expected]
            np.testing.assert_allclose([p for _, p in got], [p for _, p in expected], rtol=1e-4)


@pytest.mark.backend_independent
def test_rerun_after_kill_during_export_finishes(tmp_path, tiny_corpus, monkeypatch):
    from keras_bert.pretraining import runner as pretraining_runner

    config = tiny_config(tmp_path, tiny_corpus, eval_steps=0)
    model_dir = config.model_dir

    def killed_mid_export(pretraining, model_dir):
        # What `kill -9` leaves: a temporary .keras sibling, a SavedModel
        # half written in place (older runs) or in a temporary folder.
        open(os.path.join(model_dir, ".backbone.keras.x1.tmp.keras"), "w").close()
        os.makedirs(os.path.join(model_dir, "saved_model", ".tmp-pretrainer-x"))
        if keras.backend.backend() != "torch":  # No SavedModel on torch.
            os.makedirs(
                os.path.join(model_dir, "saved_model", "backbone", "variables", "variables_temp")
            )
        raise RuntimeError("killed")

    monkeypatch.setattr(pretraining_runner, "export_models", killed_mid_export)
    with pytest.raises(RuntimeError, match="killed"):
        run_pretraining(config, verbose=0)
    monkeypatch.undo()

    results = run_pretraining(config, verbose=0)
    assert results["state"].finished and results["state"].step == 9
    assert os.path.exists(os.path.join(model_dir, "backbone.keras"))
    assert not glob.glob(os.path.join(model_dir, ".*"))
    assert not glob.glob(os.path.join(model_dir, "saved_model", ".*"))
    assert not glob.glob(os.path.join(model_dir, "**", "variables_temp"), recursive=True)
    assert run_pretraining(config, verbose=0)["state"].finished


@pytest.mark.backend_independent
def test_second_run_on_a_locked_model_dir_is_refused(tmp_path, tiny_corpus, capsys):
    import socket

    from keras_bert import pretrain

    model_dir = tmp_path / "run"
    model_dir.mkdir()
    # A live holder: this very process, as a concurrent run would be.
    lock = model_dir / "pretrain.lock"
    lock.write_text(f"{os.getpid()} {socket.gethostname()}\n")
    assert pretrain.main(tiny_cli_args(tmp_path, tiny_corpus)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err
    assert f"held by pid {os.getpid()}" in err and str(lock) in err
    assert not (model_dir / "checkpoints").exists()
    assert lock.exists()


@pytest.mark.backend_independent
def test_stale_lock_is_taken_over(full_run, tmp_path, tiny_corpus, capsys):
    import socket
    import subprocess

    dead = subprocess.Popen(["true"])
    dead.wait()
    config = copy_of_full_run(full_run, tmp_path, tiny_corpus)
    lock = tmp_path / "run" / "pretrain.lock"
    lock.write_text(f"{dead.pid} {socket.gethostname()}\n")
    assert run_pretraining(config, verbose=0)["state"].finished
    assert f"taking over the lock {lock} of pid {dead.pid}" in capsys.readouterr().err
    assert not lock.exists()  # Released at the end.


@pytest.mark.backend_independent
def test_corrupt_newest_checkpoint_falls_back_to_the_one_before(
    full_run, tmp_path, tiny_corpus, capsys
):
    config = copy_of_full_run(full_run, tmp_path, tiny_corpus)
    checkpoints = os.path.join(config.model_dir, "checkpoints")
    newest = os.path.join(checkpoints, "ckpt-00000009")
    weights = os.path.join(newest, "model.weights.h5")
    with open(weights, "r+b") as f:
        f.truncate(os.path.getsize(weights) // 2)
    capsys.readouterr()

    recorder = StepRecorder()
    results = run_pretraining(config, verbose=0, callbacks=[recorder])
    out = capsys.readouterr().out
    assert f"warning: checkpoint {newest} is unreadable" in out
    assert "Resuming from " + os.path.join(checkpoints, "ckpt-00000006") in out
    assert recorder.seen == [6, 7, 8]
    assert results["state"].finished and results["state"].step == 9

    for step in (6, 9):
        with open(os.path.join(checkpoints, f"ckpt-0000000{step}", "state.json"), "w") as f:
            f.write("{")
    with pytest.raises(ConfigError, match="No readable checkpoint in "):
        run_pretraining(config, verbose=0)


@pytest.mark.backend_independent
def test_rerun_with_a_config_that_changes_training_is_refused(
    full_run, tmp_path, tiny_corpus, capsys
):
    from keras_bert import pretrain

    config = copy_of_full_run(full_run, tmp_path, tiny_corpus)
    path = os.path.join(config.model_dir, "config.yaml")
    recorded = open(path).read()
    capsys.readouterr()

    def rerun(**changes):
        code = pretrain.main(tiny_cli_args(tmp_path, tiny_corpus, **{"eval_steps": 0, **changes}))
        assert open(path).read() == recorded  # Written once.
        return code, capsys.readouterr()

    # Checkpoints at seq 32 / batch 4 resumed at seq 128 / batch 2.
    code, out = rerun(**{"phases.0.seq_len": 128, "phases.0.batch_size": 2})
    assert code == 2
    err = out.err.strip()
    assert err.startswith("error: ") and "\n" not in err
    assert "phases.0.batch_size: 4 -> 2; phases.0.seq_len: 32 -> 128." in err
    assert "Traceback" not in out.out + out.err

    code, out = rerun(model="bert_mini")
    assert code == 2 and "model: 'bert_tiny' -> 'bert_mini'" in out.err

    code, out = rerun(**{"model_overrides": {"dropout": 0.1}})
    assert code == 2 and "model_overrides.dropout" in out.err

    # Evaluation, checkpoint rotation and a warm start that the
    # checkpoints supersede are not training.
    code, out = rerun(
        eval_steps=3, init_checkpoint=str(tmp_path / "none"), **{"checkpoint.keep": 5}
    )
    assert code == 0 and "Already finished at step 9" in out.out


def test_config_records_the_backend_and_precision(full_run):
    recorded = yaml.safe_load(open(os.path.join(full_run[0].model_dir, "config.yaml")))
    assert recorded["trained_under"] == {
        "backend": keras.backend.backend(),
        "precision": "float32",
    }


def test_resume_under_another_backend_or_precision_is_refused(
    full_run, tmp_path, tiny_corpus, capsys
):
    from keras_bert import pretrain

    config = copy_of_full_run(full_run, tmp_path, tiny_corpus)
    path = os.path.join(config.model_dir, "config.yaml")
    recorded = yaml.safe_load(open(path))
    now = keras.backend.backend()
    other = "jax" if now == "tensorflow" else "tensorflow"
    argv = tiny_cli_args(tmp_path, tiny_corpus, eval_steps=0)

    def record(**trained_under):
        with open(path, "w") as f:
            yaml.safe_dump({**recorded, "trained_under": trained_under}, f, sort_keys=False)

    record(backend=other, precision="float32")
    assert cli_error(argv, capsys) == (
        f"error: {config.model_dir} was trained under the {other} backend ({path}), "
        f"this run has {now}: set KERAS_BACKEND={other} to resume it, or use a new "
        "model_dir (or --overwrite)."
    )
    record(backend=now, precision="mixed_bfloat16")
    err = cli_error(argv, capsys)
    assert f"was trained in mixed_bfloat16 ({path}); here precision=" in err
    assert "resolves to float32: resume it where it resolves to mixed_bfloat16" in err

    # A run folder written before the record: resumed as it was.
    with open(path, "w") as f:
        yaml.safe_dump({k: v for k, v in recorded.items() if k != "trained_under"}, f)
    assert pretrain.main(argv) == 0
    assert "Already finished at step 9" in capsys.readouterr().out
    # A run's config.yaml is a config: the record is not a setting.
    record(backend=other, precision="float32")
    from keras_bert.pretraining import load_pretraining_config

    assert load_pretraining_config(path).model_dir == recorded["model_dir"]


def folder_contents(folder):
    """Every file under `folder` with its bytes."""
    return {
        os.path.relpath(os.path.join(root, name), folder): open(
            os.path.join(root, name), "rb"
        ).read()
        for root, _, names in os.walk(folder)
        for name in names
    }


@pytest.mark.backend_independent  # Which files go.
def test_overwrite_starts_afresh_and_removes_the_replaced_run(
    full_run, tmp_path, tiny_corpus, capsys
):
    from keras_bert import pretrain

    config = copy_of_full_run(full_run, tmp_path, tiny_corpus)
    # The run's logs moved out and linked back (issue 67 item 2: removing
    # the replaced run emptied the link's target).
    outside_logs = tmp_path / "outside_logs"
    shutil.move(os.path.join(config.model_dir, "logs"), outside_logs)
    os.symlink(outside_logs, os.path.join(config.model_dir, "logs"))
    logs_before = folder_contents(outside_logs)
    # The user's files beside the run (issue 67 item 3: set aside and
    # deleted with it, by a guess at names).
    users = {"eval_x.md": b"e", "predictions_y.jsonl": b"{}", "vocab.txt": b"[PAD]"}
    for name, content in users.items():
        with open(os.path.join(config.model_dir, name), "wb") as f:
            f.write(content)
    before = folder_contents(config.model_dir)
    # A change a resuming rerun refuses (test above); a fresh run may make it.
    argv = tiny_cli_args(tmp_path, tiny_corpus, eval_steps=0, **{"optimizer.learning_rate": 5e-3})
    assert pretrain.main(argv) == 2
    assert folder_contents(config.model_dir) == before
    capsys.readouterr()

    assert pretrain.main([*argv, "--overwrite", "--set", "checkpoint.keep=5"]) == 0
    out = capsys.readouterr().out
    assert "Resuming" not in out and "Already finished" not in out
    assert f"set aside in {os.path.join(config.model_dir, '.previous-run')}" in out
    assert "Removed the replaced run's " in out
    recorded = yaml.safe_load(open(os.path.join(config.model_dir, "config.yaml")))
    assert recorded["optimizer"]["learning_rate"] == 5e-3
    # Trained from step 0: every checkpoint is this run's (keep=5 keeps
    # 3, 6, 9; the replaced run kept two), and nothing of the old is left.
    checkpoints = sorted(os.listdir(os.path.join(config.model_dir, "checkpoints")))
    assert checkpoints == ["ckpt-00000003", "ckpt-00000006", "ckpt-00000009"]
    assert not glob.glob(os.path.join(config.model_dir, ".previous-run*"))
    assert folder_contents(outside_logs) == logs_before
    assert {name: before[name] for name in users} == users
    assert all(folder_contents(config.model_dir)[name] == users[name] for name in users)
    assert not any(name in out.split("Removed the replaced run's ")[1] for name in users)
    assert (
        open(os.path.join(config.model_dir, "backbone.keras"), "rb").read()
        != before["backbone.keras"]
    )
    # The new run resumes as any run does.
    assert pretrain.main([*argv, "--set", "checkpoint.keep=5"]) == 0
    assert "Already finished at step 9" in capsys.readouterr().out


class FailAtStep(keras.callbacks.Callback):
    def __init__(self, step):
        super().__init__()
        self.step = step

    def on_train_batch_begin(self, batch, logs=None):
        if int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) == self.step:
            raise RuntimeError("failed")


@pytest.mark.backend_independent
def test_overwrite_that_stops_before_its_first_checkpoint_puts_the_run_back(
    full_run, tmp_path, tiny_corpus, capsys
):
    config = copy_of_full_run(full_run, tmp_path, tiny_corpus)
    before = folder_contents(config.model_dir)
    with pytest.raises(RuntimeError, match="failed"):
        run_pretraining(config, verbose=0, overwrite=True, callbacks=[FailAtStep(1)])
    assert "The replaced run is back" in capsys.readouterr().out
    assert folder_contents(config.model_dir) == before

    # What kill -9 leaves before the first checkpoint: the run set aside
    # (and its journal), the new run's config and logs.
    from keras_bert.pretraining.run_kind import PRETRAINING_RUN
    from keras_bert.runs.replaced_run import ReplacedRun
    from keras_bert.runs.run_folder import RunFolder

    folder = RunFolder(config.model_dir, PRETRAINING_RUN)
    ReplacedRun(folder, replace=True, until="its first checkpoint", say=print).start()
    with open(os.path.join(config.model_dir, "config.yaml"), "w") as f:
        f.write("phases: []\n")
    os.makedirs(os.path.join(config.model_dir, "logs", "train"))
    results = run_pretraining(config, verbose=0)  # A plain rerun: the old run back, resumed.
    out = capsys.readouterr().out
    assert "that did not finish was undone" in out and "Already finished at step 9" in out
    assert results["state"].finished
    assert folder_contents(config.model_dir) == before


@pytest.mark.backend_independent
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_overwrite_stopped_before_its_first_checkpoint_puts_the_run_back(
    signum, full_run, tmp_path, tiny_corpus, capsys
):
    # Issue 67 item 4: the stop's own checkpoint was the first save, and it
    # discarded the replaced run.
    config = copy_of_full_run(full_run, tmp_path, tiny_corpus)
    before = folder_contents(config.model_dir)
    with pytest.raises(KeyboardInterrupt):
        run_pretraining(config, verbose=0, overwrite=True, callbacks=[SignalAt(1, signum)])
    out = capsys.readouterr().out
    assert "nothing of it is kept" in out and "The replaced run is back" in out
    assert "Removed the replaced run" not in out
    assert folder_contents(config.model_dir) == before
    assert not glob.glob(os.path.join(config.model_dir, ".previous-run*"))


@pytest.mark.backend_independent
def test_overwrite_warm_starts_from_the_replaced_runs_own_backbone(full_run, tmp_path, tiny_corpus):
    config = copy_of_full_run(full_run, tmp_path, tiny_corpus)
    backbone = os.path.join(config.model_dir, "backbone.keras")
    config = tiny_config(tmp_path, tiny_corpus, eval_steps=0, init_checkpoint=backbone)

    def embeddings(backbone):
        return keras.ops.convert_to_numpy(backbone.token_embedding.embeddings)

    trained = embeddings(full_run[1]["pretraining"].backbone)
    seen = []

    class FirstWeights(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            if not seen:
                seen.append(embeddings(self.model.backbone))

    results = run_pretraining(config, verbose=0, overwrite=True, callbacks=[FirstWeights()])
    assert results["state"].finished and results["state"].step == 9
    np.testing.assert_array_equal(seen[0], trained)
    assert not glob.glob(os.path.join(config.model_dir, ".previous-run*"))


@pytest.mark.backend_independent
def test_overwrite_is_refused_to_a_run_of_several_processes(tmp_path, tiny_corpus, monkeypatch):
    import types

    from keras_bert.pretraining import runner as pretraining_runner

    config = tiny_config(tmp_path, tiny_corpus)
    workers = types.SimpleNamespace(distribution=types.SimpleNamespace(processes=2))
    monkeypatch.setattr(pretraining_runner, "build_pretraining", lambda *args: workers)
    with pytest.raises(ConfigError, match="the other 1 process\\(es\\) of this run would read"):
        run_pretraining(config, overwrite=True)
    assert not os.path.exists(config.model_dir)


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "config, error",
    [
        ("task: sst2\n", "holds a fine-tuning run (task 'sst2')"),
        # Issue 67 item 3: a project's own config.yaml was set aside and
        # deleted as the run's.
        ("name: my project\n", "its config.yaml is not a keras_bert pre-training run's"),
    ],
)
def test_overwrite_refuses_a_folder_that_holds_no_pre_training_run(
    config, error, tmp_path, tiny_corpus, capsys
):
    from keras_bert import pretrain

    model_dir = tmp_path / "run"
    model_dir.mkdir()
    (model_dir / "config.yaml").write_text(config)
    (model_dir / "eval_x.md").write_text("e")
    assert pretrain.main([*tiny_cli_args(tmp_path, tiny_corpus), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert error in err and err.count("\n") == 1
    assert sorted(os.listdir(model_dir)) == ["config.yaml", "eval_x.md"]


def cli_error(argv, capsys):
    """Runs the CLI; asserts exit 2 and one `error:` line; returns it."""
    from keras_bert import pretrain

    code = pretrain.main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.startswith("error: ") and "\n" not in err, err
    return err


@pytest.mark.backend_independent
def test_config_file_not_utf8_is_one_line_exit_2(tmp_path, capsys):
    path = tmp_path / "recipe.yaml"
    path.write_bytes(b"train_steps: 9\nmodel: bert_\xff\xfe\n")
    err = cli_error(["--config", str(path)], capsys)
    assert f"{path}: line 2 is not UTF-8 (byte 0xff at column 13)" in err


@pytest.mark.backend_independent
def test_model_dir_that_is_a_file_is_one_line_exit_2(tmp_path, tiny_corpus, capsys):
    (tmp_path / "run").write_text("not a folder")
    err = cli_error(tiny_cli_args(tmp_path, tiny_corpus), capsys)
    assert "Cannot create model_dir" in err
    assert f"model_dir={str(tmp_path / 'run')!r}" in err


@pytest.mark.backend_independent
@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_read_only_model_dir_is_one_line_exit_2(tmp_path, tiny_corpus, capsys):
    (tmp_path / "run").mkdir(mode=0o555)
    err = cli_error(tiny_cli_args(tmp_path, tiny_corpus), capsys)
    assert "Cannot write in model_dir" in err


@pytest.mark.backend_independent
@pytest.mark.parametrize("damage", ["garbage", "truncated", "bad_crc"])
def test_damaged_init_checkpoint_is_one_line_exit_2(damage, tmp_path, tiny_corpus, capsys):
    from keras_bert.pretraining import build_backbone

    path = str(tmp_path / "backbone.keras")
    build_backbone(tiny_config(tmp_path, tiny_corpus)).save(path)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        if damage == "garbage":
            f.truncate(0)
            f.write(b"garbage\n")
        elif damage == "truncated":
            f.truncate(size // 2)
        else:  # Same length, flipped bytes inside the weights member.
            f.seek(size // 2)
            data = f.read(64)
            f.seek(size // 2)
            f.write(bytes(b ^ 0xFF for b in data))
    err = cli_error(tiny_cli_args(tmp_path, tiny_corpus, init_checkpoint=path), capsys)
    assert f"init_checkpoint {path!r} cannot be loaded" in err
    # Issue 67 item 13: Keras calls a damaged archive "File not found".
    assert "File not found" not in err and ".keras archive" in err


def test_unreachable_init_checkpoint_is_one_line_exit_2(tmp_path, tiny_corpus, capsys, monkeypatch):
    import tensorflow as tf

    isdir = tf.io.gfile.isdir

    def unreachable(path):
        if path.startswith("gs://"):
            raise tf.errors.FailedPreconditionError(
                None, None, "Error executing an HTTP request: libcurl code 6"
            )
        return isdir(path)

    monkeypatch.setattr(tf.io.gfile, "isdir", unreachable)
    argv = tiny_cli_args(tmp_path, tiny_corpus, init_checkpoint="gs://bucket/run")
    err = cli_error(argv, capsys)
    assert "init_checkpoint 'gs://bucket/run' cannot be read: Error executing" in err


@pytest.mark.parametrize(
    "pattern, reason",
    [
        ("foo://bucket/corpus/*.txt", "no file system plugin for foo://"),
        ("gs://bucket/corpus/*.txt", "Could not resolve hostname"),
    ],
)
def test_train_files_on_an_unknown_or_unreachable_file_system_is_one_line_exit_2(
    pattern, reason, tmp_path, capsys, monkeypatch
):
    import tensorflow as tf

    glob = tf.io.gfile.glob

    def unreachable(path):
        if path.startswith("gs://"):
            raise tf.errors.FailedPreconditionError(
                None, None, "Error executing an HTTP request: Could not resolve hostname"
            )
        return glob(path)

    monkeypatch.setattr(tf.io.gfile, "glob", unreachable)
    err = cli_error(tiny_cli_args(tmp_path, pattern), capsys)
    assert f"Cannot read corpus files {pattern!r}" in err and reason in err


def small_vocabulary(tmp_path):
    """The bundled vocabulary cut to 4,000 tokens: its special tokens and
    every word of `tiny_corpus`."""
    with open(VOCAB, encoding="utf-8") as f:
        tokens = f.read().splitlines()[:4000]
    path = tmp_path / "small_vocab.txt"
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return str(path)


@pytest.mark.backend_independent
def test_custom_vocabulary_sizes_the_model_and_exports(tmp_path, tiny_corpus):
    from keras_bert.serving import export_for_serving

    config = tiny_config(tmp_path, tiny_corpus, **{"data.vocab_file": small_vocabulary(tmp_path)})
    run_pretraining(config, verbose=0)

    backbone = keras.saving.load_model(os.path.join(config.model_dir, "backbone.keras"))
    assert backbone.vocabulary_size == len(backbone.vocabulary) == 4000
    exported = export_for_serving(backbone, str(tmp_path / "serving"))
    assert os.path.exists(os.path.join(exported, "saved_model.pb"))


@pytest.mark.backend_independent
def test_vocabulary_size_override_that_disagrees_is_one_line_exit_2(tmp_path, tiny_corpus, capsys):
    overrides = {
        **tiny_overrides(tmp_path, tiny_corpus)["model_overrides"],
        "vocabulary_size": 30522,
    }
    err = cli_error(
        tiny_cli_args(
            tmp_path,
            tiny_corpus,
            model_overrides=overrides,
            **{"data.vocab_file": small_vocabulary(tmp_path)},
        ),
        capsys,
    )
    assert err == (
        "error: data.vocab_file has 4000 tokens but "
        "model_overrides.vocabulary_size is 30522; drop the override (the "
        "model takes its size from the vocabulary)."
    )


@pytest.mark.backend_independent
def test_model_override_typo_is_one_line_exit_2(tmp_path, tiny_corpus, capsys):
    overrides = {**tiny_overrides(tmp_path, tiny_corpus)["model_overrides"], "hidden_dimm": 3}
    err = cli_error(tiny_cli_args(tmp_path, tiny_corpus, model_overrides=overrides), capsys)
    assert err.startswith(
        "error: model_overrides: unknown key 'hidden_dimm' (known: attention_dropout, dropout, "
        "gated_feedforward, hidden_activation, hidden_dim,"
    )


def test_float16_without_a_gpu_is_one_line_exit_2(tmp_path, tiny_corpus, capsys):
    from keras_bert.runtime import hardware

    if hardware.accelerator() == "gpu":
        pytest.skip("float16 is fine on a GPU")
    err = cli_error(tiny_cli_args(tmp_path, tiny_corpus, precision="mixed_float16"), capsys)
    assert err.startswith("error: precision=mixed_float16 needs a GPU")
    assert not (tmp_path / "run").exists()


@pytest.mark.backend_independent
def test_corpus_that_tokenizes_to_nothing_is_one_line_exit_2(tmp_path, capsys):
    # It used to spin forever looking for a first document.
    for i in range(3):
        (tmp_path / f"d{i}.txt").write_text(("\u200b" * 40 + "\n") * 10)
    corpus = str(tmp_path / "*.txt")
    err = cli_error(tiny_cli_args(tmp_path, corpus), capsys)
    assert err.startswith(f"error: Every corpus file matching {corpus!r} is empty or blank")


@pytest.mark.backend_independent
def test_large_corpus_that_tokenizes_to_nothing_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    # Too large for the start-up check: it used to cycle through the files
    # forever, deaf to SIGTERM.
    from pipelines import corpus_files

    monkeypatch.setattr(corpus_files, "_BLANK_CHECK_BYTES", 16)
    for i in range(3):
        (tmp_path / f"d{i}.txt").write_text(("\u200b" * 40 + "\n") * 10)
    corpus = str(tmp_path / "*.txt")
    err = cli_error(tiny_cli_args(tmp_path, corpus), capsys)
    assert err == (
        f"error: {corpus!r}: the corpus files yield no document; "
        "their text tokenizes to nothing (only blanks, control or "
        "zero-width characters?)."
    )
    # A first run that failed before its first checkpoint leaves no folder.
    assert not (tmp_path / "run").exists()


@pytest.mark.backend_independent
def test_finetuning_folder_is_one_line_exit_2(tmp_path, tiny_corpus, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.yaml").write_text("task: sst2\ndata: {}\n")
    err = cli_error(tiny_cli_args(tmp_path, tiny_corpus), capsys)
    assert err == (
        f"error: model_dir {str(tmp_path / 'run')!r} holds a fine-tuning "
        "run (task 'sst2'); pre-train into another folder."
    )
    assert (tmp_path / "run" / "config.yaml").read_text() == "task: sst2\ndata: {}\n"
    assert sorted(os.listdir(tmp_path / "run")) == ["config.yaml"]


def test_checkpoint_without_seed_state_resumes_with_a_warning(tmp_path, capsys):
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(4), keras.layers.Dropout(0.5), keras.layers.Dense(1)]
    )
    model.compile(optimizer="adam", loss="mse")
    manager = CheckpointManager(str(tmp_path))
    path = manager.save(model, {"step": 3})
    os.remove(os.path.join(path, "seeds.json"))

    assert CheckpointManager.restore(model, path)["step"] == 3
    assert capsys.readouterr().out == (
        f"warning: {path} has no seeds.json: resuming with fresh dropout "
        "seeds, so the run will not repeat an uninterrupted one exactly.\n"
    )


@pytest.mark.backend_independent
def test_checkpoint_left_incomplete_by_a_crash_is_removed_on_start(ram_dir):
    import tensorflow as tf

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    directory = f"{ram_dir}/checkpoints"
    CheckpointManager(directory).save(model, {"step": 3})
    # A crash while the files of step 6 moved in one by one (an object
    # store renames no directory): its state.json never arrived.
    tf.io.gfile.makedirs(f"{directory}/ckpt-00000006")
    tf.io.gfile.copy(
        f"{directory}/ckpt-00000003/model.weights.h5", f"{directory}/ckpt-00000006/model.weights.h5"
    )
    assert [step for step, _ in CheckpointManager(directory, is_chief=False).checkpoints()] == [3]
    CheckpointManager(directory)
    assert tf.io.gfile.listdir(directory) == ["ckpt-00000003"]


@pytest.mark.backend_independent
def test_full_disk_is_one_line_and_leaves_no_partial_checkpoint(tmp_path, tiny_corpus, small_disk):
    # 3 MiB: full at the first checkpoint of the tiny model.
    model_dir = small_disk("3m") / "run"
    argv = tiny_cli_args(tmp_path, tiny_corpus) + ["--model_dir", str(model_dir)]
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert.pretrain", *argv],
        capture_output=True,
        text=True,
        cwd=os.getcwd(),
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: no space left on device in {model_dir}; no partial checkpoint or "
        "export is kept. Free space and run the same command to resume from the "
        "last checkpoint."
    )
    # Nothing saved, so nothing of this first run is kept: no folder.
    assert not model_dir.exists()


def test_outputs_follow_the_umask(full_run):
    config = full_run[0]
    modes = {}
    for folder, dirs, files in os.walk(config.model_dir):
        for name in dirs + files:
            path = os.path.join(folder, name)
            modes[os.path.relpath(path, config.model_dir)] = os.stat(path).st_mode & 0o777
    for path in (
        "checkpoints/ckpt-00000009",
        "checkpoints/ckpt-00000009/model.weights.h5",
        "config.yaml",
        "backbone.keras",
        "pretrainer.keras",
    ):
        assert path in modes
    if keras.backend.backend() != "torch":
        assert "saved_model/backbone/saved_model.pb" in modes
    wrong = {
        p: oct(m)
        for p, m in modes.items()
        if m != (0o755 if os.path.isdir(os.path.join(config.model_dir, p)) else 0o644)
    }
    assert not wrong


@pytest.mark.skipif(
    keras.backend.backend() == "torch",
    reason="torch's Dropout(seed=None) draws from torch's global generator, "
    "which is not part of the model",
)
def test_data_seed_makes_runs_repeat_and_resume_exactly(tmp_path, tiny_corpus):
    dropout = {
        "num_layers": 1,
        "hidden_dim": 16,
        "num_heads": 2,
        "intermediate_dim": 32,
        "dropout": 0.1,
    }

    def run(name, seed, **kwargs):
        keras.utils.set_random_seed(seed)  # Overridden by data.seed.
        config = tiny_config(tmp_path / name, tiny_corpus, eval_steps=0, model_overrides=dropout)
        return run_pretraining(config, verbose=0, **kwargs)

    # Same initial weights and dropout masks: the run repeats. Same
    # dropout state after resuming: resumed equals uninterrupted.
    uninterrupted = run("a", 1)["pretraining"].model
    assert run("b", 2, callbacks=[SignalAt(4)])["preempted"]
    resumed = run("b", 3)["pretraining"].model
    for a, b in zip(uninterrupted.weights, resumed.weights):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b), rtol=2e-4, atol=2e-6
        )


@pytest.mark.backend_independent
def test_longer_train_steps_only_with_the_flag(full_run, tmp_path, tiny_corpus, capsys):
    from keras_bert import pretrain

    config = copy_of_full_run(full_run, tmp_path, tiny_corpus)
    path = os.path.join(config.model_dir, "config.yaml")
    capsys.readouterr()
    longer = tiny_cli_args(
        tmp_path, tiny_corpus, eval_steps=0, train_steps=11, **{"phases.1.steps": 5}
    )

    assert pretrain.main(longer) == 2
    err = capsys.readouterr().err
    assert "train_steps: 9 -> 11" in err and "--allow_longer_train_steps" in err

    # Phase 0 would grow: the steps already trained would change phase.
    moved = tiny_cli_args(
        tmp_path, tiny_corpus, eval_steps=0, train_steps=11, **{"phases.0.steps": 8}
    )
    assert pretrain.main(moved + ["--allow_longer_train_steps"]) == 2
    assert "Only the last phase may grow" in capsys.readouterr().err

    assert pretrain.main(longer + ["--allow_longer_train_steps"]) == 0
    assert "train_steps: 11" in open(path).read()
    latest = CheckpointManager(os.path.join(config.model_dir, "checkpoints")).latest()
    state = CheckpointManager.read_state(latest)
    assert state["step"] == 11 and state["finished"] and state["phase"] == 2


@pytest.mark.backend_independent
def test_run_on_a_remote_file_system_resumes_after_an_interruption(ram_dir, tmp_path, tiny_corpus):
    """Corpus, vocabulary and model_dir on `ram://`, which stands in for
    `gs://`: paths with a scheme, no directory rename."""
    import socket

    import tensorflow as tf

    tf.io.gfile.makedirs(f"{ram_dir}/corpus")
    for path in glob.glob(tiny_corpus):
        tf.io.gfile.copy(path, f"{ram_dir}/corpus/{os.path.basename(path)}")
    tf.io.gfile.copy(VOCAB, f"{ram_dir}/vocab.txt")
    model_dir = f"{ram_dir}/run"
    config = tiny_config(
        tmp_path,
        f"{ram_dir}/corpus/*.txt",
        eval_steps=0,
        model_dir=model_dir,
        **{"data.vocab_file": f"{ram_dir}/vocab.txt"},
    )

    keras.utils.set_random_seed(7)
    assert run_pretraining(config, verbose=0, callbacks=[SignalAt(4)])["preempted"]
    assert [step for step, _ in CheckpointManager(f"{model_dir}/checkpoints").checkpoints()] == [
        3,
        5,
    ]
    assert tf.io.gfile.exists(f"{model_dir}/config.yaml")
    assert not tf.io.gfile.exists(f"{model_dir}/pretrain.lock")  # Released.

    # The lock and the recorded config are read back from there.
    lock = f"{model_dir}/pretrain.lock"
    with tf.io.gfile.GFile(lock, "w") as f:
        f.write(f"{os.getpid()} {socket.gethostname()}\n")
    with pytest.raises(ConfigError, match=f"{lock} is held by pid {os.getpid()}"):
        run_pretraining(config, verbose=0)
    tf.io.gfile.remove(lock)
    changed = tiny_config(
        tmp_path,
        f"{ram_dir}/corpus/*.txt",
        eval_steps=0,
        model_dir=model_dir,
        **{"data.vocab_file": f"{ram_dir}/vocab.txt", "optimizer.learning_rate": 2e-3},
    )
    with pytest.raises(ConfigError, match="optimizer.learning_rate: 0.001 -> 0.002"):
        run_pretraining(changed, verbose=0)

    keras.utils.set_random_seed(7)
    recorder = StepRecorder()
    results = run_pretraining(config, verbose=0, callbacks=[recorder])
    assert recorder.seen == list(range(5, 9))
    assert results["state"].step == 9 and results["state"].finished
    written = set(tf.io.gfile.listdir(model_dir))
    assert written == {
        "checkpoints",
        "config.yaml",
        "logs",
        "backbone.keras",
        "pretrainer.keras",
        "outputs.json",
        "saved_model",
    } - ({"saved_model"} if keras.backend.backend() == "torch" else set())
    assert sorted(tf.io.gfile.listdir(f"{model_dir}/checkpoints")) == [
        "ckpt-00000006",
        "ckpt-00000009",
    ]
    backbone = keras.saving.load_model(f"{model_dir}/backbone.keras")
    assert backbone.vocabulary[:1] == ["[PAD]"]
    if keras.backend.backend() != "torch":
        assert sorted(tf.io.gfile.listdir(f"{model_dir}/saved_model")) == ["backbone", "pretrainer"]
        assert tf.io.gfile.exists(f"{model_dir}/saved_model/backbone/saved_model.pb")
    assert read_scalars(f"{model_dir}/logs/train")["loss"]
