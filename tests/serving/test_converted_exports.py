"""export's `--tflite` and `--onnx`: the token-id model as a TFLite
flatbuffer and as an ONNX file.

Every task head's `model.tflite` and `model.onnx` are run by LiteRT and by
ONNX Runtime in a fresh process that imports neither TensorFlow nor
keras_bert (`converted_fresh.py`), and their answers are compared with the
Keras model's own on the same ids. The files are converted from
TensorFlow's graph whatever backend built the model (the export runs under
TensorFlow), so these run once.
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
from keras_bert.serving import converted_check, export_for_serving
from keras_bert.serving.bert_serving_module import BertServingModule
from keras_bert.serving.onnx_export import onnx_model
from keras_bert.serving.tflite_export import tflite_flatbuffer
from tests.serving.test_serving_export import ROOT, SEQ_LEN, _backbone, vocab  # noqa: F401

pytestmark = pytest.mark.backend_independent

FORMATS = {"tflite": tflite_flatbuffer, "onnx": onnx_model}  # File suffix -> converter.

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
    """`[(model.tflite or model.onnx path, inputs)]` answered by LiteRT or
    ONNX Runtime in a fresh process."""
    request_file, result_file = tmp_path / "requests.json", tmp_path / "results.json"
    request_file.write_text(
        json.dumps(
            [{"path": p, "inputs": {k: v.tolist() for k, v in i.items()}} for p, i in requests]
        )
    )
    script = os.path.join(ROOT, "tests", "serving", "converted_fresh.py")
    result = subprocess.run(
        [sys.executable, script, str(request_file), str(result_file)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result_file.read_text())


def write_converted(model, vocab, folder, suffix, quantization):
    """`model`'s `suffix` ("tflite" or "onnx") file, written into `folder`;
    its path."""
    vocab_file = folder / "vocab.txt"
    vocab_file.write_text("".join(token + "\n" for token in vocab))
    module = BertServingModule(model, vocab, str(vocab_file), lower_case=True, seq_len=SEQ_LEN)
    path = folder / f"{quantization}.{suffix}"
    path.write_bytes(FORMATS[suffix](module, quantization))
    return str(path)


@pytest.fixture(scope="module")
def heads(vocab, tmp_path_factory):
    """name -> (model, its inputs, {suffix: its float32 file's path})."""
    built = {}
    for name, head in HEADS.items():
        folder = tmp_path_factory.mktemp(name.replace(" ", "_"))
        model = head(_backbone(vocab))
        paths = {
            suffix: write_converted(model, vocab, folder, suffix, "float32") for suffix in FORMATS
        }
        built[name] = (model, id_inputs(model, len(vocab)), paths)
    return built


def test_every_head_answers_as_the_keras_model(heads, tmp_path):
    requests = [(p, inputs) for _, inputs, paths in heads.values() for p in paths.values()]
    answers = iter(run_fresh(requests, tmp_path))
    for name, (model, inputs, paths) in heads.items():
        expected = keras_outputs(model, inputs)
        for suffix in paths:
            answer = next(answers)
            assert sorted(answer) == sorted(expected), (name, suffix)
            for key, value in expected.items():
                np.testing.assert_allclose(
                    np.array(answer[key]),
                    keras.ops.convert_to_numpy(value),
                    atol=1e-4,
                    err_msg=f"{name} {suffix}",
                )


def test_an_id_outside_the_table_is_refused(heads, tmp_path):
    _, inputs, paths = heads["classifier"]
    bad = dict(inputs, token_ids=np.full_like(inputs["token_ids"], 10**6))
    tflite, onnx = run_fresh([(paths["tflite"], bad), (paths["onnx"], bad)], tmp_path)
    assert "gather" in tflite["error"].lower()
    assert "out of" in onnx["error"].lower() and "bounds" in onnx["error"].lower()


@pytest.mark.parametrize("suffix", FORMATS)
def test_dynamic_int8_is_smaller_and_close(heads, vocab, tmp_path, suffix):
    """The backbone's outputs (LayerNorm'd, of order 1; an untrained
    head's logits are near 0, where int8's steps are coarse)."""
    model, inputs, paths = heads["backbone"]
    path = write_converted(model, vocab, tmp_path, suffix, "dynamic_int8")
    assert os.path.getsize(path) < os.path.getsize(paths[suffix]) / 2
    quantized, full = run_fresh([(path, inputs), (paths[suffix], inputs)], tmp_path)
    for name, value in full.items():
        gap = np.abs(np.array(quantized[name]) - np.array(value)).max()
        assert 0 < gap < 0.05 * np.abs(np.array(value)).max(), name


def test_cli_writes_both_files_into_the_version(vocab, tmp_path):
    """`export --tflite --onnx` as a user runs it, on a model another
    process saved."""
    model = models.BertClassifier(_backbone(vocab), num_classes=2)
    model.save(str(tmp_path / "model.keras"))
    output = tmp_path / "served"
    command = [sys.executable, "-m", "keras_bert.export", "--model", str(tmp_path / "model.keras")]
    command += ["--output", str(output), "--seq_len", str(SEQ_LEN)]
    command += ["--tflite", "float32", "--onnx", "float32"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(os.listdir(output / "1")) == [
        "assets",
        "fingerprint.pb",
        "model.onnx",
        "model.tflite",
        "saved_model.pb",
        "variables",
    ]
    inputs = id_inputs(model, len(vocab))
    paths = [str(output / "1" / f"model.{suffix}") for suffix in FORMATS]
    expected = keras.ops.convert_to_numpy(model(inputs))
    for answer in run_fresh([(path, inputs) for path in paths], tmp_path):
        np.testing.assert_allclose(answer["logits"], expected, atol=1e-4)


@pytest.mark.parametrize("flag", ["--tflite", "--onnx"])
def test_cli_refuses_an_unknown_quantization_in_one_line(tmp_path, flag):
    command = [sys.executable, "-m", "keras_bert.export", "--model", str(tmp_path / "m.keras")]
    command += ["--output", str(tmp_path / "out"), flag, "int4"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()[-1:]
    assert f"argument {flag}: invalid choice: 'int4'" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("suffix", FORMATS)
def test_a_conversion_that_answers_otherwise_leaves_no_version(
    vocab, tmp_path, monkeypatch, suffix
):
    """The float32 check refuses the export (here: with no tolerance at
    all) before anything is written."""
    monkeypatch.setattr(converted_check, "TOLERANCE", -1.0)
    model = models.BertClassifier(_backbone(vocab), num_classes=2)
    with pytest.raises(ExportError, match="differs from serve_token_ids"):
        export_for_serving(model, str(tmp_path / "out"), seq_len=SEQ_LEN, **{suffix: "float32"})
    assert not (tmp_path / "out").exists()


def test_without_the_onnx_packages_the_export_says_what_to_install(vocab, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tf2onnx", None)  # `import tf2onnx` fails.
    model = models.BertClassifier(_backbone(vocab), num_classes=2)
    with pytest.raises(ExportError, match="pip install tf2onnx==.* onnxruntime=="):
        export_for_serving(model, str(tmp_path / "out"), seq_len=SEQ_LEN, onnx="float32")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("suffix", FORMATS)
def test_the_library_refuses_an_unknown_quantization(vocab, tmp_path, suffix):
    model = models.BertClassifier(_backbone(vocab), num_classes=2)
    with pytest.raises(ExportError, match=f"`{suffix}` must be None or one of float32, dynamic"):
        export_for_serving(model, str(tmp_path / "out"), **{suffix: "int4"})


def test_the_commands_choices_are_the_librarys():
    from keras_bert.export import QUANTIZATIONS

    assert QUANTIZATIONS == converted_check.QUANTIZATIONS
