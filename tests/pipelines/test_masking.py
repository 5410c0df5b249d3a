"""Dynamic masking statistics over more than 100k tokens."""

import numpy as np
import pytest
import tensorflow as tf

from pipelines.masking import mask_batch, num_to_predict

pytestmark = pytest.mark.backend_independent

CLS, SEP, PAD, MASK = 101, 102, 0, 103
VOCAB_SIZE = 30522
# Ids >= 1000 are ordinary tokens; the test vocabulary marks every id in
# [5000, 6000) as a "##" piece.
RANDOM_IDS = tf.range(1000, VOCAB_SIZE, dtype=tf.int32)
IS_SUFFIX = tf.constant([5000 <= i < 6000 for i in range(VOCAB_SIZE)])


def _packed_batch(rng, batch, seq_len, suffix_rate=0.0):
    """Random `[CLS] A [SEP] B [SEP] [PAD]...` rows of random lengths."""
    ids = np.zeros([batch, seq_len], np.int32)
    for row in range(batch):
        n = rng.integers(5, seq_len + 1)
        tokens = rng.integers(1000, 5000, n)
        suffix = rng.random(n) < suffix_rate
        tokens[suffix] = rng.integers(5000, 6000, suffix.sum())
        tokens[0] = CLS
        a_len = rng.integers(1, n - 3)
        tokens[a_len + 1] = SEP
        tokens[n - 1] = SEP
        ids[row, :n] = tokens
    return ids


_COMPILED = {}


def _mask(ids, seed, max_predictions=20, whole_word_masking=False):
    key = (max_predictions, whole_word_masking)
    if key not in _COMPILED:
        _COMPILED[key] = tf.function(
            lambda x, s: mask_batch(
                x,
                s,
                max_predictions=max_predictions,
                mask_rate=0.15,
                mask_id=MASK,
                pad_id=PAD,
                special_ids=[CLS, SEP, PAD],
                random_token_ids=RANDOM_IDS,
                is_suffix=IS_SUFFIX,
                whole_word_masking=whole_word_masking,
            )
        )
    out = _COMPILED[key](tf.constant(ids), tf.constant(seed, tf.int64))
    return [t.numpy() for t in out]


def _python_count(n, p=20, rate=0.15):
    return min(p, max(1, int(round(n * rate))))


def test_count_rule_matches_python():
    n = tf.range(0, 1200)
    for p in (20, 80):
        got = num_to_predict(n, p, 0.15).numpy().tolist()
        assert got == [_python_count(i, p) for i in range(1200)]


@pytest.mark.parametrize("seq_len,max_predictions", [(128, 20), (512, 80)])
def test_masking_statistics(seq_len, max_predictions):
    rng = np.random.default_rng(0)
    totals = {"tokens": 0, "chosen": 0, "mask": 0, "keep": 0, "random": 0}
    batches = 30 if seq_len == 128 else 8
    for step in range(batches):
        ids = _packed_batch(rng, 64, seq_len)
        masked, positions, labels, weights = _mask(ids, [step, 1], max_predictions)
        assert masked.shape == ids.shape
        assert positions.shape == labels.shape == weights.shape == (64, max_predictions)
        for row in range(64):
            n = int((ids[row] != PAD).sum())
            k = int(weights[row].sum())
            # Exactly the original count, every sequence.
            assert k == _python_count(n, max_predictions)
            assert (weights[row, :k] == 1).all() and (weights[row, k:] == 0).all()
            pos = positions[row, :k]
            assert (np.diff(pos) > 0).all()
            assert (positions[row, k:] == 0).all() and (labels[row, k:] == 0).all()
            # Specials and padding are never chosen.
            assert not np.isin(ids[row, pos], [CLS, SEP, PAD]).any()
            np.testing.assert_array_equal(labels[row, :k], ids[row, pos])
            # Nothing outside the chosen positions changes.
            untouched = np.ones(seq_len, bool)
            untouched[pos] = False
            np.testing.assert_array_equal(masked[row, untouched], ids[row, untouched])
            new = masked[row, pos]
            totals["tokens"] += n
            totals["chosen"] += k
            totals["mask"] += int((new == MASK).sum())
            totals["keep"] += int((new == ids[row, pos]).sum())
            is_random = (new != MASK) & (new != ids[row, pos])
            totals["random"] += int(is_random.sum())
            assert (new[is_random] >= 1000).all()
    assert totals["tokens"] > 100_000
    chosen = totals["chosen"]
    # The count rule rounds per sequence, so the overall rate is near 0.15.
    assert abs(chosen / totals["tokens"] - 0.15) < 0.01
    for key, p in (("mask", 0.8), ("keep", 0.1), ("random", 0.1)):
        sigma = np.sqrt(p * (1 - p) / chosen)
        # A random replacement equal to the original counts as "keep".
        assert abs(totals[key] / chosen - p) < 5 * sigma + 1e-3, (key, totals)


def test_positions_are_uniform_over_candidates():
    rng = np.random.default_rng(1)
    ids = np.tile(_packed_batch(rng, 1, 128)[:1], [256, 1])
    counts = np.zeros(128)
    for step in range(8):
        _, positions, _, weights = _mask(ids, [step, 2])
        np.add.at(counts, positions[weights > 0], 1)
    candidates = ~np.isin(ids[0], [CLS, SEP, PAD])
    expected = counts.sum() / candidates.sum()
    assert (counts[~candidates] == 0).all()
    # Poisson-ish spread around the mean, 6 sigma.
    assert np.abs(counts[candidates] - expected).max() < 6 * np.sqrt(expected)


def test_whole_word_masking_masks_whole_words():
    rng = np.random.default_rng(2)
    ids = _packed_batch(rng, 128, 128, suffix_rate=0.4)
    masked, positions, labels, weights = _mask(ids, [3, 4], whole_word_masking=True)
    is_suffix = IS_SUFFIX.numpy()
    some_partial_word = False
    for row in range(len(ids)):
        n = int((ids[row] != PAD).sum())
        k = int(weights[row].sum())
        assert 1 <= k <= _python_count(n)
        chosen = np.zeros(128, bool)
        chosen[positions[row, :k]] = True
        assert not np.isin(ids[row][chosen], [CLS, SEP, PAD]).any()
        # Group tokens into words: a "##" piece joins the candidate before it.
        word, words = -1, np.full(128, -1)
        for t in range(n):
            if ids[row, t] in (CLS, SEP):
                word += 1
                continue
            if not (
                is_suffix[ids[row, t]]
                and t > 0
                and words[t - 1] == word
                and ids[row, t - 1] not in (CLS, SEP)
            ):
                word += 1
            words[t] = word
        for w in set(words[chosen]):
            members = words == w
            assert chosen[members].all(), (row, w)
            some_partial_word |= members.sum() > 1
    assert some_partial_word


def test_same_seed_same_masks():
    ids = _packed_batch(np.random.default_rng(3), 32, 128)
    first, second = _mask(ids, [5, 6]), _mask(ids, [5, 6])
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    other = _mask(ids, [5, 7])
    assert not np.array_equal(other[1], first[1])
