"""Task models on a tiny backbone: the shared harness (config round trip,
symbolic and eager calls, `.keras` save/load, `fit`, mixed precision), then
behaviour checks."""

import keras
import numpy as np
import pytest

from keras_bert.models import (
    BertBackbone,
    BertClassifier,
    BertMultipleChoice,
    BertRegressor,
    BertSpanLabeler,
    BertTokenClassifier,
)
from tests.harness import run_model_test

B, C, T = 2, 3, 6


def tiny_backbone(dtype=None):
    return BertBackbone(
        vocabulary_size=50,
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
        dtype=dtype,
    )


def tiny_inputs(shape=(B, T)):
    rng = np.random.default_rng(0)
    padding_mask = np.ones(shape, "int32")
    padding_mask[..., -2:] = 0
    return {
        "token_ids": rng.integers(1, 50, size=shape).astype("int32"),
        "segment_ids": np.zeros(shape, "int32"),
        "padding_mask": padding_mask,
    }


def check_task_model(build, inputs, tmp_path):
    model = run_model_test(build, inputs, tmp_path)
    assert isinstance(model.backbone, BertBackbone)
    outputs = model(inputs, training=False)
    for x in keras.tree.flatten(outputs):
        assert keras.backend.standardize_dtype(x.dtype) == "float32"
    return model, outputs


def test_classifier(tmp_path):
    build = lambda dtype: BertClassifier(
        tiny_backbone(dtype), num_classes=3, label_names=["a", "b", "c"]
    )
    model, logits = check_task_model(build, tiny_inputs(), tmp_path)
    assert tuple(logits.shape) == (B, 3)
    assert model.get_config()["label_names"] == ["a", "b", "c"]


def test_regressor(tmp_path):
    build = lambda dtype: BertRegressor(tiny_backbone(dtype))
    _, score = check_task_model(build, tiny_inputs(), tmp_path)
    assert tuple(score.shape) == (B,)


def test_span_labeler(tmp_path):
    build = lambda dtype: BertSpanLabeler(tiny_backbone(dtype))
    _, out = check_task_model(build, tiny_inputs(), tmp_path)
    assert tuple(out["start_logits"].shape) == (B, T)
    assert tuple(out["end_logits"].shape) == (B, T)


def test_token_classifier(tmp_path):
    build = lambda dtype: BertTokenClassifier(
        tiny_backbone(dtype), num_labels=4, label_names=["O", "B-X", "I-X", "Y"]
    )
    _, logits = check_task_model(build, tiny_inputs(), tmp_path)
    assert tuple(logits.shape) == (B, T, 4)


def test_multiple_choice(tmp_path):
    build = lambda dtype: BertMultipleChoice(tiny_backbone(dtype), num_choices=C)
    model, logits = check_task_model(build, tiny_inputs((B, C, T)), tmp_path)
    assert tuple(logits.shape) == (B, C)


def test_multiple_choice_scores_each_choice_independently():
    # Folding choices into the batch must give the same score as running
    # the backbone on one choice alone.
    model = BertMultipleChoice(tiny_backbone(), num_choices=C)
    inputs = tiny_inputs((B, C, T))
    logits = keras.ops.convert_to_numpy(model(inputs, training=False))
    single = {k: v[1:2, 2] for k, v in inputs.items()}  # (1, T)
    pooled = model.backbone(single, training=False)["pooled_output"]
    score = keras.ops.convert_to_numpy(model.output_dense(pooled))[0, 0]
    np.testing.assert_allclose(logits[1, 2], score, rtol=1e-5, atol=1e-5)


def test_classifier_matches_pooled_dense():
    model = BertClassifier(tiny_backbone(), num_classes=2)
    inputs = tiny_inputs()
    pooled = model.backbone(inputs, training=False)["pooled_output"]
    expected = keras.ops.convert_to_numpy(model.output_dense(pooled))
    got = keras.ops.convert_to_numpy(model(inputs, training=False))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda b: BertClassifier(b, num_classes=1), "num_classes=1"),
        (
            lambda b: BertClassifier(b, num_classes=2, label_names=["x"]),
            "label_names=['x']",
        ),
        (lambda b: BertTokenClassifier(b, num_labels=0), "num_labels=0"),
        (lambda b: BertMultipleChoice(b, num_choices=1), "num_choices=1"),
    ],
)
def test_validation_messages(build, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        build(tiny_backbone())


def test_fine_tuning_restores_dropout_of_a_backbone_pretrained_without():
    from keras_bert.finetuning.runner import with_dropout

    backbone = BertBackbone(
        vocabulary_size=30,
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        dropout=0.0,
    )
    backbone.vocabulary = [f"t{i}" for i in range(30)]
    rebuilt = with_dropout(backbone, 0.1)
    assert rebuilt.dropout == 0.1 and rebuilt.vocabulary == backbone.vocabulary
    for a, b in zip(rebuilt.get_weights(), backbone.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert with_dropout(rebuilt, 0.1) is rebuilt
