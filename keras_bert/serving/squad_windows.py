"""SQuAD doc-stride windows and answer choice, in core TensorFlow ops.

The serving twin of fine-tuning evaluation, for SavedModels (TF Serving
runs no Python). Fine-tuning works one question at a time with Python
loops: `pipelines.tasks.squad.doc_spans` (the windows),
`pipelines.tasks.squad._max_context` (which window gives a piece the most
context) and `keras_bert.finetuning.squad_postprocess.span_candidates`
(n-best spans); all three follow google-research/bert `run_squad.py`. Here
each is a closed form over a batch of requests, and
`tests/serving/test_squad_windows.py` holds each to its Python twin.

Shape legend: B requests, N windows of all requests (a request's windows
are consecutive, in order), T `seq_len`, D windows that may share a
context piece with a given one, K `n_best_size`.
"""

import tensorflow as tf


def doc_windows(query_len, doc_len, seq_len, doc_stride):
    """Every request's windows, as `doc_spans` makes them.

    A window holds `seq_len - 3 - query_len` context pieces (what
    `[CLS] question [SEP] … [SEP]` leaves); the next starts `doc_stride`
    pieces later but never past the end of the current one, and the last
    is the first to reach the end of the context. So window k starts at
    k * stride, with stride = min(doc_stride, window), and there are
    1 + ceil((doc_len - window) / stride) of them (one, possibly empty,
    when the context fits).

    Args:
        query_len: int64 (B,) question pieces, already cut to
            `max_query_length`; must leave a window of at least one piece.
        doc_len: int64 (B,) context pieces.
        seq_len: int T.
        doc_stride: int.

    Returns:
        dict of int64 (N,) `request` (row of each window), `index` (k, the
        window's number within its request), `start` and `length` (context
        pieces), and int64 (B,) `window`, `stride`, `num_windows`.
    """
    window = seq_len - 3 - query_len  # (B,)
    stride = tf.minimum(tf.cast(doc_stride, tf.int64), window)
    # -((window - doc_len) // stride) is ceil((doc_len - window) / stride).
    num_windows = 1 + tf.maximum(tf.constant(0, tf.int64), -((window - doc_len) // stride))  # (B,)
    ranks = tf.ragged.range(num_windows)  # (B, None)
    request = ranks.value_rowids()  # (N,)
    index = ranks.flat_values  # (N,)
    start = index * tf.gather(stride, request)
    length = tf.minimum(tf.gather(doc_len, request) - start, tf.gather(window, request))
    return {
        "request": request,
        "index": index,
        "start": start,
        "length": length,
        "window": window,
        "stride": stride,
        "num_windows": num_windows,
    }


def max_context(windows, query_len, doc_len, seq_len, doc_stride):
    """Whether each window gives each of its context pieces the most context.

    `run_squad.py`'s `_check_is_max_context`: a piece at context position p
    scores min(p - start, end - p) + 0.01 * length in every window that
    holds it; the highest score wins, the earliest window on a tie. Scores
    are float64, as Python computes them, so ties break the same way.
    Windows k and k' share a piece only if |k - k'| * stride < window,
    which bounds |k - k'| < D' = ceil((seq_len - 3) / doc_stride) whatever
    the question length; each window is compared with its D = 2 D' - 1
    neighbours (itself included) instead of every window of its request.

    Args:
        windows: the dict of `doc_windows`.
        query_len, doc_len: int64 (B,), as given to `doc_windows`.
        seq_len, doc_stride: ints, as given to `doc_windows`.

    Returns:
        bool (N, T) over the packed windows `[CLS] question [SEP] context
        [SEP]`: the token is a context piece of this window and this window
        is its max-context window.
    """
    reach = -(-(seq_len - 3) // doc_stride)  # D', static.
    request = windows["request"]
    # Token t of window n is context piece start + t - (question + 2).
    first_piece = windows["start"] - tf.gather(query_len, request) - 2  # (N,)
    piece_position = first_piece[:, None] + tf.range(seq_len, dtype=tf.int64)
    offsets = tf.range(-(reach - 1), reach, dtype=tf.int64)  # (D,)
    neighbour = windows["index"][:, None] + offsets  # (N, D)
    exists = (neighbour >= 0) & (neighbour < tf.gather(windows["num_windows"], request)[:, None])
    n_start = neighbour * tf.gather(windows["stride"], request)[:, None]
    n_length = tf.minimum(
        tf.gather(doc_len, request)[:, None] - n_start,
        tf.gather(windows["window"], request)[:, None],
    )  # (N, D)
    p = piece_position[:, :, None]  # (N, T, 1)
    left = p - n_start[:, None, :]  # (N, T, D)
    right = n_start[:, None, :] + n_length[:, None, :] - 1 - p
    holds = exists[:, None, :] & (left >= 0) & (right >= 0)
    score = tf.cast(tf.minimum(left, right), tf.float64) + 0.01 * tf.cast(
        n_length[:, None, :], tf.float64
    )
    score = tf.where(holds, score, float("-inf"))  # (N, T, D)
    own = score[:, :, reach - 1]  # (N, T): offset 0, the window itself.
    beats_earlier = tf.reduce_all(score[:, :, : reach - 1] < own[:, :, None], -1)
    not_beaten_later = tf.reduce_all(score[:, :, reach:] <= own[:, :, None], -1)
    return holds[:, :, reach - 1] & beats_earlier & not_beaten_later


def best_spans(
    start_logits,
    end_logits,
    in_window,
    start_allowed,
    end_allowed,
    request,
    num_requests,
    n_best_size,
    max_answer_length,
):
    """The first of `span_candidates`' list, for every request.

    Per window, the `n_best_size` highest start and end logits among its
    tokens (`tf.math.top_k` puts the lower position first on a tie, as the
    stable sort does) pair up; a pair counts when its start and end are
    allowed, start <= end and it spans at most `max_answer_length` pieces.
    Its score is start + end logit. The best pair of a window is the first
    maximum in (start rank, end rank) order and the best of a request the
    first maximum in window order: the order Python's stable sort keeps.

    Args:
        start_logits, end_logits: float32 (N, T).
        in_window: bool (N, T): the window's tokens (not padding); n-best
            ranks them all, `[CLS]` and the question included.
        start_allowed: bool (N, T): context pieces whose max-context
            window is this one.
        end_allowed: bool (N, T): context pieces.
        request: int64 (N,) row of each window.
        num_requests: int32 scalar B.
        n_best_size, max_answer_length: ints.

    Returns:
        dict of (B,) `found` bool, `window` (N index), `start` and `end`
        (token positions in that window), all int64, and `score` float32
        (0 where nothing is found).
    """
    k = min(n_best_size, start_logits.shape[1])
    top_start = tf.math.top_k(tf.where(in_window, start_logits, float("-inf")), k)
    top_end = tf.math.top_k(tf.where(in_window, end_logits, float("-inf")), k)
    s = top_start.indices[:, :, None]  # (N, K, 1)
    e = top_end.indices[:, None, :]  # (N, 1, K)
    valid = (
        tf.gather(start_allowed, top_start.indices, batch_dims=1)[:, :, None]
        & tf.gather(end_allowed, top_end.indices, batch_dims=1)[:, None, :]
        & (e >= s)
        & (e - s < max_answer_length)
    )  # (N, K, K)
    score = top_start.values[:, :, None] + top_end.values[:, None, :]
    score = tf.reshape(tf.where(valid, score, float("-inf")), [-1, k * k])
    pair = tf.argmax(score, axis=1, output_type=tf.int32)  # (N,)
    window_score = tf.reduce_max(score, axis=1)  # -inf: no valid pair.
    window_found = tf.reduce_any(valid, axis=[1, 2])
    best_score = tf.math.unsorted_segment_max(
        window_score, request, num_requests
    )  # (B,); every request has a window.
    is_best = window_found & (window_score == tf.gather(best_score, request))
    num_windows = tf.shape(request, out_type=tf.int64)[0]
    window = tf.math.unsorted_segment_min(
        tf.where(is_best, tf.range(num_windows), num_windows), request, num_requests
    )  # (B,); N where the request has no valid pair.
    found = window < num_windows
    window = tf.where(found, window, 0)
    pair = tf.gather(pair, window)
    start = tf.gather(top_start.indices, window)  # (B, K)
    end = tf.gather(top_end.indices, window)
    return {
        "found": found,
        "window": window,
        "start": tf.cast(tf.gather(start, pair // k, batch_dims=1), tf.int64),
        "end": tf.cast(tf.gather(end, pair % k, batch_dims=1), tf.int64),
        "score": tf.where(found, best_score, 0.0),
    }
