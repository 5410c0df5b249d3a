"""The in-graph SQuAD windows and answer choice against fine-tuning's Python.

`squad_windows` restates three loops of SQuAD evaluation as batched
TensorFlow ops; each test runs both on the same inputs: the windows
(`pipelines.tasks.squad.doc_spans`), the max-context rule (`_max_context`)
and the best n-best span (`squad_postprocess.span_candidates`).
"""

import os

import numpy as np
import pytest
import tensorflow as tf

import pipelines
import pipelines.tasks as tasks
from keras_bert.finetuning.squad_postprocess import span_candidates
from keras_bert.serving import squad_windows
from pipelines.tasks.squad import _max_context

pytestmark = pytest.mark.backend_independent

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "finetuning", "fixtures")

# (query pieces, context pieces) rows: empty, fitting, one piece over,
# several windows, a question that leaves a one-piece window.
ROWS = [(0, 0), (3, 5), (3, 19), (3, 20), (0, 61), (8, 100), (19, 7), (19, 1)]
SEQ_LEN = 25


def _windows(rows, doc_stride, seq_len=SEQ_LEN):
    query_len = tf.constant([q for q, _ in rows], tf.int64)
    doc_len = tf.constant([d for _, d in rows], tf.int64)
    windows = squad_windows.doc_windows(query_len, doc_len, seq_len, doc_stride)
    return query_len, doc_len, windows


@pytest.mark.parametrize("doc_stride", [1, 3, 7, 16, 128])
def test_windows_are_doc_spans(doc_stride):
    _, _, windows = _windows(ROWS, doc_stride)
    request = windows["request"].numpy()
    spans = list(zip(windows["start"].numpy(), windows["length"].numpy()))
    for row, (query, doc) in enumerate(ROWS):
        expected = tasks.doc_spans(doc, SEQ_LEN - 3 - query, doc_stride)
        got = [span for span, r in zip(spans, request) if r == row]
        assert got == expected, (row, query, doc)
        # Each request's windows are numbered 0, 1, ... in order.
        assert windows["index"].numpy()[request == row].tolist() == list(range(len(expected)))


@pytest.mark.parametrize("doc_stride", [1, 2, 3, 7, 16, 128])
def test_max_context_is_check_is_max_context(doc_stride):
    query_len, doc_len, windows = _windows(ROWS, doc_stride)
    got = squad_windows.max_context(
        windows, query_len, doc_len, SEQ_LEN, doc_stride
    ).numpy()  # (N, T) over [CLS] question [SEP] context [SEP].
    request = windows["request"].numpy()
    for row, (query, doc) in enumerate(ROWS):
        spans = tasks.doc_spans(doc, SEQ_LEN - 3 - query, doc_stride)
        for index, (start, length) in enumerate(spans):
            expected = np.zeros(SEQ_LEN, bool)
            for i in range(length):
                expected[query + 2 + i] = _max_context(spans, index, start + i)
            n = np.flatnonzero(request == row)[index]
            np.testing.assert_array_equal(got[n], expected, err_msg=f"{row}")


@pytest.fixture(scope="module")
def windowed_features():
    """Fixture questions cut into several windows each."""
    tokenizer = pipelines.BertTokenizer(os.path.join(FIXTURES, "vocab.txt"))
    examples = tasks.read_squad(os.path.join(FIXTURES, "squad", "dev-v1.1.json"))
    features = tasks.squad_features(
        examples, tokenizer, max_seq_length=20, doc_stride=3, max_query_length=6
    )
    return examples, features


@pytest.mark.parametrize(
    "scale, n_best_size, max_answer_length",
    [
        (1.0, 20, 30),
        (1.0, 3, 4),
        (1.0, 2, 2),
        (1.0, 1, 30),
        (1.0, 5, 1),
        (0.0, 20, 30),  # Every span ties: window, then position order decides.
    ],
)
def test_best_spans_is_the_first_candidate(
    windowed_features, scale, n_best_size, max_answer_length
):
    examples, features = windowed_features
    seq_len = 20
    rng = np.random.default_rng(n_best_size)
    # One decimal: many equal logits and scores, so tie order is tested.
    shape = (len(features), seq_len)
    starts = (scale * rng.normal(size=shape)).round(1).astype("float32")
    ends = (scale * rng.normal(size=shape)).round(1).astype("float32")
    in_window = np.zeros_like(starts, bool)
    context = np.zeros_like(starts, bool)
    best_context = np.zeros_like(starts, bool)
    for n, feature in enumerate(features):
        in_window[n, : len(feature.token_ids)] = True
        for position, is_max in feature.token_is_max_context.items():
            context[n, position] = True
            best_context[n, position] = is_max
    request = np.array([f.example_index for f in features], np.int64)
    best = squad_windows.best_spans(
        tf.constant(starts),
        tf.constant(ends),
        in_window=tf.constant(in_window),
        start_allowed=tf.constant(context & best_context),
        end_allowed=tf.constant(context),
        request=tf.constant(request),
        num_requests=tf.constant(len(examples)),
        n_best_size=n_best_size,
        max_answer_length=max_answer_length,
    )
    best = {k: v.numpy() for k, v in best.items()}
    for example_index in range(len(examples)):
        indices = np.flatnonzero(request == example_index).tolist()
        candidates = span_candidates(
            features, indices, starts, ends, n_best_size, max_answer_length
        )
        assert best["found"][example_index] == bool(candidates)
        if not candidates:
            assert best["score"][example_index] == 0.0
            continue
        first = candidates[0]
        got = tuple(best[k][example_index] for k in ("window", "start", "end"))
        assert got == (first.feature, first.start, first.end)
        assert best["score"][example_index] == np.float32(first.score)


def test_a_question_that_fills_the_window_is_refused():
    with pytest.raises(ValueError, match=r"window=0"):
        tasks.doc_spans(10, window=0, doc_stride=4)
    with pytest.raises(ValueError, match=r"doc_stride=0"):
        tasks.doc_spans(10, window=5, doc_stride=0)
