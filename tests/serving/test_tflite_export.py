"""export's `--tflite`: the token-id model as a TFLite flatbuffer.

Every task head's `model.tflite` is run by LiteRT in a fresh process that
imports neither TensorFlow nor keras_bert (`tflite_fresh.py`), and its
answers are compared with the Keras model's own on the same ids. The
flatbuffer is TensorFlow's whatever backend built the model (the export runs
under TensorFlow), so these run once.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_bert import models
from keras_bert.errors import ExportError
from keras_bert.serving import export_for_serving, tflite_export
from keras_bert.serving.bert_serving_module import BertServingModule
from tests.serving.test_serving_export import ROOT, SEQ_LEN, _backbone, vocab  # noqa: F401

pytestmark = pytest.mark.backend_independent

HEADS = {
    "backbone": lambda backbone: backbone,
    "pretrainer": models.BertPretrainer,
    "classifier": lambda backbone: models.BertClassifier(backbone, num_classes=3),
    "regressor": models.BertRegressor,
    "span labeler": models.BertSpanLabeler,
    "tagger": lambda backbone: models.BertTokenClassifier(backbone, num_labels=4),
    "multiple choice": lambda backbone: models.BertMultipleChoice(backbone, num_choices=3),
}


def id_inputs(model, vocabulary_size):
    """Two rows of ids for `model`'s `serve_token_ids`, the second padded."""
    rng = np.random.default_rng(3)
    choices = getattr(model, "num_choices", None)
    shape = [2, choices, SEQ_LEN] if choices else [2, SEQ_LEN]
    padding = np.ones(shape, np.int32)
    padding[1, ..., SEQ_LEN // 2 :] = 0
    segments = np.zeros(shape, np.int32)
    segments[..., SEQ_LEN // 4 :] = 1
    inputs = {
        "token_ids": rng.integers(0, vocabulary_size, shape).astype(np.int32) * padding,
        "segment_ids": segments * padding,
        "padding_mask": padding,
    }
    if isinstance(model, models.BertPretrainer):
        inputs["mask_positions"] = np.array([[1, 5], [2, 0]], np.int32)
    return inputs


def keras_outputs(model, inputs):
    """The Keras model's answers, named as `serve_token_ids` names them."""
    outputs = model({k: keras.ops.convert_to_tensor(v) for k, v in inputs.items()})
    if not isinstance(outputs, dict):
        (outputs,) = [outputs]
        return {"score" if isinstance(model, models.BertRegressor) else "logits": outputs}
    return outputs


def run_fresh(requests, tmp_path):
    """`[(tflite path, inputs)]` answered by LiteRT in a fresh process."""
    request_file, result_file = tmp_path / "requests.json", tmp_path / "results.json"
    request_file.write_text(
        json.dumps(
            [{"path": p, "inputs": {k: v.tolist() for k, v in i.items()}} for p, i in requests]
        )
    )
    script = os.path.join(ROOT, "tests", "serving", "tflite_fresh.py")
    result = subprocess.run(
        [sys.executable, script, str(request_file), str(result_file)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result_file.read_text())


def write_tflite(model, vocab, folder, quantization):
    """`model`'s flatbuffer, written into `folder`; its path."""
    vocab_file = folder / "vocab.txt"
    vocab_file.write_text("".join(token + "\n" for token in vocab))
    module = BertServingModule(model, vocab, str(vocab_file), lower_case=True, seq_len=SEQ_LEN)
    path = folder / f"{quantization}.tflite"
    path.write_bytes(tflite_export.tflite_flatbuffer(module, quantization))
    return str(path)


@pytest.fixture(scope="module")
def heads(vocab, tmp_path_factory):
    """name -> (model, its inputs, its float32 flatbuffer's path)."""
    built = {}
    for name, head in HEADS.items():
        folder = tmp_path_factory.mktemp(name.replace(" ", "_"))
        model = head(_backbone(vocab))
        path = write_tflite(model, vocab, folder, "float32")
        built[name] = (model, id_inputs(model, len(vocab)), path)
    return built


def test_every_head_answers_as_the_keras_model(heads, tmp_path):
    answers = run_fresh([(path, inputs) for _, inputs, path in heads.values()], tmp_path)
    for (name, (model, inputs, _)), answer in zip(heads.items(), answers):
        expected = keras_outputs(model, inputs)
        assert sorted(answer) == sorted(expected), name
        for key, value in expected.items():
            np.testing.assert_allclose(
                np.array(answer[key]), keras.ops.convert_to_numpy(value), atol=1e-4, err_msg=name
            )


def test_an_id_outside_the_table_is_refused(heads, tmp_path):
    _, inputs, path = heads["classifier"]
    bad = dict(inputs, token_ids=np.full_like(inputs["token_ids"], 10**6))
    (answer,) = run_fresh([(path, bad)], tmp_path)
    assert "error" in answer and "gather" in answer["error"].lower()


def test_dynamic_int8_is_smaller_and_close(heads, vocab, tmp_path):
    model, inputs, float32_path = heads["classifier"]
    path = write_tflite(model, vocab, tmp_path, "dynamic_int8")
    assert os.path.getsize(path) < os.path.getsize(float32_path) / 2
    quantized, full = run_fresh([(path, inputs), (float32_path, inputs)], tmp_path)
    logits = np.array(full["logits"])
    gap = np.abs(np.array(quantized["logits"]) - logits).max()
    assert 0 < gap < 0.05 * np.abs(logits).max()


def test_cli_writes_the_flatbuffer_into_the_version(vocab, tmp_path):
    """`export --tflite` as a user runs it, on a model another process saved."""
    model = models.BertClassifier(_backbone(vocab), num_classes=2)
    model.save(str(tmp_path / "model.keras"))
    output = tmp_path / "served"
    command = [sys.executable, "-m", "keras_bert.export", "--model", str(tmp_path / "model.keras")]
    command += ["--output", str(output), "--seq_len", str(SEQ_LEN), "--tflite", "float32"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(os.listdir(output / "1")) == [
        "assets",
        "fingerprint.pb",
        "model.tflite",
        "saved_model.pb",
        "variables",
    ]
    inputs = id_inputs(model, len(vocab))
    (answer,) = run_fresh([(str(output / "1" / "model.tflite"), inputs)], tmp_path)
    np.testing.assert_allclose(
        answer["logits"], keras.ops.convert_to_numpy(model(inputs)), atol=1e-4
    )


def test_cli_refuses_an_unknown_quantization_in_one_line(tmp_path):
    command = [sys.executable, "-m", "keras_bert.export", "--model", str(tmp_path / "m.keras")]
    command += ["--output", str(tmp_path / "out"), "--tflite", "int4"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()[-1:]
    assert "argument --tflite: invalid choice: 'int4'" in line
    assert not (tmp_path / "out").exists()


def test_a_flatbuffer_that_answers_otherwise_leaves_no_version(vocab, tmp_path, monkeypatch):
    """The float32 check refuses the export (here: with no tolerance at
    all) before anything is written."""
    monkeypatch.setattr(tflite_export, "TOLERANCE", -1.0)
    model = models.BertClassifier(_backbone(vocab), num_classes=2)
    with pytest.raises(ExportError, match="differs from serve_token_ids"):
        export_for_serving(model, str(tmp_path / "out"), seq_len=SEQ_LEN, tflite="float32")
    assert not (tmp_path / "out").exists()


def test_the_library_refuses_an_unknown_quantization(vocab, tmp_path):
    model = models.BertClassifier(_backbone(vocab), num_classes=2)
    with pytest.raises(ExportError, match="`tflite` must be None or one of float32, dynamic_int8"):
        export_for_serving(model, str(tmp_path / "out"), tflite="int4")


def test_the_commands_choices_are_the_librarys():
    from keras_bert.export import TFLITE_CHOICES

    assert TFLITE_CHOICES == tflite_export.QUANTIZATIONS
