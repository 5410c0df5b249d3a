"""Intermediate losses against numpy: the states they compare (the
independent BERT forward pass of tests/reference_bert.py), the losses
themselves, and a training step of `IntermediateDistiller`."""

import keras
import numpy as np
import pytest

from keras_bert.conversion.bert_name_map import backbone_weight_map
from keras_bert.distillation.intermediate import (
    IntermediateDistiller,
    attention_loss,
    default_layer_map,
    encoder_states,
    hidden_state_loss,
)
from keras_bert.models import BertBackbone, BertClassifier
from tests.reference_bert import bert_forward

PADDING = np.array([[1] * 7, [1] * 4 + [0] * 3], "int32")  # (B=2, T=7)


def backbone(layers, heads, width, seed):
    keras.utils.set_random_seed(seed)
    return BertBackbone(
        vocabulary_size=30,
        num_layers=layers,
        num_heads=heads,
        hidden_dim=width,
        intermediate_dim=2 * width,
        max_sequence_length=16,
    )


def batch(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "token_ids": rng.integers(0, 30, PADDING.shape).astype("int32") * PADDING,
        "segment_ids": np.zeros(PADDING.shape, "int32"),
        "padding_mask": PADDING,
    }


def test_the_states_compared_are_berts_hidden_states_and_attention():
    model = backbone(layers=2, heads=2, width=8, seed=0)
    inputs = batch()
    hidden, attention = encoder_states(model, inputs)
    weights = {m.name: m.from_keras() for m in backbone_weight_map(model)}
    reference = {}
    bert_forward(weights, num_heads=2, states=reference, **inputs)
    assert len(hidden) == 3 and len(attention) == 2
    for ours, theirs in zip(hidden, reference["hidden"]):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(ours), theirs, atol=1e-5)
    for ours, theirs in zip(attention, reference["attention"]):
        # Padded keys: 0 here, exp(-10000) in the original; padded queries
        # attend all the same.
        np.testing.assert_allclose(keras.ops.convert_to_numpy(ours), theirs, atol=1e-6)


def distributions(rng, shape, mask):
    """Random attention probabilities (B, N, T, T), 0 on padded keys."""
    logits = rng.normal(size=shape)
    weights = np.exp(logits) * mask[:, None, None, :]
    return (weights / weights.sum(-1, keepdims=True)).astype("float32")


def test_the_losses_match_numpy():
    rng = np.random.default_rng(1)
    mask = PADDING.astype("float64")
    student = [rng.normal(size=(2, 7, 4)).astype("float32") for _ in range(2)]
    teacher = [rng.normal(size=(2, 7, 6)).astype("float32") for _ in range(2)]
    projections = [keras.layers.Dense(6) for _ in range(2)]
    for projection in projections:
        projection.build((None, None, 4))
    ours = hidden_state_loss(student, teacher, projections, PADDING)
    expected = []
    for s, t, projection in zip(student, teacher, projections):
        kernel, bias = (keras.ops.convert_to_numpy(w) for w in projection.weights)
        error = ((s @ kernel + bias - t) ** 2).mean(-1)  # (B, T)
        expected.append((error * mask).sum() / mask.sum())
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours), np.mean(expected), rtol=1e-5)

    student = [distributions(rng, (2, 3, 7, 7), mask) for _ in range(2)]
    teacher = [distributions(rng, (2, 3, 7, 7), mask) for _ in range(2)]
    ours = attention_loss(student, teacher, PADDING)
    expected = []
    for s, t in zip(student, teacher):
        ratio = np.divide(t, s, out=np.ones_like(t), where=t > 0)  # 1 on padded keys
        kl = (t * np.log(ratio)).sum(-1)  # (B, N, T)
        expected.append((kl * mask[:, None, :]).sum() / (mask.sum() * 3))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours), np.mean(expected), rtol=1e-4)


@pytest.mark.backend_independent
def test_the_default_layer_map_is_tinyberts_uniform_one():
    assert default_layer_map(2, 6) == [3, 6]
    assert default_layer_map(4, 12) == [3, 6, 9, 12]
    assert default_layer_map(3, 2) == [1, 1, 2]


def test_a_training_step_moves_the_student_and_projections_not_the_teacher():
    teacher = backbone(layers=2, heads=2, width=8, seed=2)
    student = BertClassifier(backbone(layers=1, heads=2, width=4, seed=3), num_classes=2)
    model = IntermediateDistiller(student, teacher, [2], hidden_weight=1.0, attention_weight=1.0)
    inputs = batch()
    before = {
        "teacher": [keras.ops.convert_to_numpy(w) for w in teacher.weights],
        "student": [keras.ops.convert_to_numpy(w) for w in student.backbone.weights],
        "projections": [keras.ops.convert_to_numpy(w) for w in model.projections[1].weights],
    }
    intermediate = float(keras.ops.convert_to_numpy(model.intermediate_loss(inputs)))
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    targets = np.zeros((2, 2), "float32")
    history = model.fit(inputs, targets, epochs=3, batch_size=2, verbose=0)
    # The logits' loss alone would be near 0: the intermediate loss is in.
    assert history.history["loss"][0] > intermediate / 2 > 0
    assert history.history["loss"][-1] < history.history["loss"][0]

    def moved(name, weights):
        return [
            not np.allclose(old, keras.ops.convert_to_numpy(new))
            for old, new in zip(before[name], weights)
        ]

    assert not any(moved("teacher", teacher.weights))
    assert all(moved("projections", model.projections[1].weights))
    assert any(moved("student", student.backbone.weights))
    assert model.predict(inputs, verbose=0).shape == (2, 2)
