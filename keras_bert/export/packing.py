"""`[CLS] A [SEP] (B [SEP])` packing with core TensorFlow ops.

Shape legend: B batch rows, T `seq_len`.

Truncation is the original `run_classifier.py` `_truncate_seq_pair`: while
the pair is too long, drop the last piece of the longer segment (of B on a
tie). Its result has a closed form, so no loop is needed:

    A' = min(A, max(m - B, ceil(m / 2)))     B' = min(B, max(m - A, floor(m / 2)))

with m the piece budget (T - 3 for a pair, T - 2 for a single segment).
"""

import tensorflow as tf


def truncated_lengths(len_a, len_b, has_b, seq_len):
    """Segment lengths after `_truncate_seq_pair`; all (B,) int64."""
    has_b = tf.cast(has_b, tf.int64)
    len_b = len_b * has_b
    budget = seq_len - 2 - has_b  # (B,)
    fits = len_a + len_b <= budget
    new_a = tf.minimum(len_a, tf.maximum(budget - len_b, (budget + 1) // 2))
    new_b = tf.minimum(len_b, tf.maximum(budget - len_a, budget // 2))
    return tf.where(fits, len_a, new_a), tf.where(fits, len_b, new_b)


def _head(rt, lengths):
    """First `lengths[i]` values of each row of ragged (B, None) `rt`."""
    keep = tf.ragged.range(rt.row_lengths()) < lengths[:, None]
    return tf.ragged.boolean_mask(rt, keep)


def _column(values, present):
    """Ragged (B, None) with one `values[i]` in rows where `present`."""
    present = tf.cast(present, tf.int64)
    return tf.RaggedTensor.from_row_lengths(
        tf.boolean_mask(values, present > 0), present
    )


def pack(segment_a, segment_b, has_b, seq_len, fills):
    """Packs ragged per-piece features into dense (B, T) tensors.

    Args:
        segment_a: dict name -> ragged (B, None) per-piece feature of A.
        segment_b: dict with the same names for B, or None.
        has_b: bool (B,): rows that are pairs.
        seq_len: int T.
        fills: dict name -> (value for [CLS], value for [SEP], padding).

    Returns:
        dict name -> dense (B, T) tensor, plus `segment_ids` and
        `padding_mask` (int32).
    """
    first = next(iter(segment_a))
    batch = segment_a[first].nrows()
    len_a = segment_a[first].row_lengths()
    if segment_b is None:
        segment_b = {k: tf.RaggedTensor.from_row_lengths(
            tf.zeros([0], v.dtype), tf.zeros([batch], tf.int64))
            for k, v in segment_a.items()}
        has_b = tf.zeros([batch], tf.bool)
    len_b = segment_b[first].row_lengths()
    keep_a, keep_b = truncated_lengths(len_a, len_b, has_b, seq_len)
    ones = tf.ones([batch], tf.bool)
    packed = {}
    features = dict(segment_a)
    # Segment ids ride along as one more feature: 0 for A, 1 for B.
    features["segment_ids"] = tf.ragged.map_flat_values(
        tf.zeros_like, tf.cast(segment_a[first], tf.int32)
    )
    fills = dict(fills, segment_ids=(0, 0, 0))
    for name, (cls_value, sep_value, pad_value) in fills.items():
        a = features[name]
        if name == "segment_ids":
            b = tf.ragged.map_flat_values(
                tf.ones_like, tf.cast(segment_b[first], tf.int32)
            )
            b_sep = 1
        else:
            b = segment_b[name]
            b_sep = sep_value
        dtype = a.dtype

        def full(value, dtype=dtype):
            return tf.fill([batch], tf.cast(value, dtype))

        row = tf.concat(
            [
                _column(full(cls_value), ones),
                _head(a, keep_a),
                _column(full(sep_value), ones),
                _head(b, keep_b),
                _column(full(b_sep), has_b),
            ],
            axis=1,
        )
        packed[name] = row.to_tensor(
            default_value=tf.cast(pad_value, dtype), shape=[None, seq_len]
        )
    lengths = 2 + keep_a + keep_b + tf.cast(has_b, tf.int64)
    packed["padding_mask"] = tf.sequence_mask(lengths, seq_len, tf.int32)
    return packed
