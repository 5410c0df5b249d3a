"""The distillation transfer set as tf.data: raw sentences in, packed BERT
inputs out, for the teacher that labels them and the student that learns
the labels (`keras_bert.distillation`).

Shape legend: B sentences a batch, T tokens (each batch its own length,
rounded up to a multiple of `LENGTH_MULTIPLE`), C the teacher's outputs a
sentence.

Each model tokenizes the raw text with its own vocabulary, so a student
need not share the teacher's. The text `[MASK]` (an augmented copy's
masked word) becomes the `[MASK]` id of that vocabulary; BERT's basic
tokenizer would split it into `[`, `mask`, `]`.

A shard is a TFRecord file of `tf.train.Example`s. A sentence's: `text_a`,
`text_b` (empty for a sentence), `has_b`, `label` (the class index or the
score), `has_label` (0 for an unlabelled or augmented sentence) and
`teacher` (the teacher's C outputs). A tagged sentence's (token tagging,
W words): `words`, `labels` (W tag indices, -1 where there is none),
`teacher` (W * C outputs, each word's at its first piece) and `is_target`
(W: 0 for a word the teacher's sequence length cut or that has no piece).

The targets of a batch are `(..., C + 3)` float32: the teacher's C
outputs, the label, whether there is one, and whether the position is a
target (the layout `keras_bert.distillation.StudentLoss` reads): (B, C + 3)
for sentences, (B, T, C + 3) for tagging, each word's at its first piece.
"""

import os
import uuid

import numpy as np
import tensorflow as tf

from pipelines.packing import pack
from pipelines.vocabulary import MASK

# The batches are padded to a multiple of this. The teacher's batches are
# its rows sorted by length in tokens (`length_batches`) and the student's
# are bucketed by it (`student_batches`), so a fine multiple wastes little
# on padding; each multiple up to the sequence length is one compilation
# under JAX and XLA. Measured in BENCHMARKS.md#task-distillation.
LENGTH_MULTIPLE = 8
# Sentences the student's pipeline tokenizes at once.
TOKENIZE_BLOCK = 1024


def tokenize_with_masks(tokenizer, texts):
    """tf.string (B,) -> ragged int32 (B, None) ids, `[MASK]` in the text
    as `tokenizer.mask_id`."""
    pieces = tf.strings.split(texts, MASK)  # (B, P): the text between masks
    ids = tokenizer.tokenize(pieces.flat_values)  # (B * P, None)
    # Every piece but its row's last is followed by a mask.
    starts = pieces.row_starts()
    position = tf.range(tf.size(pieces.flat_values, out_type=tf.int64)) - tf.repeat(
        starts, pieces.row_lengths()
    )
    followed = position < tf.repeat(pieces.row_lengths() - 1, pieces.row_lengths())
    masks = tf.RaggedTensor.from_row_lengths(
        tf.fill(
            [tf.reduce_sum(tf.cast(followed, tf.int32))], tf.cast(tokenizer.mask_id, ids.dtype)
        ),
        tf.cast(followed, tf.int64),
    )
    joined = tf.concat([ids, masks], axis=1)  # (B * P, None)
    return pieces.with_flat_values(joined).merge_dims(1, 2)


def _trimmed(packed, max_seq_length):
    """`packed` cut to its longest row, rounded up to `LENGTH_MULTIPLE`."""
    longest = tf.reduce_max(tf.reduce_sum(packed["padding_mask"], axis=1))
    length = tf.minimum(
        (longest + LENGTH_MULTIPLE - 1) // LENGTH_MULTIPLE * LENGTH_MULTIPLE, max_seq_length
    )
    return {name: value[:, :length] for name, value in packed.items()}


def packed_inputs(tokenizer, text_a, text_b, has_b, max_seq_length):
    """`{token_ids, segment_ids, padding_mask}` (B, T) for a batch of
    sentences (`has_b` false) and pairs, truncated longest-first as the
    original `run_classifier.py`."""
    segment_a = {"token_ids": tokenize_with_masks(tokenizer, text_a)}
    segment_b = {"token_ids": tokenize_with_masks(tokenizer, text_b)}
    fills = {"token_ids": (tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)}
    packed = pack(segment_a, segment_b, has_b, max_seq_length, fills)
    return _trimmed(packed, max_seq_length)


def tagging_inputs(tokenizer, words, max_seq_length):
    """`(inputs, first)` for a batch of tagged sentences, `words` ragged
    tf.string (B, W): `[CLS]`, the words' pieces, `[SEP]`, and each word's
    first piece's position (B, W) int64, -1 for a word with no piece or cut.

    As the fine-tuning reader (`pipelines.tasks.tagging_features`), a
    sentence is cut before the first word whose pieces pass
    `max_seq_length - 2`, whole words only."""
    pieces = tokenize_with_masks(tokenizer, words.flat_values)  # (N, P), N words
    counts = words.with_flat_values(pieces.row_lengths()).to_tensor()  # (B, W)
    ends = tf.math.cumsum(counts, axis=1)  # (B, W): each word's end, past [CLS]
    present = tf.sequence_mask(words.row_lengths(), tf.shape(counts)[1])
    fits = (ends <= max_seq_length - 2) & present  # a prefix of each row
    first = tf.where(fits & (counts > 0), ends - counts + 1, -1)
    kept = tf.ragged.boolean_mask(pieces, tf.boolean_mask(fits, present))  # (N', P)
    per_sentence = tf.RaggedTensor.from_row_lengths(
        kept, tf.reduce_sum(tf.cast(fits, tf.int64), axis=1)
    ).merge_dims(1, 2)  # (B, None)
    fills = {"token_ids": (tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)}
    packed = pack({"token_ids": per_sentence}, None, None, max_seq_length, fills)
    return _trimmed(packed, max_seq_length), first


def length_batches(inputs, batch_size, multiple=LENGTH_MULTIPLE):
    """Yields `(indices, batch)`: the rows of `inputs` (numpy arrays (N, L)
    of packed inputs, `padding_mask` among them) in batches of
    `batch_size`, shortest first, each batch cut to its longest row
    rounded up to `multiple`; `indices` (int64) are the batch's rows in
    `inputs`. The last batch is filled up to `batch_size` with copies of
    its last row, so that every batch of a length has one shape (one
    compilation); its outputs past `len(indices)` are those copies'."""
    lengths = inputs["padding_mask"].sum(axis=1)
    order = np.argsort(lengths, kind="stable")
    for start in range(0, len(order), batch_size):
        indices = order[start : start + batch_size]
        filled = np.pad(indices, (0, batch_size - len(indices)), mode="edge")
        length = min(
            -(-int(lengths[indices[-1]]) // multiple) * multiple, inputs["padding_mask"].shape[1]
        )
        yield indices, {name: value[filled, :length] for name, value in inputs.items()}


def sentence_batches(text_a, text_b, tokenizer, max_seq_length, batch_size):
    """Batches of packed inputs for lists of str `text_a` and `text_b`
    (None entries: sentences), in order: what the teacher labels."""
    has_b = [b is not None for b in text_b]
    text_b = [b or "" for b in text_b]
    ds = tf.data.Dataset.from_tensor_slices((list(text_a), text_b, has_b)).batch(batch_size)
    return ds.map(lambda a, b, pair: packed_inputs(tokenizer, a, b, pair, max_seq_length)).prefetch(
        tf.data.AUTOTUNE
    )


def word_batches(sentences, tokenizer, max_seq_length, batch_size):
    """Batches of `(inputs, first)` (`tagging_inputs`) for a list of
    tagged sentences, each a list of str words, in order."""
    words = tf.ragged.constant([list(s) for s in sentences], dtype=tf.string, ragged_rank=1)
    ds = tf.data.Dataset.from_tensor_slices(words).batch(batch_size)
    return ds.map(lambda w: tagging_inputs(tokenizer, w, max_seq_length)).prefetch(tf.data.AUTOTUNE)


def _feature(value):
    """A `tf.train.Feature` of a str, or a list of str, int or float."""
    values = value if isinstance(value, (list, tuple)) else [value]
    if values and isinstance(values[0], str):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode() for v in values]))
    if values and isinstance(values[0], int):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    return tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in values]))


def _example(row):
    """The `tf.train.Example` of a labelled row (see the module docstring)."""
    if "words" in row:
        labels = row["labels"] or [-1] * len(row["words"])
        features = {
            "words": row["words"],
            "labels": [int(label) for label in labels],
            "teacher": [float(v) for v in row["teacher"]],
            "is_target": [int(v) for v in row["is_target"]],
        }
    else:
        features = {
            "text_a": row["text_a"],
            "text_b": row["text_b"] or "",
            "has_b": int(row["text_b"] is not None),
            "label": float(row["label"] or 0.0),
            "has_label": int(row["label"] is not None),
            "teacher": [float(v) for v in row["teacher"]],
        }
    return tf.train.Example(
        features=tf.train.Features(feature={k: _feature(v) for k, v in features.items()})
    )


def write_shard(path, rows):
    """Writes `rows` (a sentence's dicts: `text_a`, `text_b` or None,
    `label` or None, `teacher`; a tagged sentence's: `words`, `labels` or
    None, `teacher` flat, `is_target`) to the TFRecord file `path`, whole
    or not at all: written under a hidden random name ending in `.partial`
    (what a killed writer leaves), then renamed."""
    folder, name = os.path.split(path)
    # Random, not `path + ".partial"`: a link planted at a fixed name would
    # be written through. Locally the name is also created with `O_EXCL`,
    # so nothing was there before the writer opens it.
    partial = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.partial")
    if "://" not in path:
        os.close(os.open(partial, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    try:
        with tf.io.TFRecordWriter(partial) as writer:
            for row in rows:
                writer.write(_example(row).SerializeToString())
        tf.io.gfile.rename(partial, path, overwrite=True)
    except BaseException:
        if tf.io.gfile.exists(partial):
            tf.io.gfile.remove(partial)
        raise


def read_shards(files, num_outputs, tagging=False):
    """The rows of shard `files` as dicts of tensors, in order (a tagged
    sentence's `teacher` reshaped to (W, C))."""
    if tagging:
        spec = {
            "words": tf.io.RaggedFeature(tf.string),
            "labels": tf.io.RaggedFeature(tf.int64),
            "teacher": tf.io.RaggedFeature(tf.float32),
            "is_target": tf.io.RaggedFeature(tf.int64),
        }
    else:
        spec = {
            "text_a": tf.io.FixedLenFeature([], tf.string),
            "text_b": tf.io.FixedLenFeature([], tf.string),
            "has_b": tf.io.FixedLenFeature([], tf.int64),
            "label": tf.io.FixedLenFeature([], tf.float32),
            "has_label": tf.io.FixedLenFeature([], tf.int64),
            "teacher": tf.io.FixedLenFeature([num_outputs], tf.float32),
        }

    def parse(record):
        row = tf.io.parse_single_example(record, spec)
        if tagging:
            row["teacher"] = tf.reshape(row["teacher"], [-1, num_outputs])
        return row

    return tf.data.TFRecordDataset(list(files)).map(parse)


def _sentence_targets(row, tokenizer, max_seq_length):
    inputs = packed_inputs(
        tokenizer, row["text_a"], row["text_b"], row["has_b"] > 0, max_seq_length
    )
    targets = tf.concat(
        [
            row["teacher"],
            row["label"][:, None],
            tf.cast(row["has_label"], tf.float32)[:, None],
            tf.ones_like(row["label"])[:, None],
        ],
        axis=1,
    )
    return inputs, targets


def _tagging_targets(row, tokenizer, max_seq_length, num_outputs):
    inputs, first = tagging_inputs(tokenizer, row["words"], max_seq_length)
    teacher = row["teacher"].to_tensor()  # (B, W, C)
    labels = row["labels"].to_tensor(default_value=-1)  # (B, W)
    is_target = row["is_target"].to_tensor()  # (B, W)
    # A target where both the teacher and the student kept the word.
    where = tf.where((first >= 0) & (is_target > 0))  # (K, 2): (sentence, word)
    labels = tf.gather_nd(labels, where)
    values = tf.concat(
        [
            tf.gather_nd(teacher, where),
            tf.cast(tf.maximum(labels, 0), tf.float32)[:, None],
            tf.cast(labels >= 0, tf.float32)[:, None],
            tf.ones_like(labels, tf.float32)[:, None],
        ],
        axis=1,
    )  # (K, C + 3)
    positions = tf.stack([where[:, 0], tf.gather_nd(first, where)], axis=1)  # (K, 2)
    shape = tf.stack(
        [tf.shape(first, tf.int64)[0], tf.shape(inputs["token_ids"], tf.int64)[1], num_outputs + 3]
    )
    return inputs, tf.scatter_nd(positions, values, shape)


def student_batches(
    files,
    num_outputs,
    tokenizer,
    max_seq_length,
    batch_size,
    seed,
    tagging=False,
    group_by_length=True,
):
    """One shuffled epoch of `(inputs, targets)` batches from shard
    `files`: inputs packed with the student's `tokenizer`, targets as the
    module docstring lays them out.

    With `group_by_length`, each batch holds sentences of about one length
    in tokens, padded to the next multiple of `LENGTH_MULTIPLE` (tf.data's
    `bucket_by_sequence_length`: a bucket a multiple, filled from the
    shuffled stream): batches of whatever came are padded to their longest
    sentence, most of a step's work for short sentences. The sentences are
    tokenized `TOKENIZE_BLOCK` at a time (the tokenizer is fastest on
    many)."""
    ds = read_shards(files, num_outputs, tagging)
    ds = ds.shuffle(100_000, seed=seed, reshuffle_each_iteration=True)
    block = TOKENIZE_BLOCK if group_by_length else batch_size
    if tagging:
        ds = ds.ragged_batch(block).map(
            lambda row: _tagging_targets(row, tokenizer, max_seq_length, num_outputs)
        )
    else:
        ds = ds.batch(block).map(lambda row: _sentence_targets(row, tokenizer, max_seq_length))
    if not group_by_length:
        return ds.prefetch(tf.data.AUTOTUNE)
    ds = ds.unbatch().map(_cut_to_length, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    boundaries = [
        *range(LENGTH_MULTIPLE + 1, max_seq_length + 1, LENGTH_MULTIPLE),
        max_seq_length + 1,
    ]
    ds = ds.bucket_by_sequence_length(
        lambda inputs, targets: tf.shape(inputs["token_ids"])[0],
        boundaries,
        [batch_size] * (len(boundaries) + 1),
        pad_to_bucket_boundary=True,
    )
    return ds.prefetch(tf.data.AUTOTUNE)


def _cut_to_length(inputs, targets):
    """One sentence's inputs (and a tagged sentence's targets, a row a
    token) cut to its tokens: its padding was its block's."""
    length = tf.reduce_sum(inputs["padding_mask"])
    inputs = {name: value[:length] for name, value in inputs.items()}
    return inputs, targets[:length] if targets.shape.rank == 2 else targets
