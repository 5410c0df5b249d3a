"""Packing matches the original `_truncate_seq_pair` and the task readers."""

import itertools

import pytest
import tensorflow as tf

from pipelines import packing

pytestmark = pytest.mark.backend_independent


def _truncate_seq_pair(len_a, len_b, budget):
    """google-research/bert run_classifier.py, one pop at a time."""
    while len_a + len_b > budget:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b


def test_truncated_lengths_match_the_original_loop():
    cases = list(itertools.product(range(14), range(14), (3, 4, 7, 8, 12)))
    len_a, len_b, seq_len = (tf.constant(c, tf.int64) for c in zip(*cases))
    got_a, got_b = packing.truncated_lengths(len_a, len_b, tf.ones_like(len_a, tf.bool), seq_len)
    expected = [_truncate_seq_pair(a, b, s - 3) for a, b, s in cases]
    assert list(zip(got_a.numpy(), got_b.numpy())) == expected


def test_training_reader_agrees():
    from pipelines.tasks.features import truncated_lengths

    for a, b, budget in itertools.product(range(12), range(12), (1, 4, 9)):
        assert truncated_lengths(a, b, budget) == _truncate_seq_pair(a, b, budget)


def test_pack_layout():
    a = {"token_ids": tf.ragged.constant([[5, 6, 7], [8], [9, 9, 9, 9, 9]])}
    b = {"token_ids": tf.ragged.constant([[1, 2], [], [3, 3, 3, 3]])}
    has_b = tf.constant([True, False, True])
    out = packing.pack(a, b, has_b, 8, {"token_ids": (101, 102, 0)})
    assert out["token_ids"].numpy().tolist() == [
        [101, 5, 6, 7, 102, 1, 2, 102],
        [101, 8, 102, 0, 0, 0, 0, 0],
        [101, 9, 9, 9, 102, 3, 3, 102],
    ]
    assert out["segment_ids"].numpy().tolist() == [
        [0, 0, 0, 0, 0, 1, 1, 1],
        [0, 0, 0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 1, 1, 1],
    ]
    assert out["padding_mask"].numpy().tolist() == [
        [1] * 8,
        [1, 1, 1, 0, 0, 0, 0, 0],
        [1] * 8,
    ]


def test_pack_single_segment_truncates():
    a = {"token_ids": tf.ragged.constant([list(range(1, 20)), []])}
    out = packing.pack(a, None, None, 5, {"token_ids": (101, 102, 0)})
    assert out["token_ids"].numpy().tolist() == [
        [101, 1, 2, 3, 102],
        [101, 102, 0, 0, 0],
    ]


def test_question_first_lengths():
    keep_a, keep_b = packing.question_first_lengths(
        tf.constant([70, 3, 3], tf.int64),
        tf.constant([500, 500, 2], tf.int64),
        tf.constant([True, True, True]),
        128,
        64,
    )
    assert keep_a.numpy().tolist() == [64, 3, 3]
    assert keep_b.numpy().tolist() == [61, 122, 2]
