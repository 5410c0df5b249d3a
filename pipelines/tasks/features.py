"""Packing WordPiece ids into BERT inputs, and feature lists into tf.data.

Shape legend: B batch, T sequence length (per batch, dynamic), C choices.

Readers tokenize whole files with one batched `BertTokenizer` call, pack in
Python (`pack_pair`) and hand lists of ids to `make_dataset`, which pads each
batch only to its own longest sequence rounded up to a multiple of 16
(dynamic padding with a bounded number of shapes, so JAX and XLA compile a
few step functions rather than one per length). Training batches are random
draws, as in the original; with `group_by_length` they hold examples of one
length bucket instead (`bucket_by_sequence_length`): fewer padded
positions, but batches whose labels follow length on tasks such as STS-B,
which hurts there (BENCHMARKS.md#findings-behind-the-defaults).
"""

import numpy as np
import tensorflow as tf

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")
IGNORED_LABEL = -1  # Token positions that carry no label (loss ignores).
# Length buckets of `group_by_length` for sentence-level inputs.
LENGTH_BUCKETS = (16, 32, 64, 128, 256)


def truncated_lengths(len_a, len_b, budget):
    """Lengths after `run_classifier.py`'s `_truncate_seq_pair`.

    The original pops one token at a time from the longer segment (from B
    on a tie) until `len_a + len_b <= budget`; this is the closed form.
    """
    if len_a + len_b <= budget:
        return len_a, len_b
    new_a = min(len_a, max(budget - len_b, (budget + 1) // 2))
    return new_a, min(len_b, budget - new_a)


def pack_pair(ids_a, ids_b, max_seq_length, cls_id, sep_id):
    """`[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, longest-first truncated.

    Returns:
        (token_ids, segment_ids), two lists of equal length.
    """
    ids_a = list(ids_a)
    if ids_b is None:
        ids_a = ids_a[: max_seq_length - 2]
        return [cls_id] + ids_a + [sep_id], [0] * (len(ids_a) + 2)
    ids_b = list(ids_b)
    len_a, len_b = truncated_lengths(len(ids_a), len(ids_b), max_seq_length - 3)
    tokens = [cls_id] + ids_a[:len_a] + [sep_id] + ids_b[:len_b] + [sep_id]
    return tokens, [0] * (len_a + 2) + [1] * (len_b + 1)


def tokenize_texts(tokenizer, texts):
    """Python lists of ids for a list of str, in one tokenizer call."""
    if not texts:
        return []
    ragged = tokenizer.tokenize(tf.constant(list(texts), tf.string))
    values = ragged.flat_values.numpy().tolist()
    splits = ragged.row_splits.numpy().tolist()
    return [values[splits[i] : splits[i + 1]] for i in range(len(texts))]


def _ragged(rows, dtype):
    lengths = np.array([len(r) for r in rows], np.int64)
    flat = np.concatenate([np.asarray(r, dtype) for r in rows]) if rows else np.zeros([0], dtype)
    return tf.RaggedTensor.from_row_lengths(flat, lengths)


def make_dataset(
    features,
    labels=None,
    batch_size=32,
    training=False,
    seed=0,
    num_choices=None,
    pad_id=0,
    group_by_length=False,
    bucket_boundaries=LENGTH_BUCKETS,
    length_multiple=16,
):
    """Batches of `({token_ids, segment_ids, padding_mask}, labels)`.

    Args:
        features: dict with `token_ids` and `segment_ids`, each a list (one
            entry per example) of lists of int; `padding_mask` is derived
            (1 where `token_ids` is not `pad_id`).
            With `num_choices`, each entry holds C packed sequences padded to
            one length and concatenated, and batches are (B, C, T).
        labels: None, a list of scalars (one per example), a list of lists of
            int (per-token labels, padded with -1), or a dict of lists (one
            per model output).
        batch_size: int.
        training: bool. Shuffle (reshuffled each epoch); repeat is left to
            the caller.
        seed: int, the shuffle seed.
        num_choices: int or None, for multiple-choice inputs.
        pad_id: int, the `[PAD]` id.
        group_by_length: bool. Each training batch holds examples of one
            length bucket instead of a random draw. Ignored with
            `num_choices`.
        bucket_boundaries: sequence lengths separating the buckets of
            `group_by_length`.
        length_multiple: int. Each batch's T is rounded up to a multiple of
            it (1: no rounding).

    Returns:
        A `tf.data.Dataset`; evaluation datasets keep the example order.
    """
    token_ids = features["token_ids"]
    count = len(token_ids)
    columns = {
        "token_ids": _ragged(token_ids, np.int32),
        "segment_ids": _ragged(features["segment_ids"], np.int32),
    }
    pad_values = {"token_ids": pad_id, "segment_ids": 0, "padding_mask": 0}
    label_pad = None
    if labels is not None:
        label_columns, label_pad = _label_columns(labels)
        columns = (columns, label_columns)
        pad_values = (pad_values, label_pad)
    ds = tf.data.Dataset.from_tensor_slices(columns)

    def with_mask(x):
        x = _dense(x)
        # [PAD] never occurs inside a packed sequence, so the mask is exact
        # also for the per-example padding of multiple-choice inputs.
        x["padding_mask"] = tf.cast(x["token_ids"] != pad_id, tf.int32)
        return x

    if labels is not None:
        ds = ds.map(lambda x, y: (with_mask(x), _dense(y)))
    else:
        ds = ds.map(with_mask)
    if num_choices:

        def fold(x):
            return {k: tf.reshape(v, [num_choices, -1]) for k, v in x.items()}

        ds = ds.map((lambda x, y: (fold(x), y)) if labels is not None else fold)
    pad_values = tf.nest.map_structure(
        lambda v: tf.constant(v, tf.int32) if isinstance(v, int) else tf.constant(v, tf.float32),
        pad_values,
    )
    if training:
        ds = ds.shuffle(min(count, 100_000), seed=seed, reshuffle_each_iteration=True)
        if group_by_length and not num_choices:
            ds = ds.bucket_by_sequence_length(
                element_length_func=lambda x, *_: tf.shape(x["token_ids"])[0],
                bucket_boundaries=list(bucket_boundaries),
                bucket_batch_sizes=[batch_size] * (len(bucket_boundaries) + 1),
                padding_values=pad_values,
            )
            return _round_lengths(ds, pad_values, length_multiple).prefetch(tf.data.AUTOTUNE)
    ds = ds.padded_batch(batch_size, padding_values=pad_values)
    return _round_lengths(ds, pad_values, length_multiple).prefetch(tf.data.AUTOTUNE)


def _round_lengths(ds, pad_values, multiple):
    """Pads the last (T) axis of every batched tensor of rank >= 2 up to a
    multiple of `multiple`, with that tensor's padding value."""
    if multiple <= 1:
        return ds

    def pad(t, value):
        if t.shape.rank < 2:
            return t
        length = tf.shape(t)[-1]
        extra = (multiple - length % multiple) % multiple
        paddings = [[0, 0]] * (t.shape.rank - 1) + [[0, extra]]
        return tf.pad(t, paddings, constant_values=tf.cast(value, t.dtype))

    def pad_batch(*batch):  # (x, y) with labels, x without.
        return tf.nest.map_structure(pad, batch if len(batch) > 1 else batch[0], pad_values)

    return ds.map(pad_batch)


def _dense(tree):
    return tf.nest.map_structure(
        lambda t: t.to_tensor() if isinstance(t, tf.RaggedTensor) else t, tree
    )


def _label_columns(labels):
    if isinstance(labels, dict):
        pairs = {k: _label_columns(v) for k, v in labels.items()}
        return {k: v[0] for k, v in pairs.items()}, {k: v[1] for k, v in pairs.items()}
    first = labels[0] if len(labels) else 0
    if isinstance(first, (list, tuple, np.ndarray)):
        return _ragged(labels, np.int32), IGNORED_LABEL
    if isinstance(first, (float, np.floating)):
        return np.asarray(labels, np.float32), 0.0
    return np.asarray(labels, np.int32), 0
