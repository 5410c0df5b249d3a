"""The step probe behind the main command's backend choice times a real
training step of a run's model. Speed itself is for bench/, not for tests."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.pretraining import build_pretraining
from keras_bert.pretraining.step_probe import _random_batches, probe_seconds_per_step
from tests.pretraining.conftest import tiny_config, tiny_overrides


# The full softmax, and the sampled one the default run trains with.
@pytest.mark.parametrize("sampled_softmax_candidates", [None, 8])
def test_probe_times_a_real_training_step(tmp_path, tiny_corpus, sampled_softmax_candidates):
    config = tiny_config(
        tmp_path, tiny_corpus, sampled_softmax_candidates=sampled_softmax_candidates
    )
    seconds = probe_seconds_per_step(1, 2, config)
    assert len(seconds) == len(config.phases) and all(0 < s < 60 for s in seconds)


def test_the_probes_batches_are_the_runs(tmp_path, tiny_corpus):
    """Dtypes and shapes as the run's pipeline gives them, phase by phase:
    a program of another signature is not the one the run compiles."""
    config = tiny_config(tmp_path, tiny_corpus, sampled_softmax_candidates=8)
    pretraining = build_pretraining(config)
    rng = np.random.default_rng(0)
    for phase in pretraining.phases:
        shape = (phase.config.seq_len, phase.config.batch_size, phase.config.max_predictions)
        probe = _random_batches(rng, pretraining.objective, 30522, *shape).element_spec
        run = phase.dataset().element_spec
        assert tf.nest.map_structure(lambda s: (s.dtype, s.shape), probe) == (
            tf.nest.map_structure(lambda s: (s.dtype, s.shape), run)
        )


# A run of a config after the probe of the same config, under JAX with its
# persistent cache in a fresh folder: the number of programs the run had
# to compile (cache misses) while it built its model and trained each phase.
RUN_AFTER_PROBE = """
import json, sys
from jax import monitoring
from keras_bert.pretraining import build_pretraining, load_pretraining_config
from keras_bert.pretraining.step_probe import warmed_up_steps
config = load_pretraining_config("default", json.loads(sys.argv[1]))
warmed_up_steps(1, config)
misses = []
monitoring.register_event_listener(
    lambda event, **_: misses.append(event) if event.endswith("/cache_misses") else None
)
pretraining = build_pretraining(config)
for phase in pretraining.phases:
    pretraining.model.fit(phase.dataset(), steps_per_epoch=2, epochs=1, verbose=0)
print("misses", len(misses))
"""


@pytest.mark.skipif(
    keras.backend.backend() != "jax", reason="JAX's compilation cache; other backends have none"
)
def test_a_run_after_the_probe_compiles_nothing(tmp_path, tiny_corpus):
    overrides = tiny_overrides(tmp_path, tiny_corpus)
    overrides.update(sampled_softmax_candidates=8, train_budget_minutes=5.0)
    env = {
        **os.environ,
        "KERAS_BACKEND": "jax",
        "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    }
    result = subprocess.run(
        [sys.executable, "-c", RUN_AFTER_PROBE, json.dumps(overrides)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[-2:] == ["misses", "0"]
