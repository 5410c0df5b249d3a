import math

import keras
import numpy as np
import pytest

from keras_bert.layers import BertEncoderBlock


def layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def gelu(x, approximate):
    if approximate:
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2)))


def reference_block(block, x, padding_mask, approximate):
    """The post-LN block as in google-research/bert `transformer_model`."""
    w = {v.path.split("/", 1)[1]: np.asarray(v.numpy(), "float64") for v in block.weights}
    batch, length, hidden = x.shape
    heads = block.num_heads
    size = hidden // heads

    def project(name):
        kernel = w[f"self_attention/{name}/kernel"].reshape(hidden, hidden)
        bias = w[f"self_attention/{name}/bias"].reshape(hidden)
        # (B, T, H) -> (B, N, T, D)
        return (x @ kernel + bias).reshape(batch, length, heads, size).transpose(0, 2, 1, 3)

    q, k, v = project("query"), project("key"), project("value")
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(size)  # (B, N, T, T)
    scores = scores + (1.0 - padding_mask[:, None, None, :]) * -10000.0
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
    out_kernel = w["self_attention/attention_output/kernel"].reshape(hidden, hidden)
    attended = context @ out_kernel + w["self_attention/attention_output/bias"]
    x = layer_norm(
        x + attended, w["self_attention_layer_norm/gamma"], w["self_attention_layer_norm/beta"]
    )
    hidden_states = gelu(
        x @ w["intermediate_dense/kernel"] + w["intermediate_dense/bias"], approximate
    )
    ffn = hidden_states @ w["output_dense/kernel"] + w["output_dense/bias"]
    return layer_norm(x + ffn, w["output_layer_norm/gamma"], w["output_layer_norm/beta"])


@pytest.mark.parametrize("activation", ["gelu", "gelu_approximate"])
@pytest.mark.parametrize("attention_dropout", [None, 0.0], ids=["explicit", "fused"])
def test_matches_numpy_reference(activation, attention_dropout):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    padding_mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "float32")
    block = BertEncoderBlock(
        num_heads=2,
        intermediate_dim=16,
        hidden_activation=activation,
        attention_dropout=attention_dropout,
    )
    block.build(x.shape)
    for variable in block.weights:  # non-trivial biases and norms
        variable.assign(rng.normal(scale=0.5, size=variable.shape).astype("float32"))
    ours = keras.ops.convert_to_numpy(block(x, padding_mask=padding_mask))
    expected = reference_block(
        block, x.astype("float64"), padding_mask, activation == "gelu_approximate"
    )
    np.testing.assert_allclose(ours[0], expected[0], atol=1e-4)
    np.testing.assert_allclose(ours[1, :3], expected[1, :3], atol=1e-4)


def test_exact_and_tanh_gelu_differ():
    x = np.random.default_rng(1).normal(size=(1, 3, 8)).astype("float32")
    outputs = []
    for activation in ("gelu", "gelu_approximate"):
        block = BertEncoderBlock(num_heads=2, intermediate_dim=16, hidden_activation=activation)
        block.build(x.shape)
        rng = np.random.default_rng(0)  # same weights, large enough to matter
        for variable in block.weights:
            variable.assign(rng.normal(size=variable.shape).astype("float32"))
        outputs.append(keras.ops.convert_to_numpy(block(x)))
    assert not np.array_equal(outputs[0], outputs[1])
    np.testing.assert_allclose(outputs[0], outputs[1], atol=0.1)


def test_softmax_runs_in_float32_under_mixed_precision():
    block = BertEncoderBlock(num_heads=2, intermediate_dim=16, dtype="mixed_bfloat16")
    block.build((1, 3, 8))
    assert block.self_attention._softmax.compute_dtype == "float32"
    assert block.intermediate_dense.compute_dtype == "bfloat16"
    out = block(np.ones((1, 3, 8), "float32"))
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"


def blocks_with_shared_weights(dtype, seed=0):
    """The same weights in a block with attention dropout 0.1 (explicit
    softmax) and one with 0 (the backend's fused dot-product attention)."""
    blocks = [
        BertEncoderBlock(num_heads=4, intermediate_dim=64, attention_dropout=rate, dtype=dtype)
        for rate in (0.1, 0.0)
    ]
    rng = np.random.default_rng(seed)
    for block in blocks:
        block.build((2, 16, 32))
    for explicit, fused in zip(blocks[0].weights, blocks[1].weights):
        value = rng.normal(scale=0.3, size=explicit.shape).astype("float32")
        explicit.assign(value)
        fused.assign(value)
    return blocks


def test_zero_attention_dropout_takes_the_fused_path(monkeypatch):
    # Keras' MultiHeadAttention looks `ops.dot_product_attention` up at call
    # time; counting calls shows which path each block took.
    from keras.src import ops as keras_ops

    calls = []
    fused_attention = keras_ops.dot_product_attention

    def counting(*args, **kwargs):
        calls.append(1)
        return fused_attention(*args, **kwargs)

    monkeypatch.setattr(keras_ops, "dot_product_attention", counting)
    explicit, fused = blocks_with_shared_weights("float32")
    x = np.ones((2, 16, 32), "float32")
    explicit(x, training=False)
    assert not calls
    fused(x, training=False)
    assert len(calls) == 1


# Under mixed_bfloat16 both paths take float32 scores through a float32
# softmax (ours by its dtype policy, the fused kernels internally) and differ
# only in where the result is rounded back to bfloat16: measured at most one
# bfloat16 ulp (2^-6 = 0.0156 for outputs in [2, 4)) on all three backends;
# the tolerance is two ulps.
@pytest.mark.parametrize("dtype, atol", [("float32", 1e-5), ("mixed_bfloat16", 3.2e-2)])
def test_fused_and_explicit_attention_agree(dtype, atol):
    explicit, fused = blocks_with_shared_weights(dtype)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 16, 32)).astype("float32")
    padding_mask = np.ones((2, 16), "int32")
    padding_mask[1, 11:] = 0
    outputs = [
        keras.ops.convert_to_numpy(
            keras.ops.cast(block(x, padding_mask=padding_mask, training=False), "float32")
        )
        for block in (explicit, fused)
    ]
    np.testing.assert_allclose(outputs[1][0], outputs[0][0], atol=atol)
    np.testing.assert_allclose(outputs[1][1, :11], outputs[0][1, :11], atol=atol)


def test_config_round_trip():
    block = BertEncoderBlock(
        num_heads=4,
        intermediate_dim=64,
        dropout=0.2,
        attention_dropout=0.0,
        hidden_activation="gelu_approximate",
        layer_norm_epsilon=1e-6,
    )
    config = block.get_config()
    assert BertEncoderBlock.from_config(config).get_config() == config


def test_hidden_size_must_divide_heads():
    block = BertEncoderBlock(num_heads=4, intermediate_dim=16)
    with pytest.raises(ValueError, match="hidden_dim=30, num_heads=4"):
        block.build((1, 3, 30))
