"""`[CLS] A [SEP] (B [SEP])` packing with core TensorFlow ops.

Core ops only: the serving export (`keras_bert.serving`) packs inside a
SavedModel that TF Serving loads without tensorflow-text's kernels. The
distillation transfer set (`transfer_set`) packs with it too.

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


def question_first_lengths(len_a, len_b, has_b, seq_len, max_len_a):
    """SQuAD's `run_squad.py` budget: A (the question) cut to `max_len_a`
    pieces first, B (the context) gets what is left."""
    has_b = tf.cast(has_b, tf.int64)
    budget = seq_len - 2 - has_b
    keep_a = tf.minimum(tf.minimum(len_a, max_len_a), budget)
    return keep_a, tf.minimum(len_b * has_b, budget - keep_a)


def pack(segment_a, segment_b, has_b, seq_len, fills, max_len_a=None):
    """Packs ragged per-piece features into dense (B, T) tensors.

    Args:
        segment_a: dict name -> ragged (B, None) per-piece feature of A.
        segment_b: dict with the same names for B, or None.
        has_b: bool (B,): rows that are pairs.
        seq_len: int T.
        fills: dict name -> (value for [CLS], value for [SEP], padding).
        max_len_a: optional int. Truncate as `question_first_lengths`
            instead of longest-first.

    Returns:
        dict name -> dense (B, T) tensor, plus `segment_ids` and
        `padding_mask` (int32).
    """
    first = next(iter(fills))
    len_a = segment_a[first].row_lengths()
    if segment_b is None:
        len_b = tf.zeros_like(len_a)
        has_b = tf.zeros_like(len_a, tf.bool)
    else:
        len_b = segment_b[first].row_lengths()
    if max_len_a is None:
        keep_a, keep_b = truncated_lengths(len_a, len_b, has_b, seq_len)
    else:
        keep_a, keep_b = question_first_lengths(len_a, len_b, has_b, seq_len, max_len_a)
    # Where each output position reads from, computed once for all features.
    t = tf.range(seq_len, dtype=tf.int64)[None, :]  # (1, T)
    sep_a = keep_a[:, None] + 1  # (B, 1)
    b_begin = sep_a + 1
    b_end = b_begin + keep_b[:, None]
    total = b_end + tf.cast(has_b, tf.int64)[:, None]
    is_cls = t == 0
    in_a = (t >= 1) & (t < sep_a)  # (B, T)
    in_b = (t >= b_begin) & (t < b_end)
    is_sep = (t == sep_a) | ((t == b_end) & has_b[:, None])
    index_a = tf.clip_by_value(t - 1, 0, seq_len - 1) * tf.ones_like(sep_a)
    index_b = tf.clip_by_value(t - b_begin, 0, seq_len - 1)
    packed = {}
    for name, (cls_value, sep_value, pad_value) in fills.items():
        dense_a = segment_a[name].to_tensor(shape=[None, seq_len])
        if segment_b is None:
            dense_b = tf.zeros_like(dense_a)
        else:
            dense_b = segment_b[name].to_tensor(shape=[None, seq_len])
        dtype = dense_a.dtype
        value = tf.fill(tf.shape(dense_a), tf.cast(pad_value, dtype))
        value = tf.where(is_cls, tf.cast(cls_value, dtype), value)
        value = tf.where(is_sep, tf.cast(sep_value, dtype), value)
        value = tf.where(in_a, tf.gather(dense_a, index_a, batch_dims=1), value)
        value = tf.where(in_b, tf.gather(dense_b, index_b, batch_dims=1), value)
        packed[name] = value
    in_second = in_b | ((t == b_end) & has_b[:, None])
    packed["segment_ids"] = tf.cast(in_second, tf.int32)
    packed["padding_mask"] = tf.cast(t < total, tf.int32)
    return packed
