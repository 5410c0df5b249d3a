"""Every path flag of every command, given a file system it cannot use,
answers in one line naming the path (issue 49, item 5). `nosuchfs://`
stands in for a bucket that cannot be reached: the same harness path
(`file_io.user_file_error`) words both, and it answers at once, offline.
The wording for an unreachable `gs://` bucket: tests/test_file_io.py."""

import importlib
import os

import pytest

from keras_bert.paths import DATA

pytestmark = pytest.mark.backend_independent

REMOTE = "nosuchfs://keras-bert-test/x"
VOCAB = str(DATA / "vocab" / "bert_uncased_vocab.txt")
CORPUS = str(DATA / "corpus" / "inaugural" / "*.txt")


@pytest.fixture(scope="module")
def backbone_file(tmp_path_factory):
    from keras_bert import BertBackbone

    path = tmp_path_factory.mktemp("model") / "backbone.keras"
    backbone = BertBackbone(
        vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16
    )
    backbone.save(str(path))
    return str(path)


CASES = {
    "vocab --input": ("vocab", ["--input", f"{REMOTE}/*.txt", "--output", "{tmp}/vocab.txt"]),
    "vocab --output": (
        "vocab",
        ["--input", CORPUS, "--output", f"{REMOTE}/vocab.txt", "--vocab_size", "200"],
    ),
    "data --input": (
        "data",
        ["--input", f"{REMOTE}/*.txt", "--output", "{tmp}/shards", "--vocab", VOCAB],
    ),
    "data --output": (
        "data",
        ["--input", CORPUS, "--output", f"{REMOTE}/shards", "--vocab", VOCAB],
    ),
    "export --model": ("export", ["--model", f"{REMOTE}/m.keras", "--output", "{tmp}/served"]),
    "export --output": ("export", ["--model", "{backbone}", "--output", f"{REMOTE}/served"]),
    "evaluate --model_dir": ("evaluate", ["--model_dir", REMOTE, "--input", "{tmp}/dev.tsv"]),
    "predict --model_dir": ("predict", ["--model_dir", REMOTE, "--input", "{tmp}/dev.tsv"]),
    "finetune --data_dir": (
        "finetune",
        ["--task", "sst2", "--data_dir", REMOTE, "--init_checkpoint", "{backbone}"]
        + ["--model_dir", "{tmp}/run", "--vocab", VOCAB],
    ),
    "finetune --init_checkpoint": (
        "finetune",
        ["--task", "sst2", "--data_dir", "{tmp}", "--init_checkpoint", f"{REMOTE}/m.keras"]
        + ["--model_dir", "{tmp}/run", "--vocab", VOCAB],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_path_on_a_file_system_it_cannot_use_is_one_line(case, tmp_path, backbone_file, capsys):
    command, args = CASES[case]
    args = [a.format(tmp=tmp_path, backbone=backbone_file) for a in args]
    before = sorted(os.listdir(tmp_path))
    status = importlib.import_module(f"keras_bert.{command}").main(args)
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "nosuchfs://keras-bert-test/x" in err, err
    assert sorted(os.listdir(tmp_path)) == before  # Nothing written.
