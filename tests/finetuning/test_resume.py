"""A fine-tuning run resumes where it stopped and can be watched (issue 79,
item 7): its checkpoints in `unfinished/` while it trains, its TensorBoard
scalars in `logs/`."""

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.finetuning.conftest import FIXTURES, finetune

# 200 sentences at batch 4: 50 updates an epoch, 150 in all; a checkpoint
# every 20, a TensorBoard point every 10.
EPOCHS, STEPS_PER_EPOCH = 3, 50
SETTINGS = [
    f"training.epochs={EPOCHS}",
    "training.log_every_steps=10",
    "checkpoint.every_steps=20",
]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """SST-2 files with 200 training sentences."""
    folder = tmp_path_factory.mktemp("data")
    (folder / "SST-2").mkdir()
    fixture = FIXTURES / "glue" / "SST-2"
    header, *rows = (fixture / "train.tsv").read_text().splitlines()
    lines = [header] + [f"{rows[i % len(rows)].split(chr(9))[0]} {i}\t{i % 2}" for i in range(200)]
    (folder / "SST-2" / "train.tsv").write_text("\n".join(lines) + "\n")
    shutil.copy(fixture / "dev.tsv", folder / "SST-2" / "dev.tsv")
    return folder


def argv(data_dir, checkpoint, model_dir):
    args = ["--task", "sst2", "--data_dir", data_dir, "--init_checkpoint", checkpoint]
    args += ["--model_dir", model_dir]
    for item in ["training.batch_size=4", "training.verbose=0", "export.enabled=false", *SETTINGS]:
        args += ["--set", item]
    return [str(a) for a in args]


def run(args, **kwargs):
    """`python -m keras_bert.finetune args` under this test's backend."""
    import keras

    env = {**os.environ, "KERAS_BACKEND": keras.backend.backend()}
    command = [sys.executable, "-m", "keras_bert.finetune", *args]
    if "stderr" in kwargs:
        return subprocess.Popen(command, env=env, **kwargs)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def checkpoints(model_dir):
    """The complete checkpoints of the run's unfinished folder."""
    folder = model_dir / "unfinished" / "checkpoints"
    return sorted(p.name for p in folder.glob("ckpt-*") if (p / "state.json").exists())


def scalars(folder):
    """`{tag: {step: value}}` of the TensorBoard event files in `folder`."""
    import tensorflow as tf

    found = {}
    for path in sorted(folder.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                found.setdefault(value.tag, {})[event.step] = float(tf.make_ndarray(value.tensor))
    return found


def weights(path):
    import keras

    return keras.saving.load_model(path, compile=False).get_weights()


def test_a_run_killed_mid_epoch_resumes_there_and_ends_as_an_unbroken_run(
    data_dir, checkpoint, tmp_path
):
    model_dir = tmp_path / "killed"
    with open(tmp_path / "killed.log", "w") as log:
        killed = run(argv(data_dir, checkpoint, model_dir), stderr=log)
        deadline = time.time() + 600
        while not checkpoints(model_dir) and killed.poll() is None:
            assert time.time() < deadline, "no checkpoint in 10 minutes"
            time.sleep(0.01)
        killed.kill()
        killed.wait()
    saved = checkpoints(model_dir)
    assert saved, (tmp_path / "killed.log").read_text()[-3000:]
    assert not (model_dir / "model.keras").exists()
    step = int(saved[-1].split("-")[1])
    assert 0 < step < EPOCHS * STEPS_PER_EPOCH

    resumed = run(argv(data_dir, checkpoint, model_dir))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    resumed_at = int(resumed.stderr.split("Resumed at step ")[1].split()[0])
    assert resumed_at >= step  # Its last checkpoint, perhaps one after the one seen.
    assert not (model_dir / "unfinished").exists()

    unbroken = tmp_path / "unbroken"
    expected = finetune("sst2", data_dir, checkpoint, unbroken, "training.epochs=3", *SETTINGS[1:])
    results = json.loads(resumed.stdout)
    assert results["accuracy"] == expected["accuracy"]
    assert results["train_steps"] == expected["train_steps"] == EPOCHS * STEPS_PER_EPOCH
    # The same weights: the data, optimizer, schedule and dropout went on
    # where they were (a resumed run that started its data over would not).
    # Two unbroken runs in two processes end bit for bit the same here.
    for got, want in zip(weights(model_dir / "model.keras"), weights(unbroken / "model.keras")):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)

    # Its TensorBoard scalars go on where the killed run's stopped.
    train, dev = scalars(model_dir / "logs" / "train"), scalars(model_dir / "logs" / "eval")
    assert max(train["loss"]) == EPOCHS * STEPS_PER_EPOCH
    assert {"learning_rate", "examples_per_second"} <= set(train)
    assert min(train["learning_rate"]) <= 10 < resumed_at
    assert sorted(dev["accuracy"]) == [50, 100, 150]  # Each epoch's end.
    assert dev["accuracy"][150] == pytest.approx(results["accuracy"])


@pytest.mark.backend_independent  # How a stop is saved; the resume's exactness is above.
def test_ctrl_c_saves_a_checkpoint_and_the_same_command_resumes(data_dir, checkpoint, tmp_path):
    model_dir = tmp_path / "stopped"
    args = argv(data_dir, checkpoint, model_dir) + ["--set", "checkpoint.every_steps=1000"]
    with open(tmp_path / "stopped.log", "w") as log:
        stopped = run(args, stderr=log)
        deadline = time.time() + 600
        # Training has begun once a TensorBoard point is written.
        while not list((model_dir / "unfinished" / "logs").glob("train/events*")):
            assert stopped.poll() is None and time.time() < deadline
            time.sleep(0.01)
        stopped.send_signal(signal.SIGINT)
        assert stopped.wait(timeout=300) == 130
    output = (tmp_path / "stopped.log").read_text()
    assert "the same command resumes there" in output, output[-3000:]
    assert checkpoints(model_dir) and not (model_dir / "model.keras").exists()
    # The run is no finished run: what it recorded is gone, its progress kept.
    assert not (model_dir / "config.yaml").exists()
    saved = model_dir / "unfinished" / "checkpoints" / checkpoints(model_dir)[-1] / "state.json"
    trained_before = json.loads(saved.read_text())["train_seconds"]
    assert trained_before > 0
    resumed = run(args)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Resumed at step" in resumed.stderr
    # Nothing from Keras' fit a user could mistake for a problem.
    assert "UserWarning" not in resumed.stderr, resumed.stderr[-3000:]
    # What the run cost counts the stopped process's training too.
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["train_seconds"] > trained_before


def test_a_run_of_another_recipe_replaces_the_unfinished_one_and_says_so(tmp_path, caplog):
    from keras_bert.finetuning.resume import UnfinishedRun, resume_key

    tree = {"training": {"epochs": 3, "verbose": 2}, "checkpoint": {"every_steps": 5}}
    run = UnfinishedRun(str(tmp_path), keep=2)
    run.take_up(resume_key(tree, 10))
    assert run.checkpoints.checkpoints() == []
    saved = tmp_path / "unfinished" / "checkpoints" / "ckpt-00000005"
    saved.mkdir()
    (saved / "state.json").write_text("{}")
    # How the run is watched or saved may change: it is the same run.
    watched = {"training": {"epochs": 3, "verbose": 0}, "checkpoint": {"every_steps": 50}}
    run.take_up(resume_key(watched, 10))
    assert run.checkpoints.checkpoints() == [(5, str(saved))]
    with caplog.at_level(logging.WARNING, logger="keras_bert.finetune"):
        run.take_up(resume_key({**tree, "training": {"epochs": 4}}, 10))
    assert "differs in training.epochs" in caplog.text
    assert run.checkpoints.checkpoints() == []
    assert not os.listdir(tmp_path / "unfinished" / "checkpoints")


def test_a_finished_run_leaves_its_logs_and_no_checkpoints(fine_tuned):
    model_dir, results = fine_tuned("sst2")
    from pathlib import Path

    model_dir = Path(model_dir)
    assert not (model_dir / "unfinished").exists()
    train = scalars(model_dir / "logs" / "train")
    assert {"loss", "learning_rate", "examples_per_second"} <= set(train)
    dev = scalars(model_dir / "logs" / "eval")
    assert dev["accuracy"] == {results["train_steps"]: pytest.approx(results["accuracy"])}
