"""Seconds per pre-training step of a small `BertPretrainer`, the
measurement behind the main command's backend choice.

`keras_bert.runtime.backend` runs it in a subprocess under each candidate
backend (its `PROBE_COMMAND`); it lives here, not in `runtime/`, because it
builds a model, and `runtime/` sits below the libraries.
"""

import time

import numpy as np
import tensorflow as tf

from keras_bert.models import BertBackbone, BertPretrainer
from keras_bert.optimization import OptimizerConfig, create_optimizer
from keras_bert.pretraining.objective import compile_pretrainer
from keras_bert.runtime.hardware import resolve_jit_compile


def probe_seconds_per_step(
    num_layers,
    hidden_dim,
    num_heads,
    seq_len,
    batch_size,
    warmup_steps,
    timed_steps,
    precision="float32",
    jit_compile="auto",
):
    """Seconds per pre-training step (forward, backward, AdamW) of a
    `BertPretrainer` on random ids, compiled as `keras_bert.pretraining` does."""
    vocabulary_size = 30522
    predictions = max(1, round(0.15 * seq_len))
    backbone = BertBackbone(
        vocabulary_size, num_layers, num_heads, hidden_dim, 4 * hidden_dim, dtype=precision
    )
    model = BertPretrainer(backbone)
    compile_pretrainer(
        model,
        create_optimizer(OptimizerConfig(), 10_000),
        jit_compile=resolve_jit_compile(jit_compile),
    )
    rng = np.random.default_rng(0)
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
    dataset = tf.data.Dataset.from_tensors((features, labels, weights)).repeat()
    model.fit(dataset, steps_per_epoch=warmup_steps, epochs=1, verbose=0)
    start = time.perf_counter()
    model.fit(dataset, steps_per_epoch=timed_steps, epochs=1, verbose=0)
    return (time.perf_counter() - start) / timed_steps
