"""Reads original google-research/bert TF1 checkpoints.

A release folder holds `bert_model.ckpt.{index,data-*}`, `bert_config.json`
and `vocab.txt`. Variables are read one by one with
`tf.train.load_checkpoint` (no graph, no code from the file); optimizer
slots (`*/adam_m`, `*/adam_v`) and `global_step`, present in checkpoints
written by `run_pretraining.py`, are training state and are left out.
"""

import json
import os

import numpy as np

from keras_bert.conversion.bert_checkpoint import BertCheckpoint
from keras_bert.conversion.config_json import backbone_config_from_json
from keras_bert.conversion.vocabulary import read_vocabulary
from keras_bert.errors import CheckpointError

_TRAINING_STATE_SUFFIXES = ("/adam_m", "/adam_v")


def google_checkpoint_prefix(path):
    """The checkpoint prefix for `path`, or None if it is no TF checkpoint.

    `path` may be the prefix itself (`.../bert_model.ckpt`), its `.index`
    file, or the folder holding it.
    """
    path = os.fspath(path)
    if path.endswith(".index"):
        path = path[: -len(".index")]
    if os.path.isdir(path):
        indexes = sorted(f for f in os.listdir(path) if f.endswith(".index"))
        if "bert_model.ckpt.index" in indexes:
            indexes = ["bert_model.ckpt.index"]
        if len(indexes) != 1:
            return None
        path = os.path.join(path, indexes[0][: -len(".index")])
    return path if os.path.isfile(path + ".index") else None


def read_google_checkpoint(path):
    """`BertCheckpoint` from an original BERT checkpoint.

    Args:
        path: the checkpoint prefix, its `.index` file, or its folder;
            `bert_config.json` must sit beside it, `vocab.txt` may.
    """
    import tensorflow as tf  # Only this reader needs TensorFlow.

    prefix = google_checkpoint_prefix(path)
    if prefix is None:
        raise CheckpointError(f"{path}: no TF checkpoint (`*.index`) found.")
    folder = os.path.dirname(prefix)
    config_path = os.path.join(folder, "bert_config.json")
    if not os.path.isfile(config_path):
        raise CheckpointError(f"{prefix}: no bert_config.json beside the checkpoint.")
    try:
        with open(config_path) as f:
            config = backbone_config_from_json(json.load(f), config_path)
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{config_path}: not valid JSON: {error}") from None
    try:
        reader = tf.train.load_checkpoint(prefix)
        shapes = reader.get_variable_to_shape_map()
        weights, skipped = {}, 0
        for name in shapes:
            if name == "global_step" or name.endswith(_TRAINING_STATE_SUFFIXES):
                skipped += 1
                continue
            weights[name] = np.asarray(reader.get_tensor(name), "float32")
    except Exception as error:  # TF raises OpError, IndexError, ValueError...
        message = str(error).strip().splitlines()[0]
        raise CheckpointError(
            f"{prefix}: unreadable TF checkpoint (corrupt or truncated?): {message}"
        ) from None
    notes = []
    if skipped:
        notes.append(f"left out {skipped} training-state variables (optimizer slots, global_step)")
    vocabulary, vocab_note = read_vocabulary(os.path.join(folder, "vocab.txt"))
    notes.append(vocab_note)
    return BertCheckpoint(
        config=config,
        weights=weights,
        vocabulary=vocabulary,
        source=f"Google BERT checkpoint {prefix}",
        notes=notes,
    )
