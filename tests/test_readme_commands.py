"""The README's commands run as written (issue 39: docs cannot drift).

The quick start's `make pretrain` and every command of "Pre-train on your
own text" are read from README.md's bash blocks and run in a fresh folder,
each with `--set` overrides appended that shrink the model and the
schedule (a 1-layer, 16-wide BERT, a handful of updates). `make test` is
this suite and is not run. The Makefile's recipe for `pretrain` is checked
to be the command run here.
"""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import keras
import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY_MODEL = {
    "num_layers": 1,
    "hidden_dim": 16,
    "num_heads": 2,
    "intermediate_dim": 32,
    "dropout": 0.0,
}
TINY_PRETRAINING = {
    "model_overrides": TINY_MODEL,
    "phases": [
        {"seq_len": 32, "max_predictions": 5, "batch_size": 4, "steps": 3},
        {"seq_len": 64, "max_predictions": 10, "batch_size": 2, "fraction": 1.0},
    ],
    "train_steps": 5,
    # The default recipe trains on to its deadline however many updates
    # that makes; the budgeted path is kept, stopped at the 5 updates.
    "budget_stops_at_train_steps": True,
    "optimizer.warmup_steps": 1,
    "steps_per_loop": 1,
    "eval_steps": 1,
    "eval_every_steps": 0,
    "checkpoint.every_steps": 5,
}
TINY = {  # Appended to each command of the README, by command.
    "pretrain": TINY_PRETRAINING,
    "finetune": {"training.epochs": 1, "training.batch_size": 4, "data.max_seq_length": 32},
    "distill": {
        "training.epochs": 1,
        "training.batch_size": 4,
        "data.max_seq_length": 32,
        "distillation.transfer.copies": 1,
    },
}

pytestmark = [
    pytest.mark.backend_independent,
    pytest.mark.skipif(
        keras.backend.backend() != "tensorflow",
        reason="runs the commands as a user would; the backend is theirs to pick "
        "(tested under TensorFlow, once)",
    ),
]


def readme_commands(section):
    """The commands of the first bash block under `## <section>`, with
    continuation lines joined and comments dropped."""
    text = (ROOT / "README.md").read_text()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", body, re.S).group(1)
    joined = re.sub(r"\\\n\s*", " ", block)
    return [
        line.split(" #")[0].strip()
        for line in joined.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def run(command, cwd):
    argv = shlex.split(command)
    assert argv[:2] == ["python", "-m"], f"not a python -m command: {command}"
    name = argv[2].rpartition(".")[2]
    for key, value in TINY.get(name, {}).items():
        argv += ["--set", f"{key}={json.dumps(value)}"]
    env = {
        **os.environ,
        "KERAS_BACKEND": "tensorflow",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run(
        [sys.executable, *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, f"{command}\n{result.stderr[-3000:]}"
    return result


def write_own_text(folder):
    """Short documents, one per line, from the bundled corpus, a labelled
    train/dev pair from the SST-2 fixture, and its sentences unlabelled."""
    corpus = sorted(ROOT.glob("data/corpus/*/*.txt"))[0].read_text().splitlines()
    documents = [line for line in corpus if len(line.split()) > 8][:400]
    (folder / "my_text").mkdir()
    for index in range(20):
        (folder / "my_text" / f"part{index}.txt").write_text("\n".join(documents[index::20]) + "\n")
    rows = (ROOT / "tests/finetuning/fixtures/glue/SST-2/train.tsv").read_text()
    (folder / "my_labels").mkdir()
    for split in ("train", "dev"):
        (folder / "my_labels" / f"{split}.tsv").write_text("text\tlabel\n" + rows.split("\n", 1)[1])
    sentences = [line.split("\t")[0] for line in rows.splitlines()[1:] if line]
    (folder / "my_new_text.tsv").write_text("text\n" + "\n".join(sentences) + "\n")


def test_quick_start_pretrain_runs_as_written(tmp_path):
    commands = readme_commands("Quick start")
    assert [c.split()[:2] for c in commands] == [["make", "pretrain"], ["make", "test"]]
    recipe = re.search(r"^pretrain:.*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert recipe.group(1) == "$(BIN)/python -m keras_bert.pretrain $(ARGS)"
    result = run("python -m keras_bert.pretrain --model_dir runs/pretrain_default", tmp_path)
    assert "held-out seq_len=64: mlm_accuracy=" in result.stdout
    assert (tmp_path / "runs/pretrain_default/backbone.keras").is_file()


@pytest.fixture(scope="module")
def own_text(tmp_path_factory):
    """The folder where "Pre-train on your own text" ran, each command in a
    process of its own on what the one before it wrote; `(folder, {command
    name: its stdout})`."""
    folder = tmp_path_factory.mktemp("own_text")
    write_own_text(folder)
    commands = readme_commands("Pre-train on your own text")
    assert [c.split()[2] for c in commands] == [
        "keras_bert.vocab",
        "keras_bert.pretrain",
        "keras_bert.finetune",
        "keras_bert.distill",
        "keras_bert.evaluate",
        "keras_bert.predict",
        "keras_bert.export",
    ]
    stdout = {}
    for command in commands:
        if command.split()[2] == "keras_bert.distill":
            # The teacher the recipe assumes, a larger model fine-tuned on the
            # labels: here the recipe's own fine-tuning, into the teacher's folder.
            finetune = next(c for c in commands if c.split()[2] == "keras_bert.finetune")
            run(finetune.replace("runs/my_classifier", "runs/my_large_classifier"), folder)
        stdout[command.split()[2]] = run(command, folder).stdout
    return folder, stdout


def test_own_text_commands_run_as_written(own_text):
    folder, _ = own_text
    assert (folder / "my_vocab.txt").is_file()
    assert (
        json.loads((folder / "runs/my_classifier/eval_results.json").read_text())["eval_examples"]
        > 0
    )
    assert list((folder / "runs/serving/my_classifier").glob("*/saved_model.pb"))


def test_the_distilled_student_replaces_the_classifier(own_text):
    folder, _ = own_text
    results = json.loads((folder / "runs/my_classifier/eval_results.json").read_text())
    assert results["teacher"] == str(folder / "runs/my_large_classifier")
    config = (folder / "runs/my_classifier/config.yaml").read_text()
    assert "teacher: runs/my_large_classifier" in config


def test_evaluate_and_predict_load_the_fine_tuned_model_in_their_own_process(own_text):
    # Issue 67 item 1: both failed as commands ("Could not locate class
    # 'BertClassifier'") while every in-process test passed.
    folder, stdout = own_text
    scores = json.loads(stdout["keras_bert.evaluate"])
    dev_rows = (folder / "my_labels/dev.tsv").read_text().splitlines()[1:]
    assert scores["eval_examples"] == len(dev_rows)
    predictions = json.loads(stdout["keras_bert.predict"])
    lines = (folder / predictions["output"]).read_text().splitlines()
    assert len(lines) == len(dev_rows)
    assert {json.loads(line)["prediction"] for line in lines} <= {"0", "1"}


def test_convert_and_data_run_on_what_the_others_wrote(own_text):
    folder, _ = own_text
    run("python -m keras_bert.convert runs/my_bert/backbone.keras hf_bert", folder)
    assert (folder / "hf_bert/model.safetensors").is_file()
    run("python -m keras_bert.convert --input hf_bert --output back.keras", folder)
    assert (folder / "back.keras").is_file()
    run(
        "python -m keras_bert.data --input 'my_text/*.txt' --output shards "
        "--vocab my_vocab.txt --corpus_format lines --num_shards 2",
        folder,
    )
    assert len(list((folder / "shards").glob("*.tfrecord*"))) == 2
