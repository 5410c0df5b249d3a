"""keras_bert against an independent numpy BERT (tests/reference_bert.py).

Weights are random and large enough to exercise every term; they reach the
numpy side under their original google-research/bert names through the
name map, so this also checks that each variable is the one its name says.
"""

import keras
import numpy as np
import pytest

from keras_bert import BertBackbone, BertPretrainer
from keras_bert.conversion.bert_name_map import pretrainer_weight_map
from tests.models.test_bert_backbone import TINY, tiny_inputs
from tests.reference_bert import bert_forward, pretraining_heads


def randomized_pretrainer(hidden_activation="gelu", **overrides):
    model = BertPretrainer(BertBackbone(**TINY, hidden_activation=hidden_activation, **overrides))
    rng = np.random.default_rng(7)
    for variable in model.weights:
        variable.assign(rng.normal(scale=0.3, size=variable.shape).astype("float32"))
    return model


@pytest.mark.parametrize("overrides", [{}, {"use_bias": False, "gated_feedforward": True}])
def test_every_variable_has_exactly_one_original_name(overrides):
    model = randomized_pretrainer(**overrides)
    mappings = pretrainer_weight_map(model)
    assert len({m.name for m in mappings}) == len(mappings)
    assert sorted(id(m.variable) for m in mappings) == sorted(id(v) for v in model.weights)


def test_outputs_match_numpy_reference():
    for activation, overrides in (
        ("gelu", {}),
        ("gelu_approximate", {}),
        ("gelu", {"normalize_first": True}),
        ("gelu", {"use_bias": False}),
        ("gelu", {"gated_feedforward": True}),
        (
            "gelu_approximate",
            {"normalize_first": True, "use_bias": False, "gated_feedforward": True},
        ),
    ):
        model = randomized_pretrainer(activation, **overrides)
        weights = {m.name: m.from_keras() for m in pretrainer_weight_map(model)}
        inputs = tiny_inputs()
        ours = model.backbone(inputs)
        inputs["mask_positions"] = np.array([[1, 2, 5], [0, 3, 0]], "int32")
        logits = model(inputs)
        sequence, pooled = bert_forward(
            weights,
            inputs["token_ids"],
            inputs["segment_ids"],
            inputs["padding_mask"],
            num_heads=TINY["num_heads"],
            approximate_gelu=activation == "gelu_approximate",
            normalize_first=overrides.get("normalize_first", False),
        )
        mlm, nsp = pretraining_heads(
            weights,
            sequence,
            pooled,
            inputs["mask_positions"],
            approximate_gelu=activation == "gelu_approximate",
        )
        real = inputs["padding_mask"].astype(bool)
        to_np = keras.ops.convert_to_numpy
        np.testing.assert_allclose(to_np(ours["sequence_output"])[real], sequence[real], atol=1e-4)
        np.testing.assert_allclose(to_np(ours["pooled_output"]), pooled, atol=1e-4)
        np.testing.assert_allclose(to_np(logits["mlm"]), mlm, atol=1e-3, rtol=1e-4)
        np.testing.assert_allclose(to_np(logits["nsp"]), nsp, atol=1e-4)


def test_weights_survive_a_round_trip_through_original_layout():
    source = randomized_pretrainer()
    target = BertPretrainer(BertBackbone(**TINY))
    for src, dst in zip(pretrainer_weight_map(source), pretrainer_weight_map(target)):
        assert src.name == dst.name
        dst.variable.assign(dst.to_keras(src.from_keras()))
    for a, b in zip(source.weights, target.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
