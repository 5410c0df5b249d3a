import keras
import numpy as np
import pytest

from keras_bert import BertBackbone
from keras_bert.model_configs import load_model_config
from tests.harness import run_model_test

TINY = dict(
    vocabulary_size=50,
    num_layers=2,
    num_heads=2,
    hidden_dim=8,
    intermediate_dim=16,
    max_sequence_length=12,
)


def tiny_inputs(batch=2, length=6, seed=0):
    rng = np.random.default_rng(seed)
    padding_mask = np.ones((batch, length), "int32")
    padding_mask[1, 4:] = 0
    return {
        "token_ids": rng.integers(0, 50, (batch, length)).astype("int32"),
        "segment_ids": (np.arange(length) >= 3).astype("int32")[None].repeat(batch, 0),
        "padding_mask": padding_mask,
    }


def test_model_harness(tmp_path):
    run_model_test(lambda dtype: BertBackbone(**TINY, dtype=dtype), tiny_inputs(), tmp_path)


@pytest.mark.parametrize(
    "name, expected",
    [("bert_base", 109_482_240), ("bert_large", 335_141_888)],
)
def test_paper_parameter_counts(name, expected, monkeypatch):
    # Counting needs shapes, not values: skip 335M truncated-normal draws.
    for module in ("bert_embeddings", "bert_encoder_block"):
        monkeypatch.setattr(f"keras_bert.layers.{module}.bert_initializer", lambda: "zeros")
    monkeypatch.setattr("keras_bert.models.bert_backbone.bert_initializer", lambda: "zeros")
    backbone = BertBackbone(**load_model_config(name))
    assert backbone.count_params() == expected


def test_padding_tokens_do_not_change_real_outputs():
    backbone = BertBackbone(**TINY)
    inputs = tiny_inputs()
    changed = {k: v.copy() for k, v in inputs.items()}
    changed["token_ids"][1, 4:] = [7, 9]
    changed["segment_ids"][1, 4:] = 0
    first = backbone(inputs, training=False)
    second = backbone(changed, training=False)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(first["sequence_output"])[1, :4],
        keras.ops.convert_to_numpy(second["sequence_output"])[1, :4],
        atol=1e-6,
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(first["pooled_output"]),
        keras.ops.convert_to_numpy(second["pooled_output"]),
        atol=1e-6,
    )


def test_dropout_active_only_in_training():
    backbone = BertBackbone(**TINY, dropout=0.5)
    inputs = tiny_inputs()
    train_a = keras.ops.convert_to_numpy(backbone(inputs, training=True)["sequence_output"])
    train_b = keras.ops.convert_to_numpy(backbone(inputs, training=True)["sequence_output"])
    assert not np.allclose(train_a, train_b)
    infer_a = keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    infer_b = keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    np.testing.assert_array_equal(infer_a, infer_b)


def test_encoder_layer_outputs():
    backbone = BertBackbone(**TINY, output_encoder_layers=True)
    outputs = backbone(tiny_inputs())
    assert len(outputs["encoder_outputs"]) == TINY["num_layers"]
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(outputs["encoder_outputs"][-1]),
        keras.ops.convert_to_numpy(outputs["sequence_output"]),
    )


def test_vocabulary_travels_in_keras_archive(tmp_path):
    backbone = BertBackbone(**TINY)
    backbone.vocabulary = [f"token{i}" for i in range(TINY["vocabulary_size"])]
    backbone.save(tmp_path / "backbone.keras")
    restored = keras.saving.load_model(tmp_path / "backbone.keras")
    assert restored.vocabulary == backbone.vocabulary


def test_heads_must_divide_hidden_dim():
    with pytest.raises(ValueError, match="hidden_dim=30, num_heads=4"):
        BertBackbone(**{**TINY, "hidden_dim": 30, "num_heads": 4})


def test_unknown_activation_is_named():
    with pytest.raises(ValueError, match="hidden_activation='swish'"):
        BertBackbone(**TINY, hidden_activation="swish")


def test_attention_dropout_follows_dropout_unless_given():
    follows = BertBackbone(**TINY, dropout=0.2)
    fused = BertBackbone(**TINY, dropout=0.2, attention_dropout=0.0)
    assert [b.attention_probability_dropout for b in follows.encoder_blocks] == [0.2, 0.2]
    assert [b.attention_probability_dropout for b in fused.encoder_blocks] == [0.0, 0.0]
    assert BertBackbone.from_config(fused.get_config()).attention_dropout == 0.0
    # A rebuilt config with another `dropout` keeps following it.
    rebuilt = BertBackbone.from_config({**follows.get_config(), "dropout": 0.1})
    assert rebuilt.encoder_blocks[0].attention_probability_dropout == 0.1


def test_attention_dropout_out_of_range_is_named():
    with pytest.raises(ValueError, match="attention_dropout=1.5"):
        BertBackbone(**TINY, attention_dropout=1.5)


@pytest.mark.parametrize(
    "lever",
    [{"normalize_first": True}, {"use_bias": False}, {"gated_feedforward": True}],
    ids=["pre_ln", "no_bias", "gated"],
)
def test_small_compute_lever_model_harness(tmp_path, lever):
    # Their numbers: tests/models/test_reference_parity.py.
    run_model_test(
        lambda dtype: BertBackbone(**TINY, **lever, dtype=dtype),
        tiny_inputs(),
        tmp_path,
    )


def test_no_bias_and_gated_blocks_have_the_weights_they_say():
    plain = BertBackbone(**TINY)
    lean = BertBackbone(**TINY, use_bias=False)
    gated = BertBackbone(**TINY, gated_feedforward=True)
    block = TINY["hidden_dim"] * TINY["intermediate_dim"]
    biases = 4 * TINY["hidden_dim"] + TINY["intermediate_dim"] + TINY["hidden_dim"]
    layers = TINY["num_layers"]
    assert plain.count_params() - lean.count_params() == layers * biases
    assert gated.count_params() - plain.count_params() == layers * (
        block + TINY["intermediate_dim"]
    )
    assert all(block.gate_dense is None for block in plain.encoder_blocks)
