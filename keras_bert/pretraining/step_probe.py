"""Seconds per pre-training step of a pre-training config's model (the
default run's), the measurement behind the main command's backend choice.

`keras_bert.runtime.backend` runs `serve_rounds` in a subprocess under each
candidate backend (its `PROBE_COMMAND`) and asks them for timed rounds in
turn; it lives here, not in `runtime/`, because it builds a model, and
`runtime/` sits below the libraries.
"""

import sys
import time

import keras
import numpy as np
import tensorflow as tf

from keras_bert.optimization import create_schedule
from keras_bert.pretraining.config import load_pretraining_config
from keras_bert.pretraining.objective_registry import OBJECTIVES
from keras_bert.pretraining.run_setup import compiled_model


def probe_seconds_per_step(warmup_steps, timed_steps, config, shapes=None):
    """Seconds per pre-training step of `config`'s model on random ids,
    compiled as a run compiles it, at each of `shapes`, over `timed_steps`
    after `warmup_steps` (and one step that starts each `fit`, untimed).
    See `warmed_up_steps`."""
    return warmed_up_steps(warmup_steps, config, shapes)(timed_steps)


def serve_rounds(warmup_steps, timed_steps, config="default"):
    """The probe's subprocess side: warms up at each phase's shape of the
    pre-training config `config` (a name in `configs/pretrain/`), prints
    `probe ready`, then for each line read on stdin times `timed_steps`
    steps at each shape and prints `probe <seconds per recipe step>`: the
    phases' seconds per step weighted by their recipe steps, until stdin
    closes. Other output the libraries may print on stdout does not start
    with `probe `."""
    config = load_pretraining_config(config)
    time_steps = warmed_up_steps(warmup_steps, config)
    weights = config.phase_steps()
    print("probe ready", flush=True)
    for _ in sys.stdin:
        seconds = time_steps(timed_steps)
        weighted = sum(w * s for w, s in zip(weights, seconds)) / sum(weights)
        print(f"probe {weighted!r}", flush=True)


def warmed_up_steps(warmup_steps, config, shapes=None):
    """A function `steps -> [seconds per step at each shape]` that trains
    `config`'s model on random ids, `steps` updates at each `(seq_len,
    batch_size, predictions)` of `shapes` (None: each phase's) in turn,
    after `warmup_steps` at each (compilation).

    The model is built and compiled by `pretraining.compiled_model`, as a
    run of `config` builds it, and the random batches have the dtypes and,
    at a phase's shape, the shapes of its pipeline's: under JAX the probe
    compiles the very programs of the run, which then loads them from the
    compilation cache (`keras_bert.runtime.compilation_cache`).

    Args:
        warmup_steps: int. Untimed steps at each shape first.
        config: `PretrainingConfig`.
        shapes: list of `(seq_len, batch_size, predictions)`, or None.
    """
    if shapes is None:
        shapes = [(p.seq_len, p.batch_size, p.max_predictions) for p in config.phases]
    objective = OBJECTIVES[config.objective](config)
    total_steps = sum(config.phase_steps())
    model = compiled_model(
        config, objective, total_steps, create_schedule(config.optimizer, total_steps)
    )
    vocabulary_size = model.backbone.vocabulary_size
    rng = np.random.default_rng(0)
    datasets = [
        _random_batches(rng, objective, vocabulary_size, *shape).repeat() for shape in shapes
    ]
    for dataset in datasets:
        # Random batches: nothing to shuffle (Keras warns that it would not).
        model.fit(dataset, steps_per_epoch=warmup_steps, epochs=1, verbose=0, shuffle=False)

    def time_steps(steps):
        seconds = []
        for dataset in datasets:
            timer = _StepTimer()
            model.fit(
                dataset,
                steps_per_epoch=steps + 1,
                epochs=1,
                verbose=0,
                callbacks=[timer],
                shuffle=False,
            )
            seconds.append(timer.seconds / steps)
        return seconds

    return time_steps


class _StepTimer(keras.callbacks.Callback):
    """Seconds from the end of a `fit`'s first step to the end of its last,
    each end waited for (JAX dispatches steps asynchronously). Not the
    `fit` call's own start and end: a run's `fit` lasts `steps_per_loop`
    steps, and timing a few steps with them counted made JAX's step look
    much slower than in training (its iterator over a `tf.data` dataset
    starts with each call), and the backend choice a tie
    (BENCHMARKS.md#the-default-run)."""

    def on_train_batch_end(self, batch, logs=None):
        float(logs["loss"])
        now = time.perf_counter()
        if batch == 0:
            self.start = now
        self.seconds = now - self.start


def _random_batches(rng, objective, vocabulary_size, seq_len, batch_size, predictions):
    """One batch of random ids, `predictions` masked positions a sequence,
    as the objective's model takes it."""
    features = {
        "token_ids": rng.integers(1000, vocabulary_size, (batch_size, seq_len)),
        "segment_ids": np.zeros((batch_size, seq_len)),
        "padding_mask": np.ones((batch_size, seq_len)),
        "mask_positions": np.sort(
            rng.permuted(np.tile(np.arange(1, seq_len), (batch_size, 1)), axis=1)[:, :predictions],
            axis=1,
        ),
    }
    features = {k: v.astype("int32") for k, v in features.items()}
    labels = {
        "mlm": rng.integers(1000, vocabulary_size, (batch_size, predictions)).astype("int32"),
        "nsp": np.zeros((batch_size,), "int32"),
    }
    weights = {
        "mlm": np.ones((batch_size, predictions), "float32"),
        "nsp": np.ones((batch_size,), "float32"),
    }
    return tf.data.Dataset.from_tensors((features, labels, weights)).map(objective.to_keras_batch)
