"""A fine-tuning run folder stays whole: `predict` and `evaluate` write
over no file the user did not name for writing (`output_guard.check_output`),
score only a folder whose config, model and vocabulary belong together
(`inference.check_run_parts`), and a rerun never leaves the old run's
outputs beside the new model (`RunFolder.previous`).

Run once, under TensorFlow: what these check is file and folder handling;
fine-tuning, saving and loading under each backend are checked by
test_finetune_cli.py, test_evaluate_cli.py and test_predict_cli.py."""

import json
import os
import shutil

import pytest
import yaml

from keras_bert.evaluate import main as evaluate
from keras_bert.finetune import main as finetune_main
from keras_bert.predict import main as predict
from tests.finetuning.conftest import QUICK

pytestmark = pytest.mark.backend_independent


@pytest.fixture(scope="module")
def sst2_run(fine_tuned):
    return fine_tuned("sst2")[0]


@pytest.fixture
def run_copy(sst2_run, tmp_path):
    """A copy of the run, for tests that change it."""
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(sst2_run, copy)
    return copy


def one_line_error(command, args, capsys):
    capsys.readouterr()
    assert command(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    return err


def files(folder):
    """The folder's files and their bytes; not `unfinished/`, a stopped
    run's progress, kept for its resume (`test_resume.py`)."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).parts[0] != "unfinished"
    }


# --- The output-path guard -------------------------------------------------


def test_predict_never_writes_over_its_input(sst2_run, fixtures, tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    labelled = data / "dev.tsv"
    labelled.write_bytes((fixtures / "glue" / "SST-2" / "dev.tsv").read_bytes())
    os.symlink(labelled, tmp_path / "link.tsv")
    before = labelled.read_bytes()
    # The same file by another relative path, through a symlink, and with --overwrite.
    for output in (
        str(labelled),
        str(data / ".." / "data" / "dev.tsv"),
        str(tmp_path / "link.tsv"),
    ):
        err = one_line_error(
            predict,
            [
                "--model_dir",
                str(sst2_run),
                "--input",
                str(labelled),
                "--output",
                output,
                "--overwrite",
            ],
            capsys,
        )
        assert "is the input --input" in err, err
    assert labelled.read_bytes() == before


@pytest.mark.parametrize("name", ["model.keras", "config.yaml", "vocab.txt", "eval_results.json"])
def test_predict_never_writes_over_the_runs_own_files(sst2_run, fixtures, capsys, name):
    before = files(sst2_run)
    err = one_line_error(
        predict,
        [
            "--model_dir",
            str(sst2_run),
            "--input",
            str(fixtures / "glue" / "SST-2" / "dev.tsv"),
            "--output",
            str(sst2_run / name),
            "--overwrite",
        ],
        capsys,
    )
    assert f"is {name} of the run in" in err, err
    assert files(sst2_run) == before


def test_existing_output_needs_overwrite(sst2_run, fixtures, tmp_path, capsys):
    out = tmp_path / "preds.jsonl"
    out.write_text("the user's\n")
    args = ["--model_dir", str(sst2_run), "--input", str(fixtures / "glue" / "SST-2" / "dev.tsv")]
    err = one_line_error(predict, args + ["--output", str(out)], capsys)
    assert err == f"error: --output {out}: already exists; pass --overwrite to replace it"
    assert out.read_text() == "the user's\n"
    assert predict(args + ["--output", str(out), "--overwrite"]) == 0
    assert json.loads(out.read_text().splitlines()[0])["prediction"]


def test_evaluate_never_replaces_the_runs_scores(sst2_run, fixtures, capsys):
    before = files(sst2_run)
    err = one_line_error(
        evaluate,
        [
            "--model_dir",
            str(sst2_run),
            "--input",
            str(fixtures / "glue" / "SST-2" / "dev.tsv"),
            "--output_dir",
            str(sst2_run),
            "--overwrite",
        ],
        capsys,
    )
    assert "is the input --model_dir" in err, err
    assert files(sst2_run) == before


def test_evaluate_defaults_differ_for_files_of_one_name(run_copy, fixtures, tmp_path, capsys):
    dev = fixtures / "glue" / "SST-2" / "dev.tsv"
    lines = dev.read_text().splitlines(keepends=True)
    first, second = tmp_path / "a" / "dev.tsv", tmp_path / "b" / "dev.tsv"
    for path, rows in ((first, lines[:3]), (second, [lines[0]] + lines[3:])):
        path.parent.mkdir()
        path.write_text("".join(rows))
    for path in (first, second):
        assert evaluate(["--model_dir", str(run_copy), "--input", str(path)]) == 0
    results = [json.loads(p.read_text()) for p in run_copy.glob("eval_dev_tsv_*/eval_results.json")]
    assert sorted(r["eval_file"] for r in results) == [str(first), str(second)]
    # A second evaluation of the same file asks before replacing its results.
    err = one_line_error(evaluate, ["--model_dir", str(run_copy), "--input", str(first)], capsys)
    assert "already exists; pass --overwrite" in err
    assert evaluate(["--model_dir", str(run_copy), "--input", str(first), "--overwrite"]) == 0


# --- Config, model and vocabulary belong together --------------------------


def test_swapped_vocabulary_is_one_line(run_copy, fixtures, capsys):
    tokens = (run_copy / "vocab.txt").read_text().splitlines()
    tokens[10], tokens[11] = tokens[11], tokens[10]
    (run_copy / "vocab.txt").write_text("\n".join(tokens) + "\n")
    args = ["--model_dir", str(run_copy), "--input", str(fixtures / "glue" / "SST-2" / "dev.tsv")]
    for command in (predict, evaluate):
        err = one_line_error(command, args, capsys)
        assert "vocab.txt: is not the vocabulary" in err and "token 10" in err, err


def test_vocabulary_of_another_size_is_one_line(run_copy, fixtures, capsys):
    with open(run_copy / "vocab.txt", "a") as f:
        f.write("extra\n")
    err = one_line_error(
        evaluate,
        ["--model_dir", str(run_copy), "--input", str(fixtures / "glue" / "SST-2" / "dev.tsv")],
        capsys,
    )
    assert "175 tokens" in err and "174 token embeddings" in err, err


def edit_config(run, **changes):
    path = run / "config.yaml"
    tree = yaml.safe_load(path.read_text())
    tree.update(changes)
    path.write_text(yaml.safe_dump(tree, sort_keys=False))


@pytest.mark.parametrize(
    "task, message",
    [
        (
            "stsb",
            "holds a BertClassifier, but {config} names task 'stsb', whose model is a BertRegressor",
        ),
        ("squad_v1", "whose model is a BertSpanLabeler"),
        ("conll2003", "whose model is a BertTokenClassifier"),
        ("swag", "whose model is a BertMultipleChoice"),
        ("mnli", "classifies into ['0', '1'], but task 'mnli'"),
        ("nonsense", "task 'nonsense' is not a fine-tuning task; expected one of"),
    ],
)
def test_model_of_another_task_is_one_line(run_copy, fixtures, capsys, task, message):
    edit_config(run_copy, task=task)
    err = one_line_error(
        evaluate,
        ["--model_dir", str(run_copy), "--input", str(fixtures / "glue" / "SST-2" / "dev.tsv")],
        capsys,
    )
    assert message.format(config=run_copy / "config.yaml") in err, err


def test_pretrainer_in_a_run_folder_is_one_line(run_copy, fixtures, capsys):
    from keras_bert.models import BertBackbone, BertPretrainer

    backbone = BertBackbone(
        vocabulary_size=174, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32
    )
    BertPretrainer(backbone).save(run_copy / "model.keras")
    err = one_line_error(
        predict,
        ["--model_dir", str(run_copy), "--input", str(fixtures / "glue" / "SST-2" / "dev.tsv")],
        capsys,
    )
    assert "model.keras: holds a BertPretrainer, but" in err and "BertClassifier" in err, err


# --- A rerun into the folder -------------------------------------------------


def finetune_args(fixtures, checkpoint, model_dir, *overrides):
    args = ["--task", "sst2", "--data_dir", str(fixtures / "glue"), "--init_checkpoint", checkpoint]
    args += ["--model_dir", str(model_dir)]
    for item in QUICK + ["export.enabled=false", *overrides]:
        args += ["--set", item]
    return args


def test_overwrite_replaces_a_run_of_another_task(run_copy, fixtures, checkpoint, capsys):
    dev = str(fixtures / "glue" / "SST-2" / "dev.tsv")
    assert predict(["--model_dir", str(run_copy), "--input", dev]) == 0
    args = finetune_args(fixtures, checkpoint, run_copy)
    args[1] = "cola"
    before = files(run_copy)
    err = one_line_error(finetune_main, args, capsys)
    assert err.endswith("pick another folder for 'cola', or pass --overwrite to replace that run")
    assert files(run_copy) == before

    # The run's logs linked to a folder outside it (issue 67 item 2: the
    # discard followed the link and emptied its target).
    outside = run_copy.parent / "outside_logs"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    shutil.rmtree(run_copy / "logs")
    (run_copy / "logs").symlink_to(outside)

    assert finetune_main([*args, "--overwrite"]) == 0
    assert os.listdir(outside) == ["keep.txt"]
    assert yaml.safe_load((run_copy / "config.yaml").read_text())["task"] == "cola"
    # The sst2 run's predictions went with it; nothing is left aside.
    assert not any(name.startswith("predictions_") for name in os.listdir(run_copy))
    assert not (run_copy / ".previous-run").exists()


def test_rerun_removes_the_old_models_outputs_and_keeps_the_users_files(
    run_copy, fixtures, checkpoint
):
    dev = str(fixtures / "glue" / "SST-2" / "dev.tsv")
    assert predict(["--model_dir", str(run_copy), "--input", dev]) == 0  # predictions_dev.jsonl
    assert evaluate(["--model_dir", str(run_copy), "--input", dev]) == 0  # eval_dev_tsv_*/
    test = run_copy.parent / "test.tsv"  # The official layout: a submission.
    test.write_text("index\tsentence\n0\ta fine film .\n")
    assert predict(["--model_dir", str(run_copy), "--input", str(test), "--glue_submission"]) == 0
    assert (run_copy / "glue_submission" / "SST-2.tsv").is_file()
    (run_copy / "notes.txt").write_text("the user's\n")
    # Issue 49, item 2: names starting eval_ or predictions_ that the user
    # wrote, or asked predict to write, were taken for the run's.
    (run_copy / "eval_plan.md").write_text("plan\n")
    mine = run_copy / "predictions_final.jsonl"
    assert predict(["--model_dir", str(run_copy), "--input", dev, "--output", str(mine)]) == 0
    assert finetune_main(finetune_args(fixtures, checkpoint, run_copy, "training.seed=1")) == 0
    assert sorted(os.listdir(run_copy)) == [
        "config.yaml",
        "eval_plan.md",
        "eval_results.json",
        "logs",
        "model.keras",
        "notes.txt",
        "outputs.json",
        "predictions.jsonl",
        "predictions_final.jsonl",
        "vocab.txt",
    ]


def test_failed_rerun_puts_the_previous_run_back(run_copy, fixtures, checkpoint, capsys):
    before = files(run_copy)
    # Fails after config.yaml is written: the checkpoint is too short.
    args = finetune_args(fixtures, checkpoint, run_copy, "data.max_seq_length=512")
    one_line_error(finetune_main, args, capsys)
    assert files(run_copy) == before


def test_failed_first_run_leaves_no_run_behind(fixtures, checkpoint, tmp_path, capsys):
    # Issue 49: its config.yaml and vocab.txt passed the folder off as a run,
    # refused to the next task.
    folder = tmp_path / "new"
    folder.mkdir()
    (folder / "notes.txt").write_text("the user's\n")
    args = finetune_args(fixtures, checkpoint, folder, "data.max_seq_length=512")
    one_line_error(finetune_main, args, capsys)
    assert sorted(os.listdir(folder)) == ["notes.txt"]
    args = finetune_args(fixtures, checkpoint, folder)
    args[1] = "cola"
    assert finetune_main(args) == 0


def test_sigterm_during_a_rerun_puts_the_previous_run_back(run_copy, fixtures, checkpoint):
    # Issue 49: Ctrl-C restored the set-aside run, SIGTERM did not.
    import signal
    import subprocess
    import sys
    import time

    before = files(run_copy)
    # Steps enough that no machine finishes them before the signal.
    args = finetune_args(fixtures, checkpoint, run_copy, "training.epochs=100000")
    process = subprocess.Popen(
        [sys.executable, "-m", "keras_bert.finetune", *args],
        env={**os.environ, "KERAS_BACKEND": "tensorflow"},
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in process.stderr:  # Training has begun once the steps are logged.
        if "training examples" in line:
            break
    time.sleep(1)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=120) == 130
    assert files(run_copy) == before
    assert not (run_copy / ".previous-run").exists()
    # The stopped rerun's progress is kept for the same command (issue 79).
    assert list((run_copy / "unfinished" / "checkpoints").glob("ckpt-*/state.json"))


def test_rerun_continues_from_the_folders_own_model(run_copy, fixtures):
    model = str(run_copy / "model.keras")
    assert finetune_main(finetune_args(fixtures, model, run_copy, "training.seed=1")) == 0
    assert yaml.safe_load((run_copy / "config.yaml").read_text())["init_checkpoint"] == model
    assert not (run_copy / ".previous-run").exists()


def test_killed_rerun_leaves_no_model_to_score_and_is_taken_up(
    run_copy, fixtures, checkpoint, capsys
):
    from keras_bert.finetuning.run_kind import FINETUNING_RUN
    from keras_bert.runs.run_folder import RunFolder

    before = files(run_copy)
    RunFolder(
        str(run_copy), FINETUNING_RUN
    ).previous.set_aside()  # What a rerun does first; then kill -9.
    (run_copy / "config.yaml").write_text("task: sst2\ndata:\n  max_seq_length: 16\n")
    err = one_line_error(
        evaluate,
        ["--model_dir", str(run_copy), "--input", str(fixtures / "glue" / "SST-2" / "dev.tsv")],
        capsys,
    )
    # Issue 49: it says where the previous run is and what to do.
    assert "a finetune rerun has not finished there" in err
    assert f"set aside in {run_copy / '.previous-run'}" in err and "run the same one again" in err
    # The next rerun fails too: the set-aside run comes back whole.
    one_line_error(
        finetune_main,
        finetune_args(fixtures, checkpoint, run_copy, "data.max_seq_length=512"),
        capsys,
    )
    assert files(run_copy) == before


class Killed(BaseException):
    """`kill -9`: no handler runs."""


def test_rerun_killed_after_saving_its_model_is_undone(
    run_copy, fixtures, checkpoint, capsys, monkeypatch
):
    # Issue 49, item 3 (a): killed between saving its model and the end of
    # dev scoring, a rerun's unfinished run was kept and the set-aside
    # complete one deleted by the next rerun.
    from keras_bert.finetuning.task_registry import TASKS
    from keras_bert.runs.previous_run import PreviousRun

    before = files(run_copy)

    def killed(*args, **kwargs):
        assert "model.keras" in os.listdir(run_copy)  # The new one.
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(TASKS["sst2"], "evaluate", killed)
        patch.setattr(PreviousRun, "restore", lambda self: None)
        with pytest.raises(Killed):
            finetune_main(finetune_args(fixtures, checkpoint, run_copy, "training.seed=1"))
    dev = str(fixtures / "glue" / "SST-2" / "dev.tsv")
    err = one_line_error(predict, ["--model_dir", str(run_copy), "--input", dev], capsys)
    assert "a finetune rerun has not finished there" in err
    # A rerun that fails on its data: the complete previous run is back.
    one_line_error(
        finetune_main,
        finetune_args(fixtures, checkpoint, run_copy, "data.max_seq_length=512"),
        capsys,
    )
    assert files(run_copy) == before


def test_unfinished_rerun_of_one_task_refuses_another(run_copy, fixtures, checkpoint, capsys):
    # Issue 49, item 3 (c): killed before its config.yaml was written, the
    # folder took a run of another task, which then deleted the set-aside run.
    from keras_bert.finetuning.run_kind import FINETUNING_RUN
    from keras_bert.runs.run_folder import RunFolder

    before = files(run_copy)
    RunFolder(str(run_copy), FINETUNING_RUN).previous.set_aside()
    args = finetune_args(fixtures, checkpoint, run_copy)
    args[1] = "cola"
    err = one_line_error(finetune_main, args, capsys)
    assert "holds a fine-tuning run of task 'sst2'" in err
    RunFolder(
        str(run_copy), FINETUNING_RUN
    ).previous.recover()  # What the next sst2 rerun does first.
    assert files(run_copy) == before


def test_one_writer_makes_a_run_that_predict_reads(sst2_run, tmp_path):
    # Issue 81 item 2: `finetune`, `distill` and `convert` (a transformers
    # model in) write a run's config, vocabulary and model through the
    # kind's one writer; what it writes from a run's parts is that run.
    from keras_bert.finetuning.config import load_saved_config
    from keras_bert.finetuning.inference import load_run
    from keras_bert.finetuning.run_kind import FINETUNING_RUN
    from keras_bert.finetuning.runner import load_keras_model
    from keras_bert.runs.run_folder import RunFolder

    task, config = load_saved_config(str(sst2_run))
    model = load_keras_model(str(sst2_run / "model.keras"))
    folder = RunFolder(str(tmp_path), FINETUNING_RUN)
    FINETUNING_RUN.write_config(folder, config, "elsewhere/model.keras", data_dir=None)
    FINETUNING_RUN.write_vocabulary(folder, model.backbone.vocabulary)
    FINETUNING_RUN.save_model(folder, model)
    assert (tmp_path / "vocab.txt").read_bytes() == (sst2_run / "vocab.txt").read_bytes()
    written = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert (written["task"], written["init_checkpoint"], written["data_dir"]) == (
        task,
        "elsewhere/model.keras",
        None,
    )
    record = json.loads((tmp_path / "outputs.json").read_text())
    assert record["kind"] == "fine-tuning" and "model.keras" in record["files"]
    assert load_run(str(tmp_path))[0] == task
    # A `--vocab` file is copied byte for byte, line ends and all.
    FINETUNING_RUN.write_vocabulary(folder, b"[PAD]\r\nword\n")
    assert (tmp_path / "vocab.txt").read_bytes() == b"[PAD]\r\nword\n"
