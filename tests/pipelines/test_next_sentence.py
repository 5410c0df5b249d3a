"""Next-sentence pair construction against the original algorithm."""

import bisect
import random

import numpy as np
import pytest
import tensorflow as tf

from pipelines.next_sentence import _final_lengths, create_pairs
from tests.pipelines.reference_pairs import instances_from_document, truncate_pair

pytestmark = pytest.mark.backend_independent

CLS, SEP, PAD = 101, 102, 0


def _synthetic_documents(num_docs, rng, max_sentences=40, max_len=30):
    """Documents whose token ids are unique positions (>= 1000)."""
    docs, next_id = [], 1000
    for _ in range(num_docs):
        doc = []
        for _ in range(rng.randint(1, max_sentences)):
            n = rng.randint(1, max_len)
            doc.append(list(range(next_id, next_id + n)))
            next_id += n
        docs.append(doc)
    return docs


_COMPILED = {}


def _pairs(docs, seed, seq_len=64, short_seq_prob=0.1):
    key = (seq_len, short_seq_prob)
    if key not in _COMPILED:
        _COMPILED[key] = tf.function(
            lambda d, s: create_pairs(
                d,
                s,
                seq_len=seq_len,
                short_seq_prob=short_seq_prob,
                cls_id=CLS,
                sep_id=SEP,
                pad_id=PAD,
            ),
            input_signature=[
                tf.RaggedTensorSpec([None, None, None], tf.int32, 2),
                tf.TensorSpec([2], tf.int64),
            ],
        )
    out = _COMPILED[key](tf.ragged.constant(docs, dtype=tf.int32), tf.constant(seed, tf.int64))
    return {k: v.numpy() for k, v in out.items()}


def _split(token_ids, segment_ids):
    """Packed row -> (A, B), checking the [CLS] A [SEP] B [SEP] layout."""
    assert token_ids[0] == CLS
    seps = np.flatnonzero(token_ids == SEP)
    assert len(seps) == 2
    a, b = token_ids[1 : seps[0]], token_ids[seps[0] + 1 : seps[1]]
    assert (token_ids[seps[1] + 1 :] == PAD).all()
    expected_segments = np.zeros_like(segment_ids)
    expected_segments[seps[0] + 1 : seps[1] + 1] = 1
    np.testing.assert_array_equal(segment_ids, expected_segments)
    return a.tolist(), b.tolist()


def test_truncation_lengths_match_original_rule():
    rng = random.Random(0)
    len_a, len_b = [], []
    for _ in range(3000):
        len_a.append(rng.randint(1, 300))
        len_b.append(rng.randint(1, 300))
    for max_num_tokens in (2, 5, 125, 126, 509):
        new_a, new_b = _final_lengths(tf.constant(len_a), tf.constant(len_b), max_num_tokens)
        for la, lb, ga, gb in zip(len_a, len_b, new_a.numpy(), new_b.numpy()):
            a, b = truncate_pair(range(la), range(lb), max_num_tokens, rng)
            assert (ga, gb) == (len(a), len(b)), (la, lb, max_num_tokens)


def test_layout_contiguity_and_is_next_follows_a():
    rng = random.Random(1)
    docs = _synthetic_documents(12, rng)
    doc_of = {t: d for d, doc in enumerate(docs) for s in doc for t in s}
    sentence_starts = sorted(s[0] for doc in docs for s in doc)
    for seed in range(3):
        out = _pairs(docs, [seed, 7])
        assert out["token_ids"].shape[1] == 64
        for row, segs, label in zip(
            out["token_ids"], out["segment_ids"], out["next_sentence_label"]
        ):
            a, b = _split(row, segs)
            assert 1 <= len(a) and 1 <= len(b) and len(a) + len(b) <= 61
            # Each segment is a contiguous run of one document.
            for seg in (a, b):
                assert seg == list(range(seg[0], seg[0] + len(seg)))
                assert len({doc_of[t] for t in seg}) == 1
            if label == 0:
                # IsNext: B comes after A in the same document, split at a
                # sentence boundary (tokens between are truncated ones).
                assert doc_of[a[0]] == doc_of[b[0]]
                assert a[-1] < b[0]
                k = bisect.bisect_right(sentence_starts, a[-1])
                assert sentence_starts[k] <= b[0]
            else:
                assert doc_of[a[0]] != doc_of[b[0]]


def test_walk_tiles_each_document_exactly_once():
    # With one-token sentences nothing is ever truncated, so the A chunks and
    # IsNext B chunks of a document must tile it in order, like the original
    # walk with its put-back rule.
    rng = random.Random(2)
    docs = [[[1000 + 100 * d + i] for i in range(rng.randint(1, 90))] for d in range(10)]
    out = _pairs(docs, [3, 4], seq_len=32)
    consumed = {d: [] for d in range(len(docs))}
    for row, segs, label in zip(out["token_ids"], out["segment_ids"], out["next_sentence_label"]):
        a, b = _split(row, segs)
        d = (a[0] - 1000) // 100
        consumed[d].extend(a)
        if label == 0:
            consumed[d].extend(b)
    for d, doc in enumerate(docs):
        assert consumed[d] == [s[0] for s in doc]


def test_statistics_match_original():
    rng = random.Random(3)
    docs = _synthetic_documents(16, rng, max_sentences=60, max_len=40)
    ours = {"pairs": [], "random": [], "len_a": [], "len_b": []}
    for seed in range(80):
        out = _pairs(docs, [seed, 11], seq_len=128)
        lengths = (out["token_ids"] != PAD).sum(axis=1) - 3
        first_sep = np.argmax(out["token_ids"] == SEP, axis=1)
        ours["pairs"].append(len(lengths))
        ours["random"].extend(out["next_sentence_label"])
        ours["len_a"].extend(first_sep - 1)
        ours["len_b"].extend(lengths - (first_sep - 1))
    ref = {"pairs": [], "random": [], "len_a": [], "len_b": []}
    ref_rng = random.Random(4)
    for _ in range(80):
        n = 0
        for i in range(len(docs)):
            for a, b, is_random in instances_from_document(docs, i, 128, 0.1, ref_rng):
                n += 1
                ref["random"].append(is_random)
                ref["len_a"].append(len(a))
                ref["len_b"].append(len(b))
        ref["pairs"].append(n)
    for key in ours:
        m_ours, m_ref = np.mean(ours[key]), np.mean(ref[key])
        sem = np.sqrt(np.var(ours[key]) / len(ours[key]) + np.var(ref[key]) / len(ref[key]))
        assert abs(m_ours - m_ref) < 5 * sem + 1e-9, (key, m_ours, m_ref)


def test_single_sentence_document_and_single_document_group():
    out = _pairs([[[1000, 1001, 1002]]], [0, 1])
    assert out["next_sentence_label"].tolist() == [1]
    a, b = _split(out["token_ids"][0], out["segment_ids"][0])
    assert a == [1000, 1001, 1002] and b == [1000, 1001, 1002]


def test_same_seed_same_pairs():
    docs = _synthetic_documents(8, random.Random(5))
    first, second = _pairs(docs, [1, 2]), _pairs(docs, [1, 2])
    for key in first:
        np.testing.assert_array_equal(first[key], second[key])
    other = _pairs(docs, [1, 3])
    assert not np.array_equal(other["token_ids"][:5], first["token_ids"][:5])


@pytest.mark.parametrize("seq_len", [128, 512])
def test_lengths_never_exceed_seq_len(seq_len):
    docs = _synthetic_documents(8, random.Random(6), max_len=400)
    out = _pairs(docs, [0, 0], seq_len=seq_len)
    assert out["token_ids"].shape[1] == seq_len
    assert ((out["token_ids"] != PAD).sum(axis=1) <= seq_len).all()
