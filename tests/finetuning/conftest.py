"""Fixtures for fine-tuning tests: the tiny vocabulary, its tokenizer, a
tiny backbone saved with it, and one fine-tuning run per task family."""

import fcntl
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import session_folder

FIXTURES = Path(__file__).resolve().parent / "fixtures"
QUICK = ["training.epochs=1", "training.batch_size=4", "training.verbose=0"]
# The task families `fine_tuned` trains: their fixture folder and overrides.
FAMILIES = {
    "sst2": ("glue", []),
    "stsb": ("glue", []),
    "classification": ("generic", []),
    "squad_v1": ("squad", ["data.max_seq_length=64", "data.doc_stride=16"]),
    "conll2003": ("conll", []),
    "swag": ("swag", []),
}


def finetune(task, data_dir, checkpoint, model_dir, *overrides, export=False):
    """`python -m keras_bert.finetune` in-process, one quick epoch; returns
    what the run wrote to eval_results.json."""
    from keras_bert.finetune import main

    args = [
        "--task",
        task,
        "--data_dir",
        str(data_dir),
        "--init_checkpoint",
        checkpoint,
        "--model_dir",
        str(model_dir),
    ]
    for item in QUICK + [f"export.enabled={str(export).lower()}"] + list(overrides):
        args += ["--set", item]
    assert main(args) == 0
    return json.loads((model_dir / "eval_results.json").read_text())


@pytest.fixture(scope="session")
def fixtures():
    return FIXTURES


@pytest.fixture(scope="session")
def tokenizer():
    import pipelines

    return pipelines.BertTokenizer(str(FIXTURES / "vocab.txt"))


def tiny_backbone(max_sequence_length):
    """A 1-layer, 16-wide backbone with the fixture vocabulary."""
    from keras_bert.models import BertBackbone

    backbone = BertBackbone(
        vocabulary_size=174,
        num_layers=1,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=max_sequence_length,
    )
    backbone.vocabulary = (FIXTURES / "vocab.txt").read_text().splitlines()
    return backbone


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory):
    """`tiny_backbone` of 384 positions, as .keras."""
    path = tmp_path_factory.mktemp("ckpt") / "tiny.keras"
    tiny_backbone(max_sequence_length=384).save(path)
    return str(path)


@pytest.fixture(scope="session")
def fine_tuned(checkpoint, tmp_path_factory):
    """`fine_tuned(task)`: `(model_dir, results)`, a copy of the one
    fine-tuning run of `task` (a key of FAMILIES) made in this session, and
    what it wrote to eval_results.json. The caller's own copy, to read or
    to add to.

    A family trains once for the whole session, whichever test asks first:
    the run lies where every pytest-xdist worker looks (`session_folder`),
    and a worker that asks while another trains it waits for that run (a
    lock per family)."""
    shared = session_folder(tmp_path_factory, "fine_tuned")

    def copy(task):
        run = shared / task / "run"
        with open(shared / f"{task}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # Released when closed.
            if not (shared / task / "done").exists():
                shutil.rmtree(shared / task, ignore_errors=True)  # A failed try's.
                folder, overrides = FAMILIES[task]
                finetune(task, FIXTURES / folder, checkpoint, run, *overrides)
                (shared / task / "done").touch()
        own = tmp_path_factory.mktemp(task) / "run"
        shutil.copytree(run, own)
        return own, json.loads((own / "eval_results.json").read_text())

    return copy
