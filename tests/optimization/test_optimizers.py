import keras
import numpy as np
import pytest

from keras_bert import BertBackbone, BertPretrainer
from keras_bert.optimization import AdamWeightDecay, create_optimizer
from keras_bert.pretraining import (
    OptimizerConfig,
    compile_pretrainer,
    to_keras_batch,
)


def tiny_pretrainer():
    backbone = BertBackbone(
        vocabulary_size=50,
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        dropout=0.0,
        max_sequence_length=16,
    )
    return BertPretrainer(backbone)


def batch(n=4, t=8, p=3, v=50, seed=0):
    rng = np.random.default_rng(seed)
    features = {
        "token_ids": rng.integers(0, v, (n, t)).astype("int32"),
        "segment_ids": np.zeros((n, t), "int32"),
        "padding_mask": np.ones((n, t), "int32"),
        "mask_positions": rng.integers(0, t, (n, p)).astype("int32"),
    }
    labels = {
        "mlm": rng.integers(0, v, (n, p)).astype("int32"),
        "nsp": rng.integers(0, 2, (n,)).astype("int32"),
    }
    weights = {"mlm": np.ones((n, p), "float32"), "nsp": np.ones((n,), "float32")}
    return features, labels, weights


def test_paper_hyperparameters():
    optimizer = create_optimizer(OptimizerConfig(), total_steps=1_000_000)
    assert isinstance(optimizer, keras.optimizers.AdamW)
    assert optimizer.weight_decay == 0.01
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.999, 1e-6)
    assert optimizer.global_clipnorm == 1.0
    lamb = create_optimizer(OptimizerConfig(name="lamb"), total_steps=20_000)
    assert isinstance(lamb, keras.optimizers.Lamb)


def test_the_original_optimizer_and_schedule_by_name():
    config = OptimizerConfig(
        name="adam_weight_decay", decay_start="step_0", learning_rate=1.0, warmup_steps=10
    )
    optimizer = create_optimizer(config, total_steps=100)
    assert isinstance(optimizer, AdamWeightDecay)
    assert optimizer.weight_decay is None  # no Keras decay before the step
    assert optimizer.weight_decay_rate == 0.01
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.999, 1e-6)
    assert optimizer.global_clipnorm == 1.0
    assert optimizer.get_config()["exclude_from_weight_decay"] == ["gamma", "beta", "bias"]
    # step_0: 1 - 10/100 of the peak right after warmup.
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(optimizer._learning_rate(10))), 0.9)
    with pytest.raises(ValueError, match="Received: optimizer.name='adam'"):
        create_optimizer(OptimizerConfig(name="adam"), total_steps=20_000)


@pytest.mark.parametrize("name", ["adamw", "adam_weight_decay"])
def test_layer_norm_and_biases_are_not_decayed(name):
    model = tiny_pretrainer()
    optimizer = create_optimizer(OptimizerConfig(name=name), total_steps=20_000)
    optimizer.build(model.trainable_variables)
    excluded = {v.path for v in model.trainable_variables if not optimizer._use_weight_decay(v)}
    expected = {
        v.path for v in model.trainable_variables if v.path.endswith(("/gamma", "/beta", "bias"))
    }
    assert excluded == expected
    # Every LayerNorm parameter and every bias, nothing else.
    assert any("layer_norm/gamma" in p for p in excluded)
    assert "mlm_head/output_bias" in excluded
    assert all(
        p.endswith(("/kernel", "/embeddings"))
        for p in {v.path for v in model.trainable_variables} - excluded
    )


@pytest.mark.parametrize("name", ["adamw", "adam_weight_decay"])
def test_gradient_accumulation_counts_applied_updates(name):
    model = tiny_pretrainer()
    config = OptimizerConfig(
        name=name, learning_rate=1.0, warmup_steps=4, gradient_accumulation_steps=2
    )
    optimizer = create_optimizer(config, total_steps=8)
    compile_pretrainer(model, optimizer)
    features, labels, weights = batch()
    before = [np.array(w) for w in model.get_weights()]
    model.train_on_batch(features, labels, sample_weight=weights)
    # One micro-batch: accumulated, nothing applied, no update counted.
    assert int(optimizer.iterations) == 0
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    for _ in range(5):
        model.train_on_batch(features, labels, sample_weight=weights)
    assert int(optimizer.iterations) == 3
    # The schedule sees the update count: 3 of 4 warmup steps.
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(optimizer.learning_rate)), 0.75)


def test_to_keras_batch_adds_nsp_weights_and_casts_mask():
    import tensorflow as tf

    features = {"padding_mask": tf.constant([[True, False]]), "token_ids": tf.constant([[1, 0]])}
    labels = {"mlm": tf.constant([[3]]), "nsp": tf.constant([1])}
    out_f, out_l, out_w = to_keras_batch(features, labels, {"mlm": tf.constant([[1.0]])})
    assert out_f["padding_mask"].dtype == tf.int32
    np.testing.assert_array_equal(out_w["nsp"].numpy(), [1.0])
