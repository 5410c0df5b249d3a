"""No command writes an output that is, holds or lies inside one of its
inputs (issue 82, item 1: `distill --model_dir` naming its teacher's folder
replaced the teacher with the student). Each row runs the command as a user
does, as its own process; the refusal comes before anything loads."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.backend_independent


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A run folder, a task's files, a corpus, a vocabulary and a model file;
    what each command reads (the refusal comes before any is loaded)."""
    root = tmp_path_factory.mktemp("overlap")
    run = root / "runs" / "cls1"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("task: sst2\n")
    (run / "model.keras").write_text("a model")
    (root / "glue").mkdir()
    (root / "glue" / "dev.tsv").write_text("sentence\tlabel\nfine\t1\n")
    (root / "corpus").mkdir()
    (root / "corpus" / "a.txt").write_text("One sentence.\n")
    (root / "vocab.txt").write_text("[PAD]\n")
    (root / "ckpt").mkdir()
    (root / "corpus" / "b.txt").write_text("Another sentence.\n")
    (root / "recipe.yaml").write_text("{}\n")
    return root


# Every output flag of every command against every input flag: the output
# named as the input is refused. (command, its arguments, the output flag,
# its name in the error, {the input's name in the error: its path}.)
PAIRS = [
    (
        "pretrain",
        "--set data.train_files=corpus/a.txt --set data.eval_files=corpus/b.txt "
        "--set data.vocab_file=vocab.txt --init_checkpoint ckpt",
        "--model_dir",
        "model_dir",
        {
            "data.train_files": "corpus/a.txt",
            "data.eval_files": "corpus/b.txt",
            "data.vocab_file": "vocab.txt",
            "init_checkpoint": "ckpt",
        },
    ),
    (
        "finetune",
        "--task sst2 --data_dir glue --init_checkpoint ckpt --vocab vocab.txt --config recipe.yaml",
        "--model_dir",
        "--model_dir",
        {
            "--data_dir": "glue",
            "--init_checkpoint": "ckpt",
            "--vocab": "vocab.txt",
            "--config": "recipe.yaml",
        },
    ),
    (
        "distill",
        "--teacher runs/cls1 --data_dir glue --text corpus/a.txt --init_checkpoint ckpt "
        "--vocab vocab.txt --config recipe.yaml",
        "--model_dir",
        "--model_dir",
        {
            "--teacher": "runs/cls1",
            "--data_dir": "glue",
            "--text": "corpus/a.txt",
            "--init_checkpoint": "ckpt",
            "--vocab": "vocab.txt",
            "--config": "recipe.yaml",
        },
    ),
    (
        "evaluate",
        "--model_dir runs/cls1 --input glue/dev.tsv",
        "--output",
        "--output",
        {"--model_dir": "runs/cls1", "--input": "glue/dev.tsv"},
    ),
    (
        "predict",
        "--model_dir runs/cls1 --input glue/dev.tsv",
        "--output",
        "--output",
        {"--model_dir": "runs/cls1", "--input": "glue/dev.tsv"},
    ),
    (
        "data",
        "--input corpus/a.txt --vocab vocab.txt",
        "--output",
        "--output",
        {"--input": "corpus/a.txt", "--vocab": "vocab.txt"},
    ),
    (
        "vocab",
        "--input corpus/a.txt --vocab_size 100",
        "--output",
        "--output",
        {"--input": "corpus/a.txt"},
    ),
    (
        "convert",
        "--input runs/cls1/model.keras --vocab vocab.txt",
        "--output",
        "--output",
        {"--input": "runs/cls1/model.keras", "--vocab": "vocab.txt"},
    ),
    (
        "export",
        "--model runs/cls1/model.keras --vocab vocab.txt",
        "--output",
        "--output",
        {"--model": "runs/cls1/model.keras", "--vocab": "vocab.txt"},
    ),
    ("export", "--model_dir runs/cls1", "--output", "--output", {"--model_dir": "runs/cls1"}),
]


@pytest.mark.parametrize(
    "command, arguments, output_flag, output_name, input_name, path",
    [
        (command, arguments, output_flag, output_name, input_name, path)
        for command, arguments, output_flag, output_name, inputs in PAIRS
        for input_name, path in inputs.items()
    ],
)
def test_every_output_named_as_any_input_is_refused(
    tree, command, arguments, output_flag, output_name, input_name, path
):
    line = refused(tree, command, arguments.split() + [output_flag, path])
    assert line.startswith(f"error: {output_name} ") or f" {output_name} {path}: " in line, line
    assert f": is the input {input_name} {path}; write the output elsewhere" in line, line


# (command, its arguments, the refused output flag, how, the input flag).
ROWS = [
    # The reported case, in three spellings.
    ("distill", "--teacher runs/cls1 --model_dir runs/cls1", "--model_dir", "is", "--teacher"),
    ("distill", "--teacher runs/cls1 --model_dir ./runs/cls1/", "--model_dir", "is", "--teacher"),
    (
        "distill",
        "--teacher runs/cls1 --model_dir runs/../runs/cls1",
        "--model_dir",
        "is",
        "--teacher",
    ),
    ("distill", "--teacher runs/cls1 --model_dir runs", "--model_dir", "holds", "--teacher"),
    (
        "distill",
        "--teacher runs/cls1 --model_dir runs/cls1/student",
        "--model_dir",
        "lies inside",
        "--teacher",
    ),
    (
        "distill",
        "--teacher runs/cls1 --data_dir glue --model_dir glue",
        "--model_dir",
        "is",
        "--data_dir",
    ),
    (
        "distill",
        "--teacher runs/cls1 --text corpus/*.txt --model_dir corpus",
        "--model_dir",
        "holds",
        "--text",
    ),
    ("finetune", "--task sst2 --data_dir glue --model_dir glue", "--model_dir", "is", "--data_dir"),
    (
        "finetune",
        "--task sst2 --data_dir glue --model_dir .",
        "--model_dir",
        "holds",
        "--data_dir",
    ),
    (
        "finetune",
        "--task sst2 --data_dir glue --init_checkpoint ckpt --model_dir ckpt",
        "--model_dir",
        "is",
        "--init_checkpoint",
    ),
    (
        "pretrain",
        "--model_dir corpus --set data.train_files=corpus/a.txt --set data.vocab_file=vocab.txt",
        "model_dir",
        "holds",
        "data.train_files",
    ),
    (
        "pretrain",
        "--model_dir ckpt --init_checkpoint ckpt --set data.train_files=corpus/a.txt "
        "--set data.vocab_file=vocab.txt",
        "model_dir",
        "is",
        "init_checkpoint",
    ),
    (
        "evaluate",
        "--model_dir runs/cls1 --input glue/dev.tsv --output glue",
        "--output",
        "holds",
        "--input",
    ),
    (
        "evaluate",
        "--model_dir runs/cls1 --input glue/dev.tsv --output runs/cls1",
        "--output",
        "is",
        "--model_dir",
    ),
    (
        "predict",
        "--model_dir runs/cls1 --input glue/dev.tsv --output glue/dev.tsv",
        "--output",
        "is",
        "--input",
    ),
    (
        "predict",
        "--model_dir runs/cls1 --input glue/dev.tsv --output runs/cls1",
        "--output",
        "is",
        "--model_dir",
    ),
    (
        "data",
        "--input corpus/*.txt --vocab vocab.txt --output corpus",
        "--output",
        "holds",
        "--input",
    ),
    (
        "data",
        "--input corpus/*.txt --vocab vocab.txt --output vocab.txt",
        "--output",
        "is",
        "--vocab",
    ),
    (
        "vocab",
        "--input corpus/a.txt --vocab_size 100 --output corpus/a.txt",
        "--output",
        "is",
        "--input",
    ),
    ("convert", "--input runs/cls1 --output runs/cls1/hf", "--output", "lies inside", "--input"),
    ("convert", "--input runs/cls1/model.keras --output runs", "--output", "holds", "--input"),
    ("export", "--model runs/cls1/model.keras --output runs/cls1", "--output", "holds", "--model"),
    ("export", "--model_dir runs/cls1 --output runs", "--output", "holds", "--model_dir"),
]
# Every command that writes has a row.
COMMANDS = {"pretrain", "finetune", "distill", "evaluate", "predict", "data", "vocab"}


def test_a_run_folder_may_lie_inside_its_project_folder_of_task_files(tree):
    # A project's own folder holds its data and its runs: the task readers
    # take their files by name, so nothing mixes.
    done = subprocess.run(
        [sys.executable, "-m", "keras_bert.finetune", "--task", "sst2", "--data_dir", "."]
        + ["--init_checkpoint", "random:bert_tiny", "--model_dir", "runs/new"]
        # The check after the overlap's, so that the command stops there.
        + ["--config", "nosuch"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "No fine-tuning config 'nosuch'" in done.stderr


def test_every_writing_command_has_a_row():
    assert {row[0] for row in ROWS} >= COMMANDS | {"convert", "export"}


@pytest.mark.parametrize("command, arguments, output_flag, how, input_flag", ROWS)
def test_an_output_that_is_holds_or_lies_inside_an_input_is_refused(
    tree, command, arguments, output_flag, how, input_flag
):
    argv = arguments.split()
    if command in ("finetune", "distill") and "--init_checkpoint" not in argv:
        argv += ["--init_checkpoint", "random:bert_tiny"]
    line = refused(tree, command, argv)
    assert f"{output_flag} " in line and f": {how} the input {input_flag} " in line
    assert "write the output elsewhere" in line


def refused(tree, command, argv):
    """`python -m keras_bert.<command> <argv>` in `tree`: its one error
    line, once checked that it exits 2 and leaves the run as it was."""
    done = subprocess.run(
        [sys.executable, "-m", f"keras_bert.{command}", *argv],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    # Nothing was written: the inputs are as they were, no output appeared.
    assert (tree / "runs" / "cls1" / "model.keras").read_text() == "a model"
    assert sorted(p.name for p in (tree / "runs" / "cls1").iterdir()) == [
        "config.yaml",
        "model.keras",
    ]
    return lines[0]
