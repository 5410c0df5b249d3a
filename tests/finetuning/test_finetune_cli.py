"""`python -m keras_bert.finetune` end to end on the fixtures: train,
evaluate with the official metric, predict, save and export.

Every task type trains, evaluates and predicts on each backend; the export
tests run on the TensorFlow backend (the export issue covers the others).
"""

import json
import subprocess
import sys

import keras
import numpy as np
import pytest
import yaml

from keras_bert.finetune import main
from keras_bert.models import BertBackbone
from tests.finetuning.conftest import QUICK, finetune

tensorflow_only = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="SavedModel export tests run on the TensorFlow backend",
)


@tensorflow_only
def test_classification_end_to_end_with_export(checkpoint, fixtures, tmp_path):
    tf = pytest.importorskip("tensorflow")
    results = finetune("sst2", fixtures / "glue", checkpoint, tmp_path, export=True)
    assert results["task"] == "sst2" and results["eval_examples"] == 4
    assert 0.0 <= results["accuracy"] <= 1.0
    rows = [json.loads(l) for l in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and {r["prediction"] for r in rows} <= {"0", "1"}
    assert (tmp_path / "config.yaml").read_text().startswith("task: sst2")
    restored = keras.saving.load_model(tmp_path / "model.keras")
    assert restored.label_names == ["0", "1"]
    # The exported SavedModel answers raw text like the Keras model.
    served = tf.saved_model.load(str(tmp_path / results["export_dir"]))
    out = served.signatures["serve_text"](text_a=tf.constant(["a great story ."]))
    assert out["probabilities"].shape == (1, 2)
    assert out["label"].numpy()[0].decode() in ("0", "1")


def test_regression_end_to_end(fine_tuned):
    run, results = fine_tuned("stsb")
    assert set(results) >= {"pearson", "spearman"}
    # What it trained under, beside the config (evaluate reads past it).
    assert yaml.safe_load((run / "config.yaml").read_text())["trained_under"] == {
        "backend": keras.backend.backend(),
        "precision": "float32",
    }
    rows = [json.loads(l) for l in (run / "predictions.jsonl").read_text().splitlines()]
    assert all(isinstance(r["prediction"], float) for r in rows)
    # A fresh interpreter loads the compiled model (optimizer and its
    # learning-rate schedule included) after nothing but `import keras_bert`.
    load = (
        "import keras, keras_bert, sys; "
        "m = keras.saving.load_model(sys.argv[1]); print(type(m).__name__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", load, str(run / "model.keras")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "BertRegressor"


def test_generic_csv_classification(fine_tuned):
    run, results = fine_tuned("classification")
    assert set(results) >= {"accuracy", "matthews_corrcoef", "f1"}
    assert keras.saving.load_model(run / "model.keras").label_names == ["neg", "pos"]


def test_squad_end_to_end(fine_tuned):
    run, results = fine_tuned("squad_v1")  # max_seq_length 64, doc_stride 16.
    assert set(results) >= {"exact_match", "f1"} and results["eval_examples"] == 4
    predictions = json.loads((run / "predictions.json").read_text())
    assert set(predictions) == {"q1", "q2", "q3", "q4"}


def test_ner_end_to_end(fine_tuned):
    run, results = fine_tuned("conll2003")
    assert set(results) >= {"f1", "precision", "recall"}
    lines = (run / "predictions.txt").read_text().split("\n\n")
    assert lines[0].splitlines()[0].startswith("John B-PER ")


def test_multiple_choice_end_to_end(fine_tuned):
    run, results = fine_tuned("swag")
    assert results["eval_examples"] == 3 and 0.0 <= results["accuracy"] <= 1.0


@pytest.mark.slow
@tensorflow_only
@pytest.mark.parametrize(
    "task, folder, overrides",
    [
        ("squad_v2", "squad", ["data.split_train_from_dev=0.5"]),
        ("conll2003", "conll", []),
        ("swag", "swag", []),
        ("mnli", "glue", []),
        ("cola", "glue", []),
        (
            "pair_classification",
            "generic",
            ["data.train_file=train.jsonl", "data.dev_file=dev.jsonl"],
        ),
        (
            "regression",
            "generic",
            [
                "data.train_file=reg_train.tsv",
                "data.dev_file=reg_dev.tsv",
                "data.label_column=score",
            ],
        ),
    ],
)
def test_every_task_exports(checkpoint, fixtures, tmp_path, task, folder, overrides):
    results = finetune(task, fixtures / folder, checkpoint, tmp_path, *overrides, export=True)
    assert (tmp_path / results["export_dir"] / "saved_model.pb").is_file()


@pytest.mark.slow
def test_tiny_model_learns_sst2_fixture(checkpoint, fixtures, tmp_path):
    results = finetune(
        "sst2",
        fixtures / "glue",
        checkpoint,
        tmp_path,
        "training.epochs=40",
        "optimizer.learning_rate=1e-2",
        "data.dev_file=train.tsv",
    )
    assert results["accuracy"] == 1.0


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "args, message",
    [
        (["--set", "optimizer.lr=1"], "unknown config key 'optimizer.lr'"),
        (["--config", "gleu"], "No fine-tuning config 'gleu' (a YAML path, or one of: conll2003,"),
        (["--set", "training.epochs=many"], "training.epochs must be float"),
        (["--data_dir", "/nonexistent"], "--data_dir /nonexistent: no such directory"),
        (["--init_checkpoint", "/nonexistent.keras"], "/nonexistent.keras: no such checkpoint"),
        (
            ["--init_checkpoint", "random:bert_huge"],
            "--init_checkpoint random:bert_huge: Unknown model config 'bert_huge'",
        ),
        (
            ["--set", "data.max_seq_length=1"],
            "data.max_seq_length must be >= 5. Received: data.max_seq_length=1",
        ),
        (["--set", "export.seq_len=4"], "export.seq_len must be >= 5. Received: export.seq_len=4"),
        (
            ["--set", "training.batch_size=-8"],
            "training.batch_size must be >= 1. Received: training.batch_size=-8",
        ),
        (
            ["--set", "training.batch_size="],
            "training.batch_size must be >= 1. Received: training.batch_size=None",
        ),
        (
            ["--set", "training.epochs=0"],
            "training.epochs must be finite and > 0. Received: training.epochs=0.0",
        ),
        (
            ["--set", "training.epochs=.inf"],
            "training.epochs must be finite and > 0. Received: training.epochs=inf",
        ),
        (
            ["--set", "training.epochs=[1"],
            "--set: training.epochs is not a YAML value. Received: '[1'",
        ),
        (
            ["--set", "optimizer.learning_rate=-1"],
            "optimizer.learning_rate must be finite and > 0. Received: optimizer.learning_rate=-1.0",
        ),
        (
            ["--set", "optimizer.weight_decay=-5"],
            "optimizer.weight_decay must be finite and >= 0. Received: optimizer.weight_decay=-5.0",
        ),
        (
            ["--set", "optimizer.warmup_fraction=2"],
            "optimizer.warmup_fraction must be between 0 and 1. Received: "
            "optimizer.warmup_fraction=2.0",
        ),
        (
            ["--set", "optimizer.global_clipnorm=0"],
            "optimizer.global_clipnorm must be finite and > 0 (or null: no clipping). "
            "Received: optimizer.global_clipnorm=0.0",
        ),
        (
            ["--set", "training.dropout=1.5"],
            "training.dropout must be >= 0 and < 1. Received: training.dropout=1.5",
        ),
        (
            ["--set", "optimizer.learning_rate=.nan"],
            "optimizer.learning_rate must be finite and > 0. Received: optimizer.learning_rate=nan",
        ),
    ],
)
def test_input_errors_are_one_line(checkpoint, fixtures, tmp_path, capsys, args, message):
    base = {
        "--task": "sst2",
        "--data_dir": str(fixtures / "glue"),
        "--init_checkpoint": checkpoint,
        "--model_dir": str(tmp_path),
    }
    extra = []
    for flag, value in zip(args[::2], args[1::2]):
        if flag in base:
            base[flag] = value
        else:
            extra += [flag, value]
    argv = [x for pair in base.items() for x in pair] + extra
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err


@pytest.mark.backend_independent
def test_malformed_data_is_one_line(checkpoint, fixtures, tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.tsv").write_text((fixtures / "bad/train.tsv").read_text())
    (data / "dev.tsv").write_text("sentence\tlabel\nok\t1\n")
    argv = [
        "--task",
        "sst2",
        "--data_dir",
        str(data),
        "--init_checkpoint",
        checkpoint,
        "--model_dir",
        str(tmp_path / "out"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"error: {data}/train.tsv:3: expected at least 2 tab-separated columns for sst2, found 1"
    )


@pytest.mark.backend_independent
def test_single_class_training_set_is_one_line(checkpoint, tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.csv").write_text("text,label\na good film,pos\na fine film,pos \n")
    (data / "dev.csv").write_text("text,label\nok,pos\n")
    argv = [
        "--task",
        "classification",
        "--data_dir",
        str(data),
        "--init_checkpoint",
        checkpoint,
        "--model_dir",
        str(tmp_path / "out"),
    ]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"error: {data}/train.csv: one class only (['pos']); a classifier needs at "
        "least 2 (data.label_names lists them when the training file lacks some)\n"
    )


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "setup, message",
    [
        (
            "pretraining",
            "holds a pre-training run; fine-tune into another folder "
            "(--init_checkpoint takes its backbone.keras)",
        ),
        ("other_task", "holds a fine-tuning run of task 'cola'; pick another folder for 'sst2'"),
        (
            "running",
            "finetune.lock is held by pid {pid} on host {host}: another "
            "fine-tuning is using this model_dir.",
        ),
    ],
)
def test_model_dir_of_another_run_is_left_alone(
    checkpoint, fixtures, tmp_path, capsys, setup, message
):
    import os
    import socket

    model_dir = tmp_path / "out"
    model_dir.mkdir()
    if setup == "pretraining":
        (model_dir / "config.yaml").write_text("phases: []\n")
        (model_dir / "checkpoints" / "ckpt-1").mkdir(parents=True)
    elif setup == "other_task":
        (model_dir / "config.yaml").write_text("task: cola\n")
        (model_dir / "model.keras").write_text("cola's model")
    else:  # A live holder: this very process, as a concurrent run would be.
        (model_dir / "finetune.lock").write_text(f"{os.getpid()} {socket.gethostname()}\n")
    before = {p.name: p.read_bytes() for p in model_dir.iterdir() if p.is_file()}
    argv = [
        "--task",
        "sst2",
        "--data_dir",
        str(fixtures / "glue"),
        "--init_checkpoint",
        checkpoint,
        "--model_dir",
        str(model_dir),
    ]

    assert main(argv) == 2

    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert message.format(pid=os.getpid(), host=socket.gethostname()) in err
    assert {p.name: p.read_bytes() for p in model_dir.iterdir() if p.is_file()} == before


@pytest.mark.backend_independent
def test_same_task_reruns_into_its_folder(checkpoint, fixtures, fine_tuned):
    run, _ = fine_tuned("sst2")
    finetune("sst2", fixtures / "glue", checkpoint, run, "training.seed=1")
    assert not (run / "finetune.lock").exists()


@pytest.mark.backend_independent
def test_full_disk_is_one_line(checkpoint, fixtures, small_disk):
    import os
    import subprocess

    disk = small_disk("64k")
    argv = [
        "--task",
        "sst2",
        "--data_dir",
        str(fixtures / "glue"),
        "--init_checkpoint",
        checkpoint,
        "--model_dir",
        str(disk / "out"),
    ]
    for item in QUICK + ["export.enabled=false"]:
        argv += ["--set", item]
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert.finetune", *argv],
        capture_output=True,
        text=True,
        cwd=os.getcwd(),
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: no space left on device in {disk / 'out'}: free space and run the "
        "same command again (it replaces what this run wrote; nothing is left "
        "half-written)."
    )


@pytest.mark.backend_independent
def test_missing_vocabulary_needs_vocab_flag(fixtures, tmp_path, capsys):
    backbone = BertBackbone(
        vocabulary_size=174, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16
    )
    path = str(tmp_path / "novocab.keras")
    backbone.save(path)
    argv = [
        "--task",
        "sst2",
        "--data_dir",
        str(fixtures / "glue"),
        "--init_checkpoint",
        path,
        "--model_dir",
        str(tmp_path / "out"),
    ]
    assert main(argv) == 2
    assert "pass --vocab" in capsys.readouterr().err


@pytest.mark.backend_independent
def test_vocab_flag_is_copied_into_the_model_folder(fixtures, tmp_path):
    backbone = BertBackbone(
        vocabulary_size=174, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16
    )
    path = str(tmp_path / "novocab.keras")
    backbone.save(path)
    argv = [
        "--task",
        "sst2",
        "--data_dir",
        str(fixtures / "glue"),
        "--init_checkpoint",
        path,
        "--model_dir",
        str(tmp_path / "out"),
        "--vocab",
        str(fixtures / "vocab.txt"),
    ]
    for item in QUICK + ["export.enabled=false"]:
        argv += ["--set", item]
    assert main(argv) == 0
    assert (tmp_path / "out" / "vocab.txt").read_text() == (fixtures / "vocab.txt").read_text()


def _regression_data(tmp_path, fixtures, bad):
    data = tmp_path / "data"
    data.mkdir()
    rows = (fixtures / "generic/reg_train.tsv").read_text().splitlines()
    rows[2] = rows[2].rsplit("\t", 1)[0] + "\t" + bad
    (data / "train.tsv").write_text("\n".join(rows) + "\n")
    (data / "dev.tsv").write_text((fixtures / "generic/reg_dev.tsv").read_text())
    return data


REGRESSION = ["--set", "data.label_column=score", "--set", "export.enabled=false"]


@pytest.mark.backend_independent
@pytest.mark.parametrize("bad", ["nan", "inf", "-Infinity"])
def test_non_finite_regression_labels_are_one_line(checkpoint, fixtures, tmp_path, capsys, bad):
    data = _regression_data(tmp_path, fixtures, bad)
    argv = [
        "--task",
        "regression",
        "--data_dir",
        str(data),
        "--init_checkpoint",
        checkpoint,
        "--model_dir",
        str(tmp_path / "out"),
    ] + REGRESSION
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"error: train.tsv-3: label '{bad}' is not a finite number (train)\n"
    assert not (tmp_path / "out" / "eval_results.json").exists()


@pytest.mark.backend_independent
def test_non_finite_glue_score_is_one_line(checkpoint, fixtures, tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    rows = (fixtures / "glue/STS-B/train.tsv").read_text().splitlines()
    rows[1] = rows[1].rsplit("\t", 1)[0] + "\tnan"
    (data / "train.tsv").write_text("\n".join(rows) + "\n")
    (data / "dev.tsv").write_text((fixtures / "glue/STS-B/dev.tsv").read_text())
    argv = [
        "--task",
        "stsb",
        "--data_dir",
        str(data),
        "--init_checkpoint",
        checkpoint,
        "--model_dir",
        str(tmp_path / "out"),
    ]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"error: {data}/train.tsv:2: score 'nan' is not a finite number\n"
    )


def test_nan_loss_stops_the_run(checkpoint, fixtures, tmp_path, capsys, monkeypatch):
    from keras_bert.finetuning.sentence_task import SentenceTask

    # Past the label check, as any other cause of divergence would be.
    monkeypatch.setattr(SentenceTask, "_check_labels", lambda *args: None)
    data = _regression_data(tmp_path, fixtures, "nan")
    argv = [
        "--task",
        "regression",
        "--data_dir",
        str(data),
        "--init_checkpoint",
        checkpoint,
        "--model_dir",
        str(tmp_path / "out"),
    ] + REGRESSION
    for item in QUICK:
        argv += ["--set", item]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: training loss became nan in epoch 1; nothing saved.")
    assert err.count("\n") == 1
    # A first run that saved no model leaves none of its files, nor the
    # folder it created (issue 49).
    assert not (tmp_path / "out").exists()


@pytest.mark.backend_independent
def test_non_finite_predictions_are_not_scored():
    import tensorflow as tf

    from keras_bert.errors import FinetuneError
    from keras_bert.finetuning.batch_prediction import predict_batches

    class Model:
        def predict_on_batch(self, inputs):
            return {"score": np.where(inputs > 1, np.nan, 0.0)}

    dataset = tf.data.Dataset.from_tensor_slices(np.arange(4.0)).batch(2)
    with pytest.raises(FinetuneError, match="non-finite values .* for dev batch 2; no metric"):
        predict_batches(Model(), dataset)


@pytest.mark.backend_independent
def test_prediction_progress_counts_batches_on_stderr(capsys):
    import tensorflow as tf

    from keras_bert.finetuning.batch_prediction import predict_batches

    class Model:
        def predict_on_batch(self, inputs):
            return {"score": np.zeros_like(inputs)}

    dataset = tf.data.Dataset.from_tensor_slices(np.arange(6.0)).batch(2)
    capsys.readouterr()
    assert len(predict_batches(Model(), dataset)) == 3
    out, err = capsys.readouterr()
    assert out == "" and "3/3" in err
    predict_batches(Model(), dataset, progress=False)
    assert capsys.readouterr() == ("", "")


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "setup, message",
    [
        ({"data/train.tsv": b""}, "{tmp}/data/train.tsv: no examples"),
        ({"data/train.tsv": b"sentence\tlabel\n"}, "{tmp}/data/train.tsv: no examples"),
        ({"data/dev.tsv": b"sentence\tlabel\n"}, "{tmp}/data/dev.tsv: no examples"),
        (
            {"data/train.tsv": b"sentence\tlabel\ncaf\xe9\t1\n"},
            "{tmp}/data/train.tsv: line 2 is not UTF-8 (byte 0xe9 at column 4); "
            "save the file as UTF-8",
        ),
        (
            {"data/train.tsv": bytes(range(256))},
            "{tmp}/data/train.tsv: line 3 is not UTF-8 (byte 0x80 at column 115)",
        ),
        ({"bad.yaml": b"training: {batch_size: 8\n"}, "{tmp}/bad.yaml: not valid YAML: "),
        ({"bad.yaml": b"\xff\xfe"}, "{tmp}/bad.yaml: line 1 is not UTF-8 (byte 0xff at column 1)"),
        ({"out": b"mine"}, "--model_dir {tmp}/out: is a file, not a folder"),
        ({"file": b"mine"}, "--model_dir {tmp}/file/out: cannot write: [Errno 20] Not a directory"),
    ],
)
def test_bad_files_are_one_line(checkpoint, fixtures, tmp_path, capsys, setup, message):
    data = tmp_path / "data"
    _write(data / "train.tsv", (fixtures / "glue/SST-2/train.tsv").read_bytes())
    _write(data / "dev.tsv", (fixtures / "glue/SST-2/dev.tsv").read_bytes())
    for name, content in setup.items():
        _write(tmp_path / name, content)
    argv = [
        "--task",
        "sst2",
        "--data_dir",
        str(data),
        "--init_checkpoint",
        checkpoint,
        "--model_dir",
        str(tmp_path / ("file/out" if "file" in setup else "out")),
    ]
    if "bad.yaml" in setup:
        argv += ["--config", str(tmp_path / "bad.yaml")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: " + message.format(tmp=tmp_path)) and err.count("\n") == 1
    if "out" in setup:
        assert (tmp_path / "out").read_bytes() == b"mine"


@pytest.mark.backend_independent
@pytest.mark.parametrize("kept", [0.5, 10], ids=["half", "ten_bytes"])
def test_truncated_checkpoint_is_named_as_such(checkpoint, fixtures, tmp_path, capsys, kept):
    # Ten bytes: shorter than a zip's end record, a traceback from GFile's seek.
    data = open(checkpoint, "rb").read()
    broken = tmp_path / "broken.keras"
    broken.write_bytes(data[: int(len(data) * kept) if kept < 1 else kept])
    argv = [
        "--task",
        "sst2",
        "--data_dir",
        str(fixtures / "glue"),
        "--init_checkpoint",
        str(broken),
        "--model_dir",
        str(tmp_path / "out"),
    ]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"error: {broken}: not a .keras archive (truncated or corrupt zip file)\n"
    )


@pytest.mark.backend_independent
def test_empty_training_file_of_any_task_is_one_line(checkpoint, fixtures, tmp_path, capsys):
    data = tmp_path / "data"
    _write(data / "train.txt", b"-DOCSTART- -X- -X- O\n\n")
    _write(data / "valid.txt", (fixtures / "conll/valid.txt").read_bytes())
    argv = [
        "--task",
        "conll2003",
        "--data_dir",
        str(data),
        "--init_checkpoint",
        checkpoint,
        "--model_dir",
        str(tmp_path / "out"),
    ]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"error: --data_dir {data}: the training file holds no examples\n"
    )


def copy_to_ram(ram_dir, checkpoint, fixtures):
    """SST-2's fixture files and the checkpoint on `ram://`, which stands in
    for `gs://`: paths with a scheme, no directory rename."""
    import tensorflow as tf

    tf.io.gfile.makedirs(f"{ram_dir}/data")
    for name in ("train.tsv", "dev.tsv"):
        tf.io.gfile.copy(str(fixtures / "glue" / "SST-2" / name), f"{ram_dir}/data/{name}")
    tf.io.gfile.copy(checkpoint, f"{ram_dir}/tiny.keras")
    return [
        "--task",
        "sst2",
        "--data_dir",
        f"{ram_dir}/data",
        "--init_checkpoint",
        f"{ram_dir}/tiny.keras",
        "--model_dir",
        f"{ram_dir}/run",
    ] + [arg for item in QUICK for arg in ("--set", item)]


@pytest.mark.backend_independent
def test_data_checkpoint_and_model_dir_on_a_remote_file_system(checkpoint, fixtures, ram_dir):
    import tensorflow as tf

    from keras_bert.predict import main as predict

    argv = copy_to_ram(ram_dir, checkpoint, fixtures)
    assert main(argv + ["--set", "export.enabled=false"]) == 0
    run = f"{ram_dir}/run"
    assert set(tf.io.gfile.listdir(run)) == {
        "config.yaml",
        "vocab.txt",
        "model.keras",
        "outputs.json",
        "predictions.jsonl",
        "eval_results.json",
        "logs",
    }
    with tf.io.gfile.GFile(f"{run}/eval_results.json") as f:
        results = json.load(f)
    assert results["eval_examples"] == 4 and 0.0 <= results["accuracy"] <= 1.0
    assert keras.saving.load_model(f"{run}/model.keras").label_names == ["0", "1"]

    assert predict(["--model_dir", run, "--input", f"{ram_dir}/data/dev.tsv"]) == 0
    with tf.io.gfile.GFile(f"{run}/predictions_dev.jsonl") as f:
        assert len(f.read().splitlines()) == 4
    assert not tf.io.gfile.exists(f"{run}/finetune.lock")  # Released.


@pytest.mark.backend_independent
@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="under JAX and PyTorch the SavedModel is written by a child "
    "process, and a child's ram:// is its own (gs:// is shared)",
)
def test_export_into_a_model_dir_on_a_remote_file_system(checkpoint, fixtures, ram_dir):
    import tensorflow as tf

    assert main(copy_to_ram(ram_dir, checkpoint, fixtures) + ["--set", "export.enabled=true"]) == 0
    with tf.io.gfile.GFile(f"{ram_dir}/run/eval_results.json") as f:
        export_dir = json.load(f)["export_dir"]
    assert export_dir == "export/1"
    assert tf.io.gfile.listdir(f"{ram_dir}/run/export") == ["1"]  # No staging left.
    served = tf.saved_model.load(f"{ram_dir}/run/{export_dir}")
    out = served.signatures["serve_text"](text_a=tf.constant(["a great story ."]))
    assert out["probabilities"].shape == (1, 2)


@pytest.mark.backend_independent
def test_finetune_takes_the_measured_backend(monkeypatch, tmp_path, capsys):
    # As `pretrain` does: `use_fastest_backend` (which keeps a KERAS_BACKEND
    # the user set, and measures once per machine otherwise).
    from keras_bert.runtime import command

    chosen = []
    monkeypatch.setattr(command, "use_fastest_backend", lambda: chosen.append(True))
    # Passes the checks made before the measurement: the folder and the
    # checkpoint exist (the checkpoint is not read until after).
    (tmp_path / "empty").mkdir()
    (tmp_path / "c.keras").write_text("not an archive")
    argv = ["--task", "sst2", "--data_dir", str(tmp_path / "empty")]
    argv += ["--init_checkpoint", str(tmp_path / "c.keras"), "--model_dir", str(tmp_path / "run")]
    assert main(argv) == 2
    assert chosen == [True]
    assert capsys.readouterr().err.startswith("error: ")
