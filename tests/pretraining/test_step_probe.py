"""The step probe behind the main command's backend choice times a real
training step. Speed itself is for bench/, not for tests."""

import pytest

from keras_bert.pretraining.config import load_pretraining_config
from keras_bert.pretraining.step_probe import probe_seconds_per_step
from keras_bert.runtime.backend import PROBE


# The full softmax, and the sampled one the default run trains with.
@pytest.mark.parametrize("sampled_softmax_candidates", [None, 8])
def test_probe_times_a_real_training_step(sampled_softmax_candidates):
    seconds = probe_seconds_per_step(
        num_layers=1,
        hidden_dim=16,
        num_heads=2,
        shapes=[(8, 4, 2), (16, 2, 3)],
        warmup_steps=1,
        timed_steps=2,
        sampled_softmax_candidates=sampled_softmax_candidates,
    )
    assert len(seconds) == 2 and all(0 < s < 60 for s in seconds)


def test_the_probe_measures_the_default_runs_steps():
    default = load_pretraining_config("default")
    phases = [
        (phase.seq_len, phase.batch_size, phase.max_predictions, steps)
        for phase, steps in zip(default.phases, default.phase_steps())
    ]
    assert list(PROBE["phases"]) == phases
    assert PROBE["dropout"] == default.model_overrides["dropout"]
    assert default.data.next_sentence_rate == 0  # The probe's step has none.
    assert PROBE["sampled_softmax_candidates"] == default.sampled_softmax_candidates
