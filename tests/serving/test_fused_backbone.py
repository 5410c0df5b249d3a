"""The serving graph's fused backbone computes what the Keras model does:
every backbone variant and every head, the Keras layers as the reference,
padding included."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import models
from keras_bert.serving.fused_backbone import FusedBackbone, fused_forward

pytestmark = [
    pytest.mark.backend_independent,  # Exports are built under TensorFlow.
    pytest.mark.skipif(
        keras.backend.backend() != "tensorflow", reason="the serving graph is TensorFlow's"
    ),
]

VOCABULARY_SIZE = 50
T = 12


def backbone(**levers):
    keras.utils.set_random_seed(3)
    settings = dict(num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32)
    settings.update(levers)
    return models.BertBackbone(
        vocabulary_size=VOCABULARY_SIZE, max_sequence_length=T, num_segments=2, **settings
    )


def trained_looking(model):
    """Weights drawn wide: the initial ones (LayerNorm's ones and zeros,
    small kernels) would hide a swapped or misscaled weight."""
    for weight in model.weights:
        weight.assign(np.random.default_rng(len(weight.path)).normal(0, 0.2, weight.shape))
    return model


def inputs(batch=3, lengths=(12, 7, 1)):
    rng = np.random.default_rng(0)
    padding = (np.arange(T)[None, :] < np.array(lengths)[:, None]).astype("int32")
    return {
        "token_ids": (rng.integers(1, VOCABULARY_SIZE, (batch, T)) * padding).astype("int32"),
        "segment_ids": ((np.arange(T)[None, :] >= 4) * padding).astype("int32"),
        "padding_mask": padding,
    }


def assert_same(keras_outputs, fused_outputs):
    flat_keras = keras.tree.flatten(keras_outputs)
    flat_fused = keras.tree.flatten(fused_outputs)
    assert len(flat_keras) == len(flat_fused)
    for expected, got in zip(flat_keras, flat_fused):
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), atol=1e-4, rtol=0)


@pytest.mark.parametrize(
    "levers",
    [
        {},
        {"normalize_first": True},  # Pre-LN, with the final LayerNorm.
        {"use_bias": False, "gated_feedforward": True},
        {"hidden_activation": "gelu_approximate", "num_heads": 4},
        {"output_encoder_layers": True},
    ],
    ids=["bert", "pre_ln", "no_bias_gated", "gelu_tanh_4_heads", "encoder_layers"],
)
def test_every_backbone_variant_computes_what_its_keras_layers_do(levers):
    model = trained_looking(backbone(**levers))
    features = inputs()
    assert_same(model(features, training=False), FusedBackbone(model)(features))
    graph = tf.function(FusedBackbone(model), autograph=False)
    assert_same(model(features, training=False), graph(features))


@pytest.mark.parametrize(
    "head",
    [
        lambda b: models.BertClassifier(b, num_classes=3),
        lambda b: models.BertRegressor(b),
        lambda b: models.BertTokenClassifier(b, num_labels=5),
        lambda b: models.BertSpanLabeler(b),
        lambda b: models.BertPretrainer(b),
    ],
    ids=["classifier", "regressor", "tagger", "span", "pretrainer"],
)
def test_every_head_on_the_fused_backbone_answers_as_the_keras_model(head):
    model = trained_looking(head(backbone()))
    features = inputs()
    if isinstance(model, models.BertPretrainer):
        features["mask_positions"] = np.array([[1, 3], [2, 0], [0, 0]], "int32")
    assert_same(model(features, training=False), fused_forward(model)(features))


def test_multiple_choice_runs_its_choices_through_the_fused_backbone():
    model = trained_looking(models.BertMultipleChoice(backbone(), num_choices=2))
    one = inputs()
    features = {k: np.stack([v, v[::-1]], axis=1) for k, v in one.items()}  # (B, C, T)
    assert_same(model(features, training=False), fused_forward(model)(features))


def test_the_fused_graph_has_two_dimensional_matmuls_and_one_for_query_key_value():
    model = backbone(num_layers=1)
    spec = {k: tf.TensorSpec([None, None], tf.int32) for k in inputs()}
    graph = tf.function(FusedBackbone(model), autograph=False).get_concrete_function(spec)
    ops = [op.type for op in graph.graph.get_operations()]
    # Query/key/value, attention output, intermediate, output, pooler.
    assert ops.count("MatMul") == 5 and ops.count("BiasAdd") == 5
    # Only attention's two products are batched.
    assert ops.count("BatchMatMulV2") == 2
