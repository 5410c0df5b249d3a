"""The distillation transfer set's tf.data: tokenization with `[MASK]`,
packing, and the shards, against the original BERT's Python tokenizer and
`_truncate_seq_pair`."""

import numpy as np
import pytest
import tensorflow as tf

from pipelines.tasks.features import pack_pair
from pipelines.transfer_set import (
    packed_inputs,
    read_shards,
    student_batches,
    tokenize_with_masks,
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
    assert length % 16 == 0 or length == max_seq_length
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


def test_student_batches_carry_the_teacher_the_label_and_whether_there_is_one(tokenizer, tmp_path):
    path = str(tmp_path / "shard-00000.tfrecord")
    write_shard(path, ROWS)
    batches = list(student_batches([path], 2, tokenizer, 16, 8, seed=0).as_numpy_iterator())
    assert len(batches) == 1
    inputs, targets = batches[0]
    assert set(inputs) == {"token_ids", "segment_ids", "padding_mask"}
    by_teacher = {tuple(t[:2].tolist()): tuple(t[2:].tolist()) for t in targets}
    assert by_teacher == {(0.5, -1.0): (1.0, 1.0), (2.0, 0.25): (0.0, 0.0), (-3.0, 1.0): (0.0, 1.0)}
