"""The distillation transfer set's tf.data: tokenization with `[MASK]`,
packing, and the shards, against the original BERT's Python tokenizer and
`_truncate_seq_pair`."""

import os

import numpy as np
import pytest
import tensorflow as tf

from pipelines.tasks.conll import TaggedSentence, tagging_features
from pipelines.tasks.features import pack_pair
from pipelines.transfer_set import (
    LENGTH_MULTIPLE,
    packed_inputs,
    read_shards,
    student_batches,
    tagging_inputs,
    tokenize_with_masks,
    word_batches,
    write_shard,
)

pytestmark = pytest.mark.backend_independent

TEXTS = [
    "The quick brown fox.",
    "[MASK] jumps over [MASK] [MASK] lazy dog [MASK]",
    "",
    "[MASK]",
    "un[MASK]able words, and [MASK]punctuation!",
]


def reference_ids(reference, text):
    """The original tokenizer's ids of the text between masks, `[MASK]`'s
    id between them."""
    mask_id = reference.vocab["[MASK]"]
    ids = []
    for index, piece in enumerate(text.split("[MASK]")):
        if index:
            ids.append(mask_id)
        ids += reference.ids(piece)
    return ids


def test_the_mask_text_becomes_the_mask_id(tokenizer, reference):
    got = tokenize_with_masks(tokenizer, tf.constant(TEXTS)).to_list()
    assert got == [reference_ids(reference, t) for t in TEXTS]


@pytest.mark.parametrize("max_seq_length", [8, 11, 64])
def test_packing_truncates_as_the_original(tokenizer, reference, max_seq_length):
    text_a = ["a short one", "a much longer first sentence of many words here", "x " * 30]
    text_b = [None, "and a second", "y " * 3]
    has_b = [b is not None for b in text_b]
    packed = packed_inputs(
        tokenizer,
        tf.constant(text_a),
        tf.constant([b or "" for b in text_b]),
        tf.constant(has_b),
        max_seq_length,
    )
    length = packed["token_ids"].shape[1]
    assert length % LENGTH_MULTIPLE == 0 or length == max_seq_length
    for row, (a, b) in enumerate(zip(text_a, text_b)):
        tokens, segments = pack_pair(
            reference_ids(reference, a),
            None if b is None else reference_ids(reference, b),
            max_seq_length,
            tokenizer.cls_id,
            tokenizer.sep_id,
        )
        n = len(tokens)
        assert packed["token_ids"][row, :n].numpy().tolist() == tokens
        assert packed["segment_ids"][row, :n].numpy().tolist() == segments
        assert packed["padding_mask"][row].numpy().tolist() == [1] * n + [0] * (length - n)
        assert not packed["token_ids"][row, n:].numpy().any()


ROWS = [
    {"text_a": "a good film", "text_b": None, "label": 1, "teacher": [0.5, -1.0]},
    {"text_a": "[MASK] film", "text_b": None, "label": None, "teacher": [2.0, 0.25]},
    {"text_a": "a bad one", "text_b": None, "label": 0, "teacher": [-3.0, 1.0]},
]


def test_a_shard_keeps_every_row(tmp_path):
    path = str(tmp_path / "shard-00000.tfrecord")
    write_shard(path, ROWS)
    assert [p.name for p in tmp_path.iterdir()] == ["shard-00000.tfrecord"]
    read = list(read_shards([path], 2).as_numpy_iterator())
    assert [r["text_a"].decode() for r in read] == [r["text_a"] for r in ROWS]
    assert [r["has_label"] for r in read] == [1, 0, 1]
    assert [r["has_b"] for r in read] == [0, 0, 0]
    np.testing.assert_array_equal([r["teacher"] for r in read], [r["teacher"] for r in ROWS])


def test_a_shard_is_never_written_through_a_planted_link(tmp_path):
    # Issue 82 item 3: the shard was written to `path + ".partial"`, through
    # a link planted there to a file outside.
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    folder = tmp_path / "transfer_set"
    folder.mkdir()
    planted = ["shard-00000.tfrecord.partial", ".shard-00000.tfrecord.partial"]
    for name in planted + ["shard-00000.tfrecord"]:  # The final name too.
        (folder / name).symlink_to(victim)
    path = str(folder / "shard-00000.tfrecord")
    write_shard(path, ROWS)
    assert victim.read_text() == "mine"
    assert not os.path.islink(path)
    assert [r["text_a"].decode() for r in read_shards([path], 2).as_numpy_iterator()] == [
        r["text_a"] for r in ROWS
    ]
    assert sorted(os.listdir(folder)) == sorted(planted + ["shard-00000.tfrecord"])


def test_student_batches_carry_the_teacher_the_label_and_whether_there_is_one(tokenizer, tmp_path):
    path = str(tmp_path / "shard-00000.tfrecord")
    write_shard(path, ROWS)
    batches = list(student_batches([path], 2, tokenizer, 16, 8, seed=0).as_numpy_iterator())
    assert len(batches) == 1
    inputs, targets = batches[0]
    assert set(inputs) == {"token_ids", "segment_ids", "padding_mask"}
    by_teacher = {tuple(t[:2].tolist()): tuple(t[2:].tolist()) for t in targets}
    assert by_teacher == {
        (0.5, -1.0): (1.0, 1.0, 1.0),
        (2.0, 0.25): (0.0, 0.0, 1.0),
        (-3.0, 1.0): (0.0, 1.0, 1.0),
    }


def test_student_batches_group_sentences_of_one_length_and_keep_every_one(tokenizer, tmp_path):
    # Issue 79 item 3: each batch holds sentences of one length bucket (a
    # multiple of LENGTH_MULTIPLE), padded to it, and an epoch still holds
    # every sentence once with its own targets and tokens.
    rows = [
        {"text_a": " ".join(["word"] * n), "text_b": None, "label": None, "teacher": [n, -n]}
        for n in [1, 30, 2, 25, 3, 14, 9, 2, 31, 7, 12, 1, 20]
    ]
    path = str(tmp_path / "shard-00000.tfrecord")
    write_shard(path, rows)
    batches = list(student_batches([path], 2, tokenizer, 32, 2, seed=0).as_numpy_iterator())
    seen = []
    for inputs, targets in batches:
        lengths = inputs["padding_mask"].sum(axis=1)
        width = inputs["token_ids"].shape[1]
        assert width % LENGTH_MULTIPLE == 0 or width == 32
        assert all(width - LENGTH_MULTIPLE < n <= width for n in lengths)
        for ids, n, target in zip(inputs["token_ids"], lengths, targets):
            words = int(target[0])
            assert n == min(words, 30) + 2  # [CLS], the words ("word" is one piece), [SEP]
            assert (ids[n:] == 0).all()
            seen.append(words)
    assert sorted(seen) == sorted(r["teacher"][0] for r in rows)
    assert len(batches) > len(rows) / 2  # The buckets fill apart.
    # Without grouping: batches as the shuffle brings them, of any lengths.
    mixed = list(
        student_batches([path], 2, tokenizer, 32, 2, 0, group_by_length=False).as_numpy_iterator()
    )
    assert [len(targets) for _, targets in mixed] == [2] * 6 + [1]
    widths = {inputs["token_ids"].shape[1] for inputs, _ in mixed}
    spans = [np.ptp(inputs["padding_mask"].sum(axis=1)) for inputs, _ in mixed]
    assert max(spans) > LENGTH_MULTIPLE and widths <= {8, 16, 24, 32}


SENTENCES = [
    ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
    ["Peter", "Blackburn"],
    ["unbelievably", "long", "words", "everywhere", "here", "too"],
]


@pytest.mark.parametrize("max_seq_length", [8, 16, 128])
def test_tagging_inputs_are_the_fine_tuning_readers(tokenizer, max_seq_length):
    words = tf.ragged.constant(SENTENCES)
    inputs, first = tagging_inputs(tokenizer, words, max_seq_length)
    sentences = [TaggedSentence(s, ["O"] * len(s)) for s in SENTENCES]
    features, _, starts = tagging_features(sentences, tokenizer, max_seq_length, ["O"])
    for row, (tokens, word_starts) in enumerate(zip(features["token_ids"], starts)):
        n = len(tokens)
        assert inputs["token_ids"][row, :n].numpy().tolist() == tokens
        assert not inputs["token_ids"][row, n:].numpy().any()
        assert first[row, : len(word_starts)].numpy().tolist() == word_starts
    assert [list(b[1].shape) for b in word_batches(SENTENCES, tokenizer, 16, 2)] == [[2, 9], [1, 6]]


def test_a_tagged_sentences_targets_sit_at_its_words_first_pieces(tokenizer, tmp_path):
    # Teacher outputs (C = 2) for 3 words; the second word was cut for the
    # teacher, the first has a tag.
    row = {
        "words": ["unbelievably", "long", "words"],
        "labels": [1, -1, -1],
        "teacher": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        "is_target": [1, 0, 1],
    }
    path = str(tmp_path / "shard-00000.tfrecord")
    write_shard(path, [row])
    ((inputs, targets),) = student_batches([path], 2, tokenizer, 32, 4, 0, tagging=True)
    _, first = tagging_inputs(tokenizer, tf.ragged.constant([row["words"]]), 32)
    first = first[0].numpy().tolist()
    expected = np.zeros(targets.shape[1:], np.float32)
    expected[first[0]] = [1.0, 2.0, 1.0, 1.0, 1.0]
    expected[first[2]] = [5.0, 6.0, 0.0, 0.0, 1.0]
    np.testing.assert_array_equal(targets[0].numpy(), expected)
    assert inputs["token_ids"].shape[1] == targets.shape[1]
