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
    """Short documents, one per line, from the bundled corpus, and a
    labelled train/dev pair from the SST-2 fixture."""
    corpus = sorted(ROOT.glob("data/corpus/*/*.txt"))[0].read_text().splitlines()
    documents = [line for line in corpus if len(line.split()) > 8][:400]
    (folder / "my_text").mkdir()
    for index in range(20):
        (folder / "my_text" / f"part{index}.txt").write_text("\n".join(documents[index::20]) + "\n")
    rows = (ROOT / "tests/finetuning/fixtures/glue/SST-2/train.tsv").read_text()
    (folder / "my_labels").mkdir()
    for split in ("train", "dev"):
        (folder / "my_labels" / f"{split}.tsv").write_text("text\tlabel\n" + rows.split("\n", 1)[1])


def test_quick_start_pretrain_runs_as_written(tmp_path):
    commands = readme_commands("Quick start")
    assert [c.split()[:2] for c in commands] == [["make", "pretrain"], ["make", "test"]]
    recipe = re.search(r"^pretrain:.*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert recipe.group(1) == "$(BIN)/python -m keras_bert.pretrain $(ARGS)"
    result = run("python -m keras_bert.pretrain --model_dir runs/pretrain_default", tmp_path)
    assert "held-out seq_len=64: mlm_accuracy=" in result.stdout
    assert (tmp_path / "runs/pretrain_default/backbone.keras").is_file()


def test_own_text_commands_run_as_written(tmp_path):
    write_own_text(tmp_path)
    commands = readme_commands("Pre-train on your own text")
    assert [c.split()[2] for c in commands] == [
        "keras_bert.vocab",
        "keras_bert.pretrain",
        "keras_bert.finetune",
        "keras_bert.export",
    ]
    for command in commands:
        run(command, tmp_path)
    assert (tmp_path / "my_vocab.txt").is_file()
    assert (
        json.loads((tmp_path / "runs/my_classifier/eval_results.json").read_text())["eval_examples"]
        > 0
    )
    assert list((tmp_path / "runs/serving/my_classifier").glob("*/saved_model.pb"))
