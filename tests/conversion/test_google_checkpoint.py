"""Original google-research/bert checkpoints -> keras_bert."""

import os

import keras
import numpy as np
import pytest

import keras_bert  # noqa: F401  (registers the classes for load_model)
from keras_bert.conversion import CheckpointError, convert, read_google_checkpoint
from tests.conversion.tiny_bert import (
    TINY,
    VOCAB,
    original_shapes,
    random_weights,
    run_model,
    write_google_checkpoint,
)
from tests.reference_bert import bert_forward, pretraining_heads


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


def test_every_weight_lands_in_place(tmp_path, inputs, mask_positions):
    weights = random_weights(original_shapes())
    prefix = write_google_checkpoint(tmp_path / "google", weights, slots=True)

    report = convert(prefix, tmp_path / "model.keras")
    model = keras.saving.load_model(tmp_path / "model.keras")

    assert isinstance(model, keras_bert.BertPretrainer)
    assert model.backbone.vocabulary == VOCAB
    assert "training-state" in "\n".join(report)
    outputs = model(dict(inputs, mask_positions=mask_positions), training=False)
    encoded = model.backbone(inputs, training=False)
    sequence, pooled = bert_forward(weights, num_heads=TINY["num_heads"], **inputs)
    mlm, nsp = pretraining_heads(weights, sequence, pooled, mask_positions)
    np.testing.assert_allclose(_numpy(encoded["sequence_output"]), sequence, atol=1e-5)
    np.testing.assert_allclose(_numpy(encoded["pooled_output"]), pooled, atol=1e-5)
    np.testing.assert_allclose(_numpy(outputs["mlm"]), mlm, atol=1e-4)
    np.testing.assert_allclose(_numpy(outputs["nsp"]), nsp, atol=1e-5)


def test_encoder_only_checkpoint_gives_backbone(tmp_path, inputs):
    weights = random_weights(original_shapes(heads=False), seed=1)
    write_google_checkpoint(tmp_path / "google", weights)

    checkpoint = read_google_checkpoint(tmp_path / "google")
    model = checkpoint.to_model()

    assert isinstance(model, keras_bert.BertBackbone)
    assert checkpoint.part_status() == {"pooler": "carried"}
    sequence, _ = bert_forward(weights, num_heads=TINY["num_heads"], **inputs)
    np.testing.assert_allclose(run_model(model, inputs)["sequence_output"], sequence, atol=1e-5)


def _broken(tmp_path, change):
    weights = random_weights(original_shapes())
    change(weights)
    return write_google_checkpoint(tmp_path / "google", weights)


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "change, expected",
    [
        (
            lambda w: w.pop("bert/encoder/layer_1/output/dense/bias"),
            "1 missing: bert/encoder/layer_1/output/dense/bias",
        ),
        (
            lambda w: w.update(
                {"bert/encoder/layer_2/output/dense/bias": w["bert/pooler/dense/bias"]}
            ),
            "1 unexpected: bert/encoder/layer_2/output/dense/bias",
        ),
        (
            lambda w: w.update({"bert/pooler/dense/kernel": np.zeros((8, 9), "float32")}),
            "bert/pooler/dense/kernel (8, 9) vs (8, 8)",
        ),
        (
            lambda w: w.pop("cls/predictions/transform/LayerNorm/beta"),
            "1 missing: cls/predictions/transform/LayerNorm/beta",
        ),
    ],
    ids=["missing", "unexpected", "misshaped", "half_a_head"],
)
def test_mismatch_is_listed(tmp_path, change, expected):
    prefix = _broken(tmp_path, change)
    with pytest.raises(CheckpointError, match="does not match") as error:
        convert(prefix, tmp_path / "model.keras")
    assert expected in str(error.value)
    assert not os.path.exists(tmp_path / "model.keras")


@pytest.mark.backend_independent
def test_corrupt_checkpoint(tmp_path):
    prefix = write_google_checkpoint(tmp_path / "google", random_weights(original_shapes()))
    (data,) = [p for p in (tmp_path / "google").iterdir() if ".data-" in p.name]
    data.write_bytes(data.read_bytes()[:100])
    with pytest.raises(CheckpointError, match="unreadable TF checkpoint"):
        read_google_checkpoint(prefix)


@pytest.mark.backend_independent
def test_missing_config(tmp_path):
    prefix = write_google_checkpoint(tmp_path / "google", random_weights(original_shapes()))
    os.remove(tmp_path / "google" / "bert_config.json")
    with pytest.raises(CheckpointError, match="no bert_config.json"):
        read_google_checkpoint(prefix + ".index")
