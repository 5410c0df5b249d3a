"""Every fine-tuned task model exports and answers raw text on stock TF.

Each test exports one tiny task model, calls `serving_default` in a fresh
tensorflow-only process and checks the answer against the Keras model run on
the reference tokenizer's ids. All are slow (an export costs 15-60 s on
these machines); `test_serving_export.py` covers backbone and pretrainer in
the default run.
"""

import numpy as np
import pytest

from keras_bert import models
from keras_bert.export import export_for_serving
from pipelines.tasks.features import pack_pair
from tests.export.test_serving_export import (
    CLS,
    PAD,
    SEP,
    SEQ_LEN,
    _backbone,
    _text,
    expected_packed,
    keras_inputs,
    reference,  # noqa: F401 (fixture)
    serve,
    to_numpy,
    vocab,  # noqa: F401 (fixture)
)


def _segments(token_ids):
    """Segment ids of packed rows: 1 after the first [SEP], up to padding."""
    segments = np.zeros_like(token_ids)
    for row, ids in enumerate(token_ids):
        first_sep = list(ids).index(SEP)
        segments[row, first_sep + 1 :] = ids[first_sep + 1 :] != PAD
    return segments


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _export_and_serve(model, requests, tmp_path):
    path = export_for_serving(model, str(tmp_path / "export"), seq_len=SEQ_LEN)
    return serve([(path, name, inputs) for name, inputs in requests], tmp_path)


TEXT_A = [b"a great movie!", b"", b"\xff\xfe\x00 \xe4\xb8\xad\xe6\x96\x87", b"so-so"]
TEXT_B = [b"", b"second", b"", b"really \xf0\x9f\x98\x80"]


@pytest.mark.slow
def test_classifier(vocab, reference, tmp_path):
    model = models.BertClassifier(
        _backbone(vocab), num_classes=3, label_names=["neg", "neu", "pos"]
    )
    (out,) = _export_and_serve(
        model, [("serving_default", {"text_a": TEXT_A, "text_b": TEXT_B})], tmp_path
    )
    ids = expected_packed(reference, TEXT_A, TEXT_B)
    logits = to_numpy(model(keras_inputs(ids, _segments(ids))))
    np.testing.assert_allclose(out["probabilities"], _softmax(logits), atol=1e-5)
    best = logits.argmax(-1)
    assert out["label_id"].tolist() == best.tolist()
    assert [b.decode() for b in out["label"]] == [
        ["neg", "neu", "pos"][i] for i in best
    ]
    assert out["label_names"].tolist() == [[b"neg", b"neu", b"pos"]] * 4


@pytest.mark.slow
def test_regressor(vocab, reference, tmp_path):
    model = models.BertRegressor(_backbone(vocab))
    (out,) = _export_and_serve(
        model, [("serving_default", {"text_a": TEXT_A, "text_b": TEXT_B})], tmp_path
    )
    ids = expected_packed(reference, TEXT_A, TEXT_B)
    score = to_numpy(model(keras_inputs(ids, _segments(ids))))
    np.testing.assert_allclose(out["score"], np.reshape(score, [-1]), atol=1e-5)


@pytest.mark.slow
def test_span_labeler(vocab, reference, tmp_path):
    model = models.BertSpanLabeler(_backbone(vocab))
    questions = [b"who wrote it?", b"where?", b"\xff" + b"why " * 40, b"empty"]
    contexts = [
        "Jane Austen wrote Emma in 1815, in Chawton.".encode(),
        "北京 is the capital; Zürich is not.".encode(),
        b"long question, short context",
        b"",
    ]
    (out,) = _export_and_serve(
        model,
        [("serving_default", {"text_a": questions, "text_b": contexts})],
        tmp_path,
    )
    # run_squad.py packing: question cut to 64 pieces, context fills the rest.
    rows = []
    for q, c in zip(questions, contexts):
        # A question longer than the sequence leaves no room for context.
        q_ids = reference.ids(_text(q))[: min(64, SEQ_LEN - 3)]
        c_ids = reference.ids(_text(c))[: SEQ_LEN - len(q_ids) - 3] if c else None
        packed, _ = pack_pair(q_ids, c_ids, SEQ_LEN, CLS, SEP)
        rows.append(packed + [PAD] * (SEQ_LEN - len(packed)))
    ids = np.array(rows, np.int32)
    logits = to_numpy(model(keras_inputs(ids, _segments(ids))))
    for row, context in enumerate(contexts):
        if SEP not in list(ids[row])[list(ids[row]).index(SEP) + 2 :]:
            # No context piece fits (or no context): no answer.
            assert out["answer"][row] == b""
            assert out["start_offset"][row] == out["end_offset"][row] == -1
            continue
        first_sep = list(ids[row]).index(SEP)
        last = int((ids[row] != PAD).sum()) - 2  # Before the final [SEP].
        best = max(
            (logits["start_logits"][row, i] + logits["end_logits"][row, j], i, j)
            for i in range(first_sep + 1, last + 1)
            for j in range(i, min(last, i + 29) + 1)
        )
        np.testing.assert_allclose(out["score"][row], best[0], atol=1e-4)
        start, end = out["start_offset"][row], out["end_offset"][row]
        assert 0 <= start < end <= len(context)
        assert out["answer"][row] == context[start:end]
        # The answer re-tokenizes to the chosen pieces when it spans words.
        assert reference.ids(_text(out["answer"][row]))[:1] == [
            ids[row, best[1]]
        ] or vocab[ids[row, best[1]]].startswith("##")


@pytest.mark.slow
def test_token_classifier(vocab, reference, tmp_path):
    names = ["O", "B-PER", "I-PER"]
    model = models.BertTokenClassifier(
        _backbone(vocab), num_labels=3, label_names=names
    )
    texts = [
        "John Smith lives in New-York , ok".encode(),
        b"",
        b"\xff \xcc\x81 lone-mark word",
        " ".join(["unaffable"] * 20).encode(),  # Cut at a word boundary.
    ]
    (out,) = _export_and_serve(
        model, [("serving_default", {"text_a": texts})], tmp_path
    )
    # The tagging reader: words tokenized one by one, cut at the first word
    # that does not fit, labelled by their first piece.
    rows, firsts, words_per_row = [], [], []
    for text in texts:
        words = _text(text).split()
        tokens, first = [CLS], []
        for word in words:
            pieces = reference.ids(word)
            if len(tokens) - 1 + len(pieces) > SEQ_LEN - 2:
                break
            first.append(len(tokens) if pieces else -1)
            tokens += pieces
        tokens.append(SEP)
        rows.append(tokens + [PAD] * (SEQ_LEN - len(tokens)))
        firsts.append(first)
        words_per_row.append(words[: len(first)])
    ids = np.array(rows, np.int32)
    predicted = to_numpy(model(keras_inputs(ids))).argmax(-1)
    for row, (first, words) in enumerate(zip(firsts, words_per_row)):
        n = len(words)
        assert out["num_words"][row] == n
        assert [w.decode("utf-8") for w in out["words"][row][:n]] == words
        expected = [names[predicted[row, p]] if p >= 0 else "" for p in first]
        assert [w.decode() for w in out["labels"][row][:n]] == expected
        assert (out["words"][row][n:] == b"").all()
        assert (out["label_ids"][row][n:] == -1).all()


@pytest.mark.slow
def test_multiple_choice(vocab, reference, tmp_path):
    model = models.BertMultipleChoice(_backbone(vocab), num_choices=3)
    contexts = [b"She opened the door", b"\x00", b"He ran"]
    endings = [
        [b"and walked in.", b"and ate it.", b""],
        [b"a", b"\xff", "😀".encode()],
        [b"fast", b"slow", b"home " * 30],
    ]
    (out,) = _export_and_serve(
        model,
        [("serving_default", {"text_a": contexts, "text_b": endings})],
        tmp_path,
    )
    flat_a = [c for c in contexts for _ in range(3)]
    flat_b = [e for row in endings for e in row]
    ids = expected_packed(reference, flat_a, flat_b)
    inputs = {
        k: v.reshape(3, 3, SEQ_LEN)
        for k, v in keras_inputs(ids, _segments(ids)).items()
    }
    logits = to_numpy(model(inputs))
    np.testing.assert_allclose(out["probabilities"], _softmax(logits), atol=1e-5)
    assert out["choice"].tolist() == logits.argmax(-1).tolist()
    assert out["choice_text"].tolist() == [
        endings[i][c] for i, c in enumerate(logits.argmax(-1))
    ]
