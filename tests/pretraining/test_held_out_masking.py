"""The held-out evaluation masks 15% of the tokens, as the paper does,
whatever rate the training masks with (`data.mask_rate` is a training
lever; held-out accuracy must compare across recipes)."""

import numpy as np
import pytest

from keras_bert.errors import ConfigError
from keras_bert.pretraining import build_pretraining
from tests.pretraining.conftest import tiny_config

pytestmark = pytest.mark.backend_independent


def _predictions_per_sequence(dataset, batches):
    """[(real tokens, real predictions)] of every sequence in `batches`."""
    rows = []
    for features, _, sample_weights in dataset.take(batches):
        tokens = np.asarray(features["padding_mask"]).sum(axis=1)
        predictions = (np.asarray(sample_weights["mlm"]) > 0).sum(axis=1)
        rows.extend(zip(tokens, predictions))
    return rows


def _paper_count(tokens, rate, max_predictions):
    # google-research/bert's create_masked_lm_predictions:
    # min(max_predictions_per_seq, max(1, int(round(len(tokens) * masked_lm_prob)))).
    return min(max_predictions, max(1, int(round(tokens * rate))))


def test_held_out_batches_mask_15_percent_when_training_masks_more(tmp_path, tiny_corpus):
    phases = [
        {"seq_len": 32, "max_predictions": 13, "batch_size": 4, "steps": 6},
        {"seq_len": 64, "max_predictions": 26, "batch_size": 2, "steps": 3},
    ]
    config = tiny_config(
        tmp_path,
        tiny_corpus,
        sampled_softmax_candidates=None,
        phases=phases,
        **{"data.mask_rate": 0.4},
    )
    pretraining = build_pretraining(config)
    for index, phase in enumerate(config.phases):
        held_out = pretraining.eval_dataset(index)
        slots = next(iter(held_out))[0]["mask_positions"].shape[1]
        assert slots == int(np.ceil(0.15 * phase.seq_len))
        for tokens, predictions in _predictions_per_sequence(held_out, 3):
            assert predictions == _paper_count(tokens, 0.15, slots)
    training = _predictions_per_sequence(pretraining.phases[0].dataset(), 3)
    assert all(predictions == _paper_count(tokens, 0.4, 13) for tokens, predictions in training)


def test_a_15_percent_recipe_keeps_its_own_held_out_slots(tmp_path, tiny_corpus):
    config = tiny_config(tmp_path, tiny_corpus, sampled_softmax_candidates=None)
    held_out = build_pretraining(config).eval_dataset(0)
    features = next(iter(held_out))[0]
    assert features["mask_positions"].shape[1] == config.phases[0].max_predictions


def test_a_phase_masks_at_its_own_rate_and_held_out_stays_at_15(tmp_path, tiny_corpus):
    phases = [
        {"seq_len": 32, "max_predictions": 13, "batch_size": 4, "steps": 6, "mask_rate": 0.4},
        {"seq_len": 64, "max_predictions": 10, "batch_size": 2, "steps": 3},
    ]
    config = tiny_config(tmp_path, tiny_corpus, sampled_softmax_candidates=None, phases=phases)
    pretraining = build_pretraining(config)
    first = _predictions_per_sequence(pretraining.phases[0].dataset(), 3)
    assert all(predictions == _paper_count(tokens, 0.4, 13) for tokens, predictions in first)
    second = _predictions_per_sequence(pretraining.phases[1].dataset(), 3)
    assert all(predictions == _paper_count(tokens, 0.15, 10) for tokens, predictions in second)
    held_out = _predictions_per_sequence(pretraining.eval_dataset(0), 3)
    assert all(predictions == _paper_count(tokens, 0.15, 5) for tokens, predictions in held_out)


@pytest.mark.parametrize("rate", [0, 1, -0.1])
def test_a_phase_mask_rate_outside_0_1_is_refused(tmp_path, tiny_corpus, rate):
    with pytest.raises(ConfigError, match=r"phases.0: `mask_rate` must be null"):
        tiny_config(tmp_path, tiny_corpus, **{"phases.0.mask_rate": rate}).validate()
