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
        seq_len=16,
        batch_size=2,
        warmup_steps=1,
        timed_steps=2,
        sampled_softmax_candidates=sampled_softmax_candidates,
    )
    assert 0 < seconds < 60


def test_the_probe_measures_the_default_runs_step():
    default = load_pretraining_config("default")
    last = default.phases[-1]
    assert (PROBE["seq_len"], PROBE["batch_size"]) == (last.seq_len, last.batch_size)
    assert PROBE["sampled_softmax_candidates"] == default.sampled_softmax_candidates
