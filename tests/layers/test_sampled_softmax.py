"""`sampled_softmax_logits` in `BertPretrainer` against a NumPy sampled
softmax built from the full softmax's logits, and training on it."""

import keras
import numpy as np
import pytest

from keras_bert import BertBackbone, BertPretrainer
from keras_bert.pretraining.masked_lm_objective import compile_pretrainer
from tests.harness import run_model_test
from tests.models.test_bert_backbone import TINY
from tests.models.test_bert_pretrainer import pretrainer_inputs

V = TINY["vocabulary_size"]
# Two sequences, three slots each: ids 7 and 9 repeated, a padded slot
# (weight 0) holding 7, and 11 once.
TARGETS = np.array([[7, 9, 7], [11, 9, 7]], "int32")
WEIGHTS = np.array([[1, 1, 0], [1, 1, 1]], "float32")
# Drawn tokens: 9 and 11 are targets already (left out), 3 twice.
DRAWN = np.array([3, 9, 20, 3, 11, 42], "int32")


def reference_losses(full_logits, targets, weights, drawn):
    """Per real slot: -z(target) + log(sum over the distinct real targets
    of e^z + V/S x sum over the draws that are not targets of e^z)."""
    real_targets = {int(t) for t, w in zip(targets.ravel(), weights.ravel()) if w > 0}
    losses = []
    for z, target, weight in zip(full_logits.reshape(-1, V), targets.ravel(), weights.ravel()):
        if weight == 0:
            continue
        total = sum(np.exp(z[t]) for t in real_targets)
        total += V / len(drawn) * sum(np.exp(z[d]) for d in drawn if d not in real_targets)
        losses.append(np.log(total) - z[target])
    return np.array(losses)


def test_sampled_loss_matches_a_numpy_reference(monkeypatch):
    # No dropout: the training call must see the evaluation's encodings.
    backbone = BertBackbone(**TINY, dropout=0.0)
    model = BertPretrainer(backbone, sampled_softmax_candidates=len(DRAWN))
    inputs = pretrainer_inputs()
    full = keras.ops.convert_to_numpy(model(inputs)["mlm"]).astype("float64")  # (2, 3, V)
    monkeypatch.setattr(
        keras.random, "randint", lambda *args, **kwargs: keras.ops.convert_to_tensor(DRAWN)
    )
    batch = dict(inputs, masked_lm_ids=TARGETS, masked_lm_weights=WEIGHTS)
    sampled = keras.ops.convert_to_numpy(model(batch, training=True)["mlm"])
    assert sampled.shape == (2, 3, 1 + 6 + len(DRAWN)) and sampled.dtype == np.float32
    # Label 0 everywhere: the cross-entropy of column 0.
    top = sampled.max(-1)
    log_total = top + np.log(np.exp(sampled - top[..., None]).sum(-1))
    ours = (log_total - sampled[..., 0]).ravel()[WEIGHTS.ravel() > 0]
    np.testing.assert_allclose(ours, reference_losses(full, TARGETS, WEIGHTS, DRAWN), rtol=1e-4)


def test_without_targets_or_outside_training_the_head_is_the_full_softmax():
    model = BertPretrainer(BertBackbone(**TINY, dropout=0.0), sampled_softmax_candidates=4)
    inputs = pretrainer_inputs()
    batch = dict(inputs, masked_lm_ids=TARGETS, masked_lm_weights=WEIGHTS)
    expected = keras.ops.convert_to_numpy(model(inputs)["mlm"])
    for outputs in (model(batch), model(inputs, training=True)):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(outputs["mlm"]), expected, atol=1e-6)


def test_model_harness_with_sampled_softmax(tmp_path):
    run_model_test(
        lambda dtype: BertPretrainer(
            BertBackbone(**TINY, dtype=dtype), sampled_softmax_candidates=8
        ),
        pretrainer_inputs(),
        tmp_path,
    )


def test_a_sampled_training_step_learns_the_targets():
    keras.utils.set_random_seed(0)
    model = BertPretrainer(BertBackbone(**TINY), sampled_softmax_candidates=8)
    compile_pretrainer(model, keras.optimizers.Adam(1e-2), next_sentence_prediction=False)
    inputs = pretrainer_inputs()
    features = dict(inputs, masked_lm_ids=TARGETS, masked_lm_weights=WEIGHTS)
    labels = {"mlm": np.zeros_like(TARGETS), "nsp": np.zeros(2, "int32")}
    weights = {"mlm": WEIGHTS, "nsp": np.ones(2, "float32")}
    full_labels = {"mlm": TARGETS, "nsp": np.zeros(2, "int32")}
    before = model.evaluate(inputs, full_labels, sample_weight=weights, verbose=0, return_dict=True)
    for _ in range(30):
        model.train_on_batch(features, labels, weights)
    after = model.evaluate(inputs, full_labels, sample_weight=weights, verbose=0, return_dict=True)
    # Scored with the full softmax, on the real ids.
    assert after["mlm_loss"] < before["mlm_loss"] - 1.0


def test_bad_candidate_count_is_refused():
    with pytest.raises(ValueError, match="`sampled_softmax_candidates` must be None or >= 1"):
        BertPretrainer(BertBackbone(**TINY), sampled_softmax_candidates=0)


def test_an_archive_without_the_option_loads(tmp_path):
    model = BertPretrainer(BertBackbone(**TINY))
    assert "sampled_softmax_candidates" not in model.get_config()
    path = str(tmp_path / "pretrainer.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.sampled_softmax_candidates is None
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(loaded(pretrainer_inputs())["mlm"]),
        keras.ops.convert_to_numpy(model(pretrainer_inputs())["mlm"]),
        atol=1e-6,
    )
