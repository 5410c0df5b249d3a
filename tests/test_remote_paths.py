"""Every path flag of every command, given a file system it cannot use,
answers in one line naming the path (issue 49, item 5; issue 67 item 8:
the checks before start-up too, `--config gs://...` included). Two
stand-ins, both offline: `nosuchfs://` (a scheme TensorFlow does not know)
and a `gs://` bucket whose host cannot be resolved here, as on a machine
with no network. The wording for an unreachable `gs://` bucket:
tests/test_file_io.py."""

import importlib
import os

import pytest

from keras_bert.paths import DATA, ROOT
from tests.finetuning.conftest import checkpoint, fine_tuned  # noqa: F401 (fixtures)

pytestmark = pytest.mark.backend_independent

REMOTE = "{remote}"
FINETUNE_DATA = str(ROOT / "tests" / "finetuning" / "fixtures" / "glue")
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
    "finetune --model_dir": (
        "finetune",
        ["--task", "sst2", "--data_dir", FINETUNE_DATA, "--init_checkpoint", "{backbone}"]
        + ["--model_dir", f"{REMOTE}/run", "--vocab", VOCAB],
    ),
    "finetune --vocab": (
        "finetune",
        ["--task", "sst2", "--data_dir", FINETUNE_DATA, "--init_checkpoint", "{backbone}"]
        + ["--model_dir", "{tmp}/run", "--vocab", f"{REMOTE}/vocab.txt"],
    ),
    "finetune --config": (
        "finetune",
        ["--task", "sst2", "--data_dir", FINETUNE_DATA, "--init_checkpoint", "{backbone}"]
        + ["--model_dir", "{tmp}/run", "--config", f"{REMOTE}/c.yaml"],
    ),
    "pretrain --config": ("pretrain", ["--config", f"{REMOTE}/c.yaml"]),
    "pretrain --model_dir": ("pretrain", ["--model_dir", f"{REMOTE}/run"]),
    "pretrain --init_checkpoint": (
        "pretrain",
        ["--model_dir", "{tmp}/run", "--init_checkpoint", f"{REMOTE}/m.keras"],
    ),
    "evaluate --input": ("evaluate", ["--model_dir", "{run}", "--input", f"{REMOTE}/dev.tsv"]),
    "evaluate --output": (
        "evaluate",
        ["--model_dir", "{run}", "--input", "{dev}", "--output", f"{REMOTE}/scores"],
    ),
    "predict --input": ("predict", ["--model_dir", "{run}", "--input", f"{REMOTE}/test.tsv"]),
    "predict --output": (
        "predict",
        ["--model_dir", "{run}", "--input", "{dev}", "--output", f"{REMOTE}/p.jsonl"],
    ),
    "export --model_dir": ("export", ["--model_dir", f"{REMOTE}/run", "--output", "{tmp}/s"]),
    "export --vocab": (
        "export",
        ["--model", "{backbone}", "--output", "{tmp}/s", "--vocab", f"{REMOTE}/vocab.txt"],
    ),
    "convert --input": ("convert", ["--input", f"{REMOTE}/hf", "--output", "{tmp}/m.keras"]),
    "convert --output": ("convert", ["--input", "{backbone}", "--output", f"{REMOTE}/hf"]),
    "convert --vocab": (
        "convert",
        ["--input", "{backbone}", "--output", "{tmp}/hf", "--vocab", f"{REMOTE}/vocab.txt"],
    ),
    "data --vocab": (
        "data",
        ["--input", CORPUS, "--output", "{tmp}/shards", "--vocab", f"{REMOTE}/vocab.txt"],
    ),
}


@pytest.fixture(scope="module")
def fine_tuned_run(fine_tuned):
    """The session's SST-2 fine-tuning run (tests/finetuning/conftest.py)."""
    return str(fine_tuned("sst2")[0])


UNREACHABLE = {
    "unknown scheme": "nosuchfs://keras-bert-test/x",
    "unresolvable gs bucket": "gs://keras-bert-no-such-bucket/x",
}


@pytest.mark.parametrize("remote", sorted(UNREACHABLE))
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_path_on_a_file_system_it_cannot_use_is_one_line(
    case, remote, tmp_path, backbone_file, request, capsys
):
    command, args = CASES[case]
    run = request.getfixturevalue("fine_tuned_run") if "{run}" in args else None
    values = {
        "tmp": tmp_path,
        "backbone": backbone_file,
        "run": run,
        "dev": os.path.join(FINETUNE_DATA, "SST-2", "dev.tsv"),
        "remote": UNREACHABLE[remote],
    }
    args = [a.format(**values) for a in args]
    before = sorted(os.listdir(tmp_path))
    capsys.readouterr()  # What training the fixture's run printed.
    status = importlib.import_module(f"keras_bert.{command}").main(args)
    err = capsys.readouterr().err
    assert status == 2, err
    line = err.strip()
    assert "\n" not in line and "\t" not in line and "Traceback" not in err, err
    assert UNREACHABLE[remote] in line, err
    # Issue 67 item 8: an unreachable bucket was "no such directory".
    assert "no such" not in line.lower() or remote == "unknown scheme", err
    assert not any(name in line for name in (".previous-run", ".lock", ".partial")), err
    assert sorted(os.listdir(tmp_path)) == before  # Nothing written.
