"""Dynamic masked-LM masking of packed batches, in the graph.

The original `create_masked_lm_predictions`, redone for a whole batch every
step (so each epoch sees new masks):

* candidates: every token but `[CLS]`, `[SEP]` and padding;
* count: `min(max_predictions, max(1, round(len(tokens) * rate)))` where
  `len(tokens)` is the packed length *including* `[CLS]` and the two
  `[SEP]` (not padding) and `round` halves to even, both exactly as the
  original (Python 3) computes it; the product is taken in float64 so that
  it rounds like Python's. tensorflow-text's `RandomItemSelector` rounds its
  own way and has no such count, which is why this is hand-written with
  `top_k` over random keys (a uniform random subset of that size);
* each chosen token: 80% `[MASK]`, 10% a random vocabulary token (never a
  bracketed special token such as `[PAD]` or `[unused3]`), 10% unchanged;
* whole-word masking (optional): a word is a token and the `##` pieces that
  follow it; words are visited in random order and taken whole while the
  count allows (a word that would overflow it is skipped, as the original
  does), so fewer than `count` tokens may be masked. One deviation: a `##`
  piece right after `[SEP]` (a segment truncated mid-word) starts its own
  word here, where the original would glue it to the last word of segment A.

Shape legend: B batch, T sequence length, P max predictions.
"""

import tensorflow as tf


def _fold(seed, salt):
    return tf.random.experimental.stateless_fold_in(seed, salt)


def num_to_predict(num_tokens, max_predictions, rate):
    """The original count: `min(P, max(1, round(num_tokens * rate)))`."""
    expected = tf.round(tf.cast(num_tokens, tf.float64) * tf.constant(rate, tf.float64))
    return tf.minimum(max_predictions, tf.maximum(1, tf.cast(expected, tf.int32)))


def _select_tokens(candidates, count, max_predictions, seed):
    """Uniform random subset of `count` candidates per row. -> bool (B, T)."""
    batch = tf.shape(candidates)[0]
    keys = tf.random.stateless_uniform(tf.shape(candidates), seed)
    keys = tf.where(candidates, keys, -1.0)
    values, index = tf.math.top_k(keys, k=max_predictions)  # (B, P)
    take = (tf.range(max_predictions)[tf.newaxis, :] < count[:, tf.newaxis]) & (values >= 0.0)
    rows = tf.broadcast_to(tf.range(batch)[:, tf.newaxis], tf.shape(index))
    return tf.scatter_nd(tf.stack([rows, index], axis=-1), take, tf.shape(candidates))


def _select_whole_words(candidates, is_suffix, count, seed):
    """Random whole words while they fit in `count`. -> bool (B, T)."""
    batch, seq_len = tf.shape(candidates)[0], tf.shape(candidates)[1]
    # A word starts at a candidate that is not a "##" piece, or at a "##"
    # piece whose left neighbour is not a candidate.
    prev_candidate = tf.pad(candidates[:, :-1], [[0, 0], [1, 0]])
    starts = candidates & (tf.logical_not(is_suffix) | tf.logical_not(prev_candidate))
    word = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1  # (B, T)
    word = tf.where(candidates, word, seq_len)  # non-candidates: dummy word T
    num_words = tf.reduce_sum(tf.cast(starts, tf.int32), axis=1)  # (B,)
    flat_word = word + tf.range(batch)[:, tf.newaxis] * (seq_len + 1)
    flat_word = tf.reshape(flat_word, [-1])
    size = tf.math.unsorted_segment_sum(tf.ones_like(flat_word), flat_word, batch * (seq_len + 1))
    size = tf.reshape(size, [batch, seq_len + 1])[:, :seq_len]  # (B, T)
    keys = tf.random.stateless_uniform([batch, seq_len], seed)
    keys = tf.where(tf.range(seq_len)[tf.newaxis, :] < num_words[:, tf.newaxis], keys, -1.0)
    _, order = tf.math.top_k(keys, k=seq_len)  # words, random order
    size_in_order = tf.gather(size, order, batch_dims=1)  # (B, T)

    # Greedy in random order: take a word if it still fits. Sequential in
    # words (the original's `continue`), vectorised over the batch.
    def body(j, taken, total):
        s = size_in_order[:, j]
        take = (j < num_words) & (total + s <= count)
        return j + 1, taken.write(j, take), total + tf.where(take, s, 0)

    _, taken, _ = tf.while_loop(
        lambda j, taken, total: j < tf.reduce_max(num_words),
        body,
        (
            0,
            tf.TensorArray(tf.bool, size=seq_len, element_shape=[None]),
            tf.zeros([batch], tf.int32),
        ),
    )
    max_words = tf.reduce_max(num_words)
    taken = tf.transpose(taken.stack())[:, :max_words]  # (B, words visited)
    taken = tf.pad(taken, [[0, 0], [0, seq_len - max_words]])  # (B, T)
    # Back from visiting order to word index, then to tokens.
    word_taken = tf.scatter_nd(
        tf.stack([tf.repeat(tf.range(batch), seq_len), tf.reshape(order, [-1])], axis=1),
        tf.reshape(taken, [-1]),
        [batch, seq_len + 1],
    )
    return tf.gather(word_taken, word, batch_dims=1) & candidates


def mask_batch(
    token_ids,
    seed,
    *,
    max_predictions,
    mask_rate,
    mask_id,
    pad_id,
    special_ids,
    random_token_ids,
    is_suffix=None,
    whole_word_masking=False,
):
    """Masks a packed batch.

    Args:
        token_ids: int32 `(B, T)` packed sequences (padding = `pad_id`).
        seed: `[2]` stateless seed for this batch.
        max_predictions: int P, predictions per sequence (output width).
        mask_rate: float, share of tokens to predict (0.15).
        mask_id, pad_id: int ids of `[MASK]` and `[PAD]`.
        special_ids: list of int ids never chosen (`[CLS]`, `[SEP]`, `[PAD]`).
        random_token_ids: int32 `[V']` ids a token may be swapped for.
        is_suffix: bool `[vocab_size]`, whether a token is a `##` piece;
            needed for whole-word masking.
        whole_word_masking: bool.

    Returns:
        `(masked_token_ids (B, T), mask_positions (B, P), mask_ids (B, P),
        mask_weights (B, P) float32)`. Positions are ascending; unused slots
        hold position 0, id 0 and weight 0.
    """
    seed = tf.cast(seed, tf.int64)
    batch, seq_len = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
    candidates = tf.ones_like(token_ids, tf.bool)
    for special in special_ids:
        candidates &= token_ids != special
    count = num_to_predict(
        tf.reduce_sum(tf.cast(token_ids != pad_id, tf.int32), axis=1), max_predictions, mask_rate
    )  # (B,)
    if whole_word_masking:
        selected = _select_whole_words(
            candidates, tf.gather(is_suffix, token_ids), count, _fold(seed, 1)
        )
    else:
        selected = _select_tokens(candidates, count, max_predictions, _fold(seed, 1))

    # Selected positions in ascending order, padded to P.             # (B, P)
    positions = tf.range(seq_len)[tf.newaxis, :]
    keys = tf.where(selected, seq_len - positions, 0)
    keys, mask_positions = tf.math.top_k(keys, k=max_predictions)
    valid = keys > 0
    mask_positions = tf.where(valid, mask_positions, 0)
    mask_ids = tf.where(valid, tf.gather(token_ids, mask_positions, batch_dims=1), 0)
    mask_weights = tf.cast(valid, tf.float32)

    # 80% [MASK], 10% random token, 10% unchanged.                     # (B, P)
    u = tf.random.stateless_uniform([batch, max_predictions], _fold(seed, 2))
    random_ids = tf.gather(
        random_token_ids,
        tf.random.stateless_uniform(
            [batch, max_predictions],
            _fold(seed, 3),
            0,
            tf.shape(random_token_ids)[0],
            dtype=tf.int32,
        ),
    )
    replacement = tf.where(u < 0.8, mask_id, tf.where(u < 0.9, mask_ids, random_ids))
    indices = tf.stack(
        [tf.broadcast_to(tf.range(batch)[:, tf.newaxis], [batch, max_predictions]), mask_positions],
        axis=-1,
    )  # (B, P, 2)
    # Only valid slots are written; invalid ones rewrite position 0 ([CLS]).
    replacement = tf.where(valid, replacement, tf.gather(token_ids, mask_positions, batch_dims=1))
    masked = tf.tensor_scatter_nd_update(token_ids, indices, replacement)
    return masked, mask_positions, mask_ids, mask_weights
