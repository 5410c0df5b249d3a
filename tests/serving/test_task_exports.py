"""Every fine-tuned task model exports and answers raw text on stock TF.

Each test exports one tiny task model, calls `serving_default` in a fresh
tensorflow-only process and checks the answer against the Keras model run on
the reference tokenizer's ids (the span labeler: against fine-tuning's own
SQuAD evaluation on the same text). All are slow (an export costs 15-60 s on
these machines); `test_serving_export.py` covers backbone and pretrainer in
the default run.
"""

import keras
import numpy as np
import pytest

import pipelines
import pipelines.tasks as tasks
from keras_bert import models
from keras_bert.finetuning.squad_postprocess import span_candidates, squad_predictions
from keras_bert.serving import export_for_serving
from pipelines.tasks.squad import split_words
from tests.serving.test_serving_export import (
    CLS,
    PAD,
    SEP,
    SEQ_LEN,
    VOCAB,
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
    assert [b.decode() for b in out["label"]] == [["neg", "neu", "pos"][i] for i in best]
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


# SQuAD serving as fine-tuning evaluates: 8-piece question cap, windows of
# the SEQ_LEN = 32 pieces left, 8 apart; 4-best starts and ends per window.
SQUAD = dict(max_query_length=8, doc_stride=8, n_best_size=4, max_answer_length=5)
FILLER = "Jane Austen wrote Emma in 1815 , in Chawton . " * 4  # 48 pieces.
SQUAD_REQUESTS = [
    (b"what is striped?", FILLER + "Some say zebra stripes are warm ."),  # Last.
    (b"what is striped?", "The zebra stripes fade . " + FILLER),  # First.
    (b"where?", "北京 is the capital ; Zürich is not ."),  # One window.
    (b"\xff" + b"why " * 12, FILLER),  # Invalid UTF-8; over max_query_length.
    (b"", FILLER),  # No question.
    (b"empty", ""),  # No context: no answer.
]


def _zebra_span_labeler(vocab):
    """A tiny span labeler whose best span is "zebra stripes" wherever it
    stands: those words' embeddings point along the head's start and end
    vectors (with any other weights, the best span lands anywhere)."""
    model = models.BertSpanLabeler(_backbone(vocab))
    embedding = model.backbone.get_layer("embeddings").token_embedding
    table = keras.ops.convert_to_numpy(embedding.embeddings)
    head = keras.ops.convert_to_numpy(model.output_dense.kernel)  # (H, 2)
    for word, column in (("zebra", 0), ("stripes", 1)):
        table[vocab.index(word)] = 3 * head[:, column] / np.linalg.norm(head[:, column])
    embedding.embeddings.assign(table)
    return model


def _finetuning_answers(model, vocab, questions, contexts):
    """Fine-tuning evaluation on the same inputs: `squad_features` windows,
    the Keras model, `squad_predictions`.

    Returns:
        (answer texts, features, each question's feature indices, each
        question's best `Candidate` or None).
    """
    examples = [
        tasks.SquadExample(str(i), _text(q), c, split_words(c)[0], [])
        for i, (q, c) in enumerate(zip(questions, contexts))
    ]
    features = tasks.squad_features(
        examples,
        pipelines.BertTokenizer(VOCAB),
        max_seq_length=SEQ_LEN,
        doc_stride=SQUAD["doc_stride"],
        max_query_length=SQUAD["max_query_length"],
    )
    ids = np.full((len(features), SEQ_LEN), PAD, np.int32)
    segments = np.zeros_like(ids)
    for n, feature in enumerate(features):
        ids[n, : len(feature.token_ids)] = feature.token_ids
        segments[n, : len(feature.segment_ids)] = feature.segment_ids
    logits = to_numpy(model(keras_inputs(ids, segments)))
    starts, ends = logits["start_logits"], logits["end_logits"]
    predictions, _ = squad_predictions(
        examples,
        features,
        starts,
        ends,
        vocab,
        n_best_size=SQUAD["n_best_size"],
        max_answer_length=SQUAD["max_answer_length"],
    )
    windows, best = [], []
    for i in range(len(examples)):
        windows.append([n for n, f in enumerate(features) if f.example_index == i])
        candidates = span_candidates(
            features,
            windows[-1],
            starts,
            ends,
            SQUAD["n_best_size"],
            SQUAD["max_answer_length"],
        )
        best.append(candidates[0] if candidates else None)
    answers = [predictions[str(i)] for i in range(len(examples))]
    return answers, features, windows, best


@pytest.mark.slow
def test_span_labeler_windows_match_finetuning(vocab, tmp_path):
    import tensorflow as tf

    model = _zebra_span_labeler(vocab)
    path = export_for_serving(model, str(tmp_path / "export"), seq_len=SEQ_LEN, **SQUAD)
    questions = [q for q, _ in SQUAD_REQUESTS]
    contexts = [c.encode() for _, c in SQUAD_REQUESTS]
    batch, last_alone, pair = serve(
        [
            (path, "serving_default", {"text_a": questions, "text_b": contexts}),
            (path, "serving_default", {"text_a": questions[:1], "text_b": contexts[:1]}),
            # Two requests of different lengths (5 windows and 1).
            (path, "serving_default", {"text_a": questions[1:3], "text_b": contexts[1:3]}),
        ],
        tmp_path,
    )
    answers, features, windows, best = _finetuning_answers(
        model, vocab, questions, [c for _, c in SQUAD_REQUESTS]
    )
    assert answers[:2] == ["zebra stripes", "zebra stripes"]
    # Request 0's answer is in its last window, past the whole first one:
    # a single-window export could not have found it. Request 1's is in
    # its first window.
    assert len(windows[0]) > 2 and best[0].feature == windows[0][-1]
    answer_word = features[best[0].feature].token_to_word[best[0].start]
    assert max(features[windows[0][0]].token_to_word.values()) < answer_word
    assert len(windows[1]) > 2 and best[1].feature == windows[1][0]
    assert len(windows[2]) == 1
    for row, (answer, first) in enumerate(zip(answers, best)):
        assert batch["answer"][row].decode() == answer, row
        start, end = batch["start_offset"][row], batch["end_offset"][row]
        if first is None:
            assert answer == "" and start == end == -1 and batch["score"][row] == 0
            continue
        # Offsets are UTF-8 bytes into the original context.
        assert contexts[row][start:end] == batch["answer"][row]
        np.testing.assert_allclose(batch["score"][row], first.score, atol=1e-4)
    # A request is answered the same alone or in any batch.
    for out, rows in ((last_alone, [0]), (pair, [1, 2])):
        for k in ("answer", "start_offset", "end_offset"):
            assert out[k].tolist() == batch[k][rows].tolist()
        np.testing.assert_allclose(out["score"], batch["score"][rows], atol=1e-5)
    # The export records the settings it answers with.
    settings = tf.saved_model.load(path).squad_settings
    assert {k: int(v.numpy()) for k, v in settings.items()} == dict(seq_len=SEQ_LEN, **SQUAD)


@pytest.mark.slow
def test_token_classifier(vocab, reference, tmp_path):
    names = ["O", "B-PER", "I-PER"]
    model = models.BertTokenClassifier(_backbone(vocab), num_labels=3, label_names=names)
    texts = [
        "John Smith lives in New-York , ok".encode(),
        b"",
        b"\xff \xcc\x81 lone-mark word",
        " ".join(["unaffable"] * 20).encode(),  # Cut at a word boundary.
    ]
    (out,) = _export_and_serve(model, [("serving_default", {"text_a": texts})], tmp_path)
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
    inputs = {k: v.reshape(3, 3, SEQ_LEN) for k, v in keras_inputs(ids, _segments(ids)).items()}
    logits = to_numpy(model(inputs))
    np.testing.assert_allclose(out["probabilities"], _softmax(logits), atol=1e-5)
    assert out["choice"].tolist() == logits.argmax(-1).tolist()
    assert out["choice_text"].tolist() == [endings[i][c] for i, c in enumerate(logits.argmax(-1))]


def test_an_xla_compiled_export_answers_as_the_keras_model(vocab, reference, tmp_path):
    model = models.BertClassifier(_backbone(vocab), num_classes=2, label_names=["neg", "pos"])
    path = export_for_serving(model, str(tmp_path / "export"), seq_len=SEQ_LEN, jit_compile=True)
    graph = (tmp_path / "export" / "1" / "saved_model.pb").read_bytes()
    assert b"_XlaMustCompile" in graph
    (out,) = serve([(path, "serving_default", {"text_a": TEXT_A, "text_b": TEXT_B})], tmp_path)
    ids = expected_packed(reference, TEXT_A, TEXT_B)
    logits = to_numpy(model(keras_inputs(ids, _segments(ids))))
    np.testing.assert_allclose(out["probabilities"], _softmax(logits), atol=1e-5)
