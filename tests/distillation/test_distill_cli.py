"""`python -m keras_bert.distill`, run as a user runs it, and the student's
folder taken by the other commands, each its own process."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

from keras_bert.distill import main as distill
from keras_bert.distillation.runner import run_distillation
from keras_bert.distillation.teacher import REFUSED_HANDLERS
from pipelines.tasks import read_conll
from pipelines.transfer_set import read_shards
from tests.test_command_imports import heavy_imports

QUICK = ["training.epochs=1", "training.batch_size=4", "training.verbose=0"]


def command(module, *args):
    result = subprocess.run(
        [sys.executable, "-m", f"keras_bert.{module}", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=os.getcwd(),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def settings(*items):
    return [arg for item in QUICK + list(items) for arg in ("--set", item)]


@pytest.mark.backend_independent
def test_the_student_folder_is_a_fine_tuning_run_for_every_command(
    fine_tuned, checkpoint, fixtures, masked_lm, tmp_path
):
    teacher, _ = fine_tuned("sst2")
    text = tmp_path / "reviews.txt"
    text.write_text("a warm and funny film\nnothing works here\n")
    student = tmp_path / "student"
    argv = ["--teacher", teacher, "--init_checkpoint", checkpoint, "--model_dir", student]
    argv += ["--text", text, *settings("distillation.transfer.copies=2", "export.enabled=false")]
    argv += settings(
        "distillation.transfer.replace_probability=0.3",
        "distillation.transfer.replace_by=masked_lm_and_neighbours",  # TinyBERT's.
        f"distillation.transfer.masked_lm={masked_lm}",
    )
    results = json.loads(command("distill", *argv).stdout)
    assert results["train_examples"] == (6 + 2) * 3  # The training file's 6, the text's 2.
    config = (student / "config.yaml").read_text()
    assert f"teacher: {teacher}" in config and str(text) in config
    # Issue 82 item 10: `import keras_bert` alone loads the student in a
    # fresh interpreter, as it loads the fine-tuned teacher: compiled with
    # the task's loss (its training loss read the transfer set's targets).
    load = (
        "import keras, keras_bert, sys\n"
        "for path in sys.argv[1:]:\n"
        "    model = keras.saving.load_model(path)\n"
        "    print(type(model).__name__, type(model.loss).__name__)"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", load, student / "model.keras", teacher / "model.keras"],
        capture_output=True,
        text=True,
    )
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert loaded.stdout.splitlines() == ["BertClassifier SparseCategoricalCrossentropy"] * 2

    dev = fixtures / "glue" / "SST-2" / "dev.tsv"
    scores = json.loads(command("evaluate", "--model_dir", student, "--input", dev).stdout)
    assert scores["accuracy"] == results["accuracy"]
    command("predict", "--model_dir", student, "--input", dev, "--output", tmp_path / "p.jsonl")
    predicted = [json.loads(line) for line in open(tmp_path / "p.jsonl")]
    assert [p["prediction"] for p in predicted] == [
        json.loads(line)["prediction"] for line in open(student / "predictions.jsonl")
    ]
    command("export", "--model_dir", student, "--output", tmp_path / "served")
    assert os.listdir(tmp_path / "served") == ["1"]
    # convert answers the student's model as it answers any fine-tuned one
    # (a task model's conversion is issue 70's).
    answers = [
        subprocess.run(
            [sys.executable, "-m", "keras_bert.convert", "--input", model, "--output", out],
            capture_output=True,
            text=True,
        )
        for model, out in [
            (student / "model.keras", tmp_path / "hf_student"),
            (os.path.join(teacher, "model.keras"), tmp_path / "hf_teacher"),
        ]
    ]
    assert [a.returncode for a in answers] == [2, 2]
    assert answers[0].stderr.replace(str(student), "RUN") == answers[1].stderr.replace(
        str(teacher), "RUN"
    )

    # A rerun with another temperature takes up the teacher's labels.
    rerun = command("distill", *argv, "--set", "distillation.temperature=2")
    assert "24 of 24 sentences labelled before" in rerun.stderr
    # So does a student of another seed whose copies keep the first seed.
    seven = ["--set", "training.seed=7"]
    fixed = command("distill", *argv, *seven, "--set", "distillation.transfer.seed=0")
    assert "24 of 24 sentences labelled before" in fixed.stderr
    # Copies of another seed are labelled again.
    assert "labelled before" not in command("distill", *argv, *seven).stderr


def recorded_shards(folder):
    """The shards the transfer set's manifest records as written."""
    try:
        return len(json.loads((folder / "manifest.json").read_text())["shards"])
    except (OSError, ValueError, KeyError):  # Not there yet, or being replaced.
        return 0


@pytest.mark.backend_independent  # Shard files; the labelling's backend: the tests below.
def test_a_labelling_killed_by_sigkill_resumes_at_the_shards_it_had_not_written(
    fine_tuned, checkpoint, tmp_path
):
    teacher, _ = fine_tuned("sst2")
    text = tmp_path / "reviews.txt"
    text.write_text("".join(f"review {i} of a warm and funny film\n" for i in range(46)))
    size, shard_size = 6 + 46, 4  # The training file's 6, the text's 46: 13 shards.
    student = tmp_path / "student"
    argv = ["--teacher", teacher, "--init_checkpoint", checkpoint, "--model_dir", student]
    argv += ["--text", text, *settings("export.enabled=false")]
    argv += settings(f"distillation.transfer.shard_size={shard_size}")
    with open(tmp_path / "killed.log", "w") as log:
        killed = subprocess.Popen(
            [sys.executable, "-m", "keras_bert.distill", *map(str, argv)], stderr=log
        )
        shards = student / "transfer_set"
        deadline = time.time() + 600
        while not recorded_shards(shards) and killed.poll() is None:
            assert time.time() < deadline, "no shard written in 10 minutes"
            time.sleep(0.005)
        killed.kill()
        killed.wait()
    # A shard written but not yet recorded when the kill came is labelled
    # again, never trusted: the resumed run counts the recorded ones.
    written = recorded_shards(shards)
    assert 0 < written < size // shard_size, (tmp_path / "killed.log").read_text()[-3000:]

    resumed = command("distill", *argv)
    assert f"{written * shard_size} of {size} sentences labelled before" in resumed.stderr
    assert "taking over the lock" in resumed.stderr  # Not in stdout: the results.
    assert json.loads(resumed.stdout)["train_examples"] == size
    rows = list(read_shards(sorted(map(str, shards.glob("shard-*.tfrecord"))), 2))
    assert len(rows) == size and sum(int(r["has_label"]) for r in rows) == 6


@pytest.mark.backend_independent  # `FinetuneRun`'s resume, tested on every backend.
@pytest.mark.parametrize("intermediate", [[], ["distillation.intermediate.hidden_weight=1"]])
def test_a_student_killed_mid_training_resumes_at_its_last_checkpoint(
    intermediate, fine_tuned, checkpoint, tmp_path
):
    # Issue 79 item 7: a student's epoch over a large transfer set outlasts
    # a session. With an intermediate loss the model trained is the
    # `IntermediateDistiller` (its projections and their optimizer slots
    # too), which a resume once could not load its checkpoints into.
    teacher, _ = fine_tuned("sst2")
    text = tmp_path / "reviews.txt"
    text.write_text("".join(f"review {i} of a warm and funny film\n" for i in range(194)))

    def argv(student):
        # 200 sentences: 50 updates an epoch.
        args = ["--teacher", teacher, "--init_checkpoint", checkpoint, "--model_dir", student]
        args += ["--text", text, *settings("export.enabled=false", "training.epochs=2")]
        args += ["--set", "checkpoint.every_steps=10"]
        return args + [arg for item in intermediate for arg in ("--set", item)]

    student = tmp_path / "student"
    checkpoints = student / "unfinished" / "checkpoints"
    with open(tmp_path / "killed.log", "w") as log:
        killed = subprocess.Popen(
            [sys.executable, "-m", "keras_bert.distill", *map(str, argv(student))], stderr=log
        )
        deadline = time.time() + 600
        while not list(checkpoints.glob("ckpt-*/state.json")) and killed.poll() is None:
            assert time.time() < deadline, "no checkpoint in 10 minutes"
            time.sleep(0.01)
        killed.kill()
        killed.wait()
    assert list(checkpoints.glob("ckpt-*/state.json")), (tmp_path / "killed.log").read_text()

    resumed = command("distill", *argv(student))
    assert "200 of 200 sentences labelled before" in resumed.stderr  # Nothing labelled again.
    assert 0 < int(resumed.stderr.split("Resumed at step ")[1].split()[0]) < 100
    assert json.loads(resumed.stdout)["train_steps"] == 100
    assert not (student / "unfinished").exists()
    assert list((student / "logs" / "train").glob("events.out.tfevents.*"))
    # It ends as an unbroken run does: the same weights, bit for bit here.
    command("distill", *argv(tmp_path / "unbroken"))
    load = keras.saving.load_model
    resumed_weights = load(student / "model.keras", compile=False).get_weights()
    unbroken_weights = load(tmp_path / "unbroken" / "model.keras", compile=False).get_weights()
    for got, want in zip(resumed_weights, unbroken_weights, strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


def test_ctrl_c_while_labelling_stops_keeping_the_shards_and_the_previous_run(
    fine_tuned, checkpoint, tmp_path
):
    # Issue 82 item 12: under JAX, Ctrl-C landed in jaxlib's garbage-
    # collection callback, which dropped it, and labelling went on.
    teacher, _ = fine_tuned("sst2")
    student = tmp_path / "student"
    shutil.copytree(teacher, student)  # A previous run of the task, to put back.
    before = {path.name: path.read_bytes() for path in student.iterdir() if path.is_file()}
    text = tmp_path / "reviews.txt"
    text.write_text("".join(f"review {i} of a warm and funny film\n" for i in range(98)))
    size, shard_size = 6 + 98, 4  # The training file's 6, the text's 98: 26 shards.
    argv = ["--teacher", teacher, "--init_checkpoint", checkpoint, "--model_dir", student]
    argv += ["--text", text, *settings("export.enabled=false")]
    argv += settings(f"distillation.transfer.shard_size={shard_size}")
    with open(tmp_path / "interrupted.log", "w") as log:
        interrupted = subprocess.Popen(
            [sys.executable, "-m", "keras_bert.distill", *map(str, argv)], stderr=log
        )
        shards = student / "transfer_set"
        deadline = time.time() + 600
        while not list(shards.glob("shard-*.tfrecord")) and interrupted.poll() is None:
            assert time.time() < deadline, "no shard written in 10 minutes"
            time.sleep(0.005)
        interrupted.send_signal(signal.SIGINT)
        interrupted.wait(timeout=300)
    stderr = (tmp_path / "interrupted.log").read_text()
    assert interrupted.returncode == 130, stderr[-3000:]
    assert stderr.splitlines()[-1] == "Interrupted." and "Exception ignored" not in stderr
    written = len(list(shards.glob("shard-*.tfrecord")))
    assert 0 < written < size // shard_size, stderr[-3000:]
    after = {path.name: path.read_bytes() for path in student.iterdir() if path.is_file()}
    assert after == before


def test_a_student_learns_the_teacher_on_this_backend(fine_tuned, checkpoint, tmp_path):
    teacher, _ = fine_tuned("stsb")
    intermediate = ["hidden_weight=1", "attention_weight=0.5"]
    results = run_distillation(
        str(teacher),
        checkpoint,
        str(tmp_path / "student"),
        overrides=QUICK
        + ["export.enabled=false", "distillation.transfer.copies=1"]
        + [f"distillation.intermediate.{item}" for item in intermediate],
    )
    assert results["task"] == "stsb" and results["train_examples"] > 0
    assert "pearson" in results and results["layer_map"] == [1]
    config = (tmp_path / "student" / "config.yaml").read_text()
    assert "loss: mse" in config  # `auto`, for a regression teacher.
    # The student alone is saved, with neither the teacher nor projections.
    model = keras.saving.load_model(tmp_path / "student" / "model.keras")
    assert model.count_params() == keras.saving.load_model(checkpoint).count_params() + 17


@pytest.mark.backend_independent
def test_what_intermediate_losses_cannot_share_with_the_teacher_is_one_line(
    fine_tuned, fixtures, tmp_path, capsys
):
    teacher, _ = fine_tuned("sst2")
    four_heads = tmp_path / "four_heads.yaml"  # The fixture vocabulary, 4 heads.
    four_heads.write_text(
        "vocabulary_size: 174\nnum_layers: 2\nnum_heads: 4\nhidden_dim: 8\n"
        "intermediate_dim: 16\nmax_sequence_length: 128\n"
    )
    vocab = tmp_path / "vocab.txt"
    shutil.copy(fixtures / "vocab.txt", vocab)
    other = tmp_path / "other_vocab.txt"
    other.write_text(vocab.read_text().replace("\nthe\n", "\nthe_\n"))
    student = tmp_path / "student"
    args = ["--teacher", teacher, "--init_checkpoint", f"random:{four_heads}"]
    args += ["--model_dir", student]
    hidden = settings("distillation.intermediate.hidden_weight=1")
    err = one_line_error([*args, "--vocab", other, *hidden], capsys)
    assert err.startswith("error: distillation.intermediate: the teacher runs on the student's")
    err = one_line_error(
        [*args, "--vocab", vocab, *hidden, "--set", "distillation.intermediate.attention_weight=1"],
        capsys,
    )
    assert "the student has 4 heads and the teacher 2" in err
    err = one_line_error(
        [*args, "--vocab", vocab, *hidden, "--set", "distillation.intermediate.layer_map=[1,2]"],
        capsys,
    )
    assert err == (
        "error: distillation.intermediate.layer_map=[1, 2]: needs one teacher block (1 to 1) "
        "for each of the student's 2 blocks"
    )
    assert not student.exists()


def one_line_error(args, capsys):
    capsys.readouterr()
    assert distill([str(a) for a in args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.backend_independent
def test_a_teacher_that_is_no_fine_tuning_run_is_one_line(checkpoint, tmp_path, capsys):
    student = tmp_path / "student"
    common = ["--init_checkpoint", checkpoint, "--model_dir", student]
    err = one_line_error(["--teacher", tmp_path / "missing", *common], capsys)
    assert err == f"error: --teacher {tmp_path / 'missing'}: no such directory"
    (tmp_path / "empty").mkdir()
    err = one_line_error(["--teacher", tmp_path / "empty", *common], capsys)
    assert "not a fine-tuning run folder" in err
    assert not student.exists()


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "args, error",
    [
        (
            ["--init_checkpoint", "no/such.keras"],
            "no/such.keras: no such checkpoint file or folder",
        ),
        (["--vocab", "no/vocab.txt"], "--vocab no/vocab.txt: no such file"),
        (
            ["--set", "distillation.temprature=2"],
            "--set: unknown config key 'distillation.temprature'",
        ),
        (["--config", "no_such"], "No fine-tuning config 'no_such'"),
        (
            ["--teacher", "TEACHER/model.keras"],
            "--teacher TEACHER/model.keras: a file; --teacher takes the fine-tuning run folder "
            "that holds it (TEACHER)",
        ),
    ],
    ids=["init_checkpoint", "vocab", "set", "config", "teacher-file"],
)
def test_bad_input_is_one_line_before_tensorflow_loads(args, error, tmp_path):
    # Issue 82 item 14: these came after start-up and the teacher's loading.
    teacher = tmp_path / "teacher"
    teacher.mkdir()
    (teacher / "config.yaml").write_text("task: sst2\n")
    (teacher / "model.keras").write_bytes(b"")
    flags = {"--teacher": str(teacher), "--init_checkpoint": "random:bert_tiny"}
    flags["--model_dir"] = str(tmp_path / "student")
    flags.update(zip(args[::2], (arg.replace("TEACHER", str(teacher)) for arg in args[1::2])))
    argv = ["-m", "keras_bert.distill", *(item for flag in flags.items() for item in flag)]
    result, heavy = heavy_imports(argv, tmp_path)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if not line.startswith("import time:")]
    assert len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith("error: " + error.replace("TEACHER", str(teacher))), lines[0]
    assert heavy == [] and not (tmp_path / "student").exists()


@pytest.mark.backend_independent
def test_a_teacher_of_another_kind_of_task_is_one_line(fine_tuned, checkpoint, tmp_path, capsys):
    teacher, _ = fine_tuned("squad_v1")
    student = tmp_path / "student"
    err = one_line_error(
        ["--teacher", teacher, "--init_checkpoint", checkpoint, "--model_dir", student], capsys
    )
    assert err == (
        f"error: --teacher {teacher}: a squad_v1 run ({REFUSED_HANDLERS['SquadTask']}); "
        "distillation takes sentence and sentence-pair classification and regression, and "
        "token tagging"
    )
    assert not student.exists()


def test_a_tagger_learns_its_teachers_tags_word_by_word(fine_tuned, checkpoint, fixtures, tmp_path):
    teacher, _ = fine_tuned("conll2003")
    text = tmp_path / "news.txt"
    text.write_text("Peter Blackburn visited Paris .\nEU talks resume\n")
    student = tmp_path / "student"
    results = run_distillation(
        str(teacher),
        checkpoint,
        str(student),
        text_files=[str(text)],
        overrides=QUICK
        + ["export.enabled=false", "distillation.transfer.copies=1"]
        + ["distillation.transfer.replace_probability=0.5"]
        + ["distillation.transfer.replace_by=teacher_neighbours"],
    )
    assert results["task"] == "conll2003" and "f1" in results
    training = read_conll(str(fixtures / "conll" / "train.txt"))
    assert results["train_examples"] == 2 * (len(training) + 2)  # One copy each.


@pytest.mark.backend_independent
def test_task_files_with_other_classes_than_the_teachers_are_one_line(
    fine_tuned, checkpoint, tmp_path, capsys
):
    teacher, _ = fine_tuned("classification")
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.csv").write_text("text,label\ngood,pos\nbad,neg\nso-so,mixed\n")
    (data / "dev.csv").write_text("text,label\nfine,pos\n")
    student = tmp_path / "student"
    args = ["--teacher", teacher, "--init_checkpoint", checkpoint, "--model_dir", student]
    err = one_line_error([*args, "--data_dir", data, *settings()], capsys)
    assert err.startswith(f"error: --teacher {teacher}: classifies into [")
    assert "but the task's files in" in err and "'mixed'" in err
    assert not student.exists()


@pytest.mark.backend_independent
def test_an_empty_text_file_is_one_line_and_nothing_is_written(
    fine_tuned, checkpoint, tmp_path, capsys
):
    teacher, _ = fine_tuned("sst2")
    text = tmp_path / "empty.txt"
    text.write_text("\n\n")
    student = tmp_path / "student"
    args = ["--teacher", teacher, "--init_checkpoint", checkpoint, "--model_dir", student]
    err = one_line_error([*args, "--text", text, *settings()], capsys)
    assert err == f"error: --text {text}: holds no sentences (the transfer set takes its lines)"
    assert not student.exists()


@pytest.mark.backend_independent
def test_a_regression_teacher_takes_no_kl_divergence(fine_tuned, checkpoint, tmp_path, capsys):
    teacher, _ = fine_tuned("stsb")
    student = tmp_path / "student"
    args = ["--teacher", teacher, "--init_checkpoint", checkpoint, "--model_dir", student]
    err = one_line_error([*args, *settings("distillation.loss=kl_divergence")], capsys)
    assert err.startswith("error: distillation.loss=kl_divergence: the teacher is a regression")
    assert not student.exists()


@pytest.mark.backend_independent
def test_a_student_larger_than_its_teacher_is_warned_of(fine_tuned, fixtures, tmp_path, caplog):
    teacher, _ = fine_tuned("sst2")
    larger = tmp_path / "larger.yaml"  # The fixture vocabulary, 2 layers of 32.
    larger.write_text(
        "vocabulary_size: 174\nnum_layers: 2\nnum_heads: 2\nhidden_dim: 32\n"
        "intermediate_dim: 64\nmax_sequence_length: 128\n"
    )
    shutil.copy(fixtures / "vocab.txt", tmp_path / "vocab.txt")
    results = run_distillation(
        str(teacher),
        f"random:{larger}",
        str(tmp_path / "student"),
        vocab=str(tmp_path / "vocab.txt"),
        overrides=QUICK + ["export.enabled=false"],
    )
    assert results["train_examples"] == 6
    assert "is larger than the teacher's" in caplog.text
