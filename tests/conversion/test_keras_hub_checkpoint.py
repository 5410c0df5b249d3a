"""keras-hub `BertBackbone` (.keras, .weights.h5, preset) -> keras_bert."""

import json
import os

import keras
import keras_hub
import numpy as np
import pytest

import keras_bert
from keras_bert.conversion import CheckpointError, convert, read_keras_hub
from tests.conversion.tiny_bert import VOCAB

KERAS_HUB_TINY = dict(
    vocabulary_size=40,
    num_layers=2,
    num_heads=2,
    hidden_dim=8,
    intermediate_dim=16,
    max_sequence_length=16,
)


@pytest.fixture
def hub_backbone():
    """A keras-hub BertBackbone with every weight random (LayerNorms too)."""
    backbone = keras_hub.models.BertBackbone(**KERAS_HUB_TINY)
    rng = np.random.default_rng(0)
    for variable in backbone.weights:
        variable.assign(rng.normal(0.0, 0.5, variable.shape).astype("float32"))
    return backbone


def _assert_same_outputs(model, hub_backbone, inputs):
    expected = hub_backbone(inputs, training=False)
    actual = model(inputs, training=False)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(actual[key]),
            keras.ops.convert_to_numpy(expected[key]),
            atol=1e-5,
        )


def test_keras_archive(tmp_path, hub_backbone, inputs):
    hub_backbone.save(tmp_path / "hub.keras")
    (tmp_path / "vocab.txt").write_text("".join(t + "\n" for t in VOCAB))

    report = convert(tmp_path / "hub.keras", tmp_path / "ours.keras")
    model = keras.saving.load_model(tmp_path / "ours.keras")

    assert isinstance(model, keras_bert.BertBackbone)
    assert model.hidden_activation == "gelu_approximate"  # keras-hub's GELU.
    assert model.vocabulary == VOCAB
    assert "keras-hub archive" in report[0]
    _assert_same_outputs(model, hub_backbone, inputs)


def test_bare_weights_file_infers_config(tmp_path, hub_backbone, inputs):
    hub_backbone.save_weights(tmp_path / "hub.weights.h5")

    checkpoint = read_keras_hub(tmp_path / "hub.weights.h5")

    assert checkpoint.config["num_layers"] == 2
    assert checkpoint.config["num_heads"] == 2
    assert checkpoint.vocabulary is None
    _assert_same_outputs(checkpoint.to_model(), hub_backbone, inputs)


def test_preset_folder(tmp_path, hub_backbone, inputs):
    folder = tmp_path / "preset"
    os.makedirs(folder / "assets" / "tokenizer")
    hub_backbone.save_weights(folder / "model.weights.h5")
    (folder / "config.json").write_text(
        json.dumps(keras.saving.serialize_keras_object(hub_backbone))
    )
    (folder / "assets" / "tokenizer" / "vocabulary.txt").write_text("\n".join(VOCAB))

    model = read_keras_hub(folder).to_model()

    assert model.vocabulary == VOCAB
    _assert_same_outputs(model, hub_backbone, inputs)


def test_mismatched_weights_are_listed(tmp_path, hub_backbone):
    hub_backbone.save_weights(tmp_path / "hub.weights.h5")
    config = dict(KERAS_HUB_TINY, num_layers=3, hidden_dim=12)
    (tmp_path / "config.json").write_text(
        json.dumps({"class_name": "BertBackbone", "config": config})
    )
    with pytest.raises(CheckpointError) as error:
        read_keras_hub(tmp_path / "hub.weights.h5")
    message = str(error.value)
    assert "missing: layers/transformer_encoder_2/" in message
    assert "mis-shaped: layers/dense/vars/0 (8, 8) vs (12, 12)" in message


@pytest.mark.backend_independent
def test_a_size_out_of_bounds_is_one_error_before_building(tmp_path, hub_backbone):
    # Issue 67 item 9: keras-hub's class allocated it, out of memory.
    hub_backbone.save_weights(tmp_path / "hub.weights.h5")
    config = dict(KERAS_HUB_TINY, hidden_dim=100_000_000_000)
    (tmp_path / "config.json").write_text(
        json.dumps({"class_name": "BertBackbone", "config": config})
    )
    with pytest.raises(CheckpointError) as error:
        read_keras_hub(tmp_path / "hub.weights.h5")
    assert str(error.value).endswith(
        "bad keras-hub config: `hidden_dim` must be an integer in [1, 65,536]. "
        "Received: hidden_dim=100000000000"
    )


@pytest.mark.backend_independent
def test_corrupt_weights_file(tmp_path, hub_backbone):
    hub_backbone.save_weights(tmp_path / "hub.weights.h5")
    path = tmp_path / "hub.weights.h5"
    path.write_bytes(path.read_bytes()[:500])
    with pytest.raises(CheckpointError, match="unreadable HDF5"):
        read_keras_hub(path)


@pytest.mark.backend_independent
def test_other_archives_are_refused(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.save(tmp_path / "other.keras")
    with pytest.raises(CheckpointError, match="expected a keras-hub BertBackbone"):
        convert(tmp_path / "other.keras", tmp_path / "out.keras")
