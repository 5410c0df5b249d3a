"""The distillation transfer set as tf.data: raw sentences in, packed BERT
inputs out, for the teacher that labels them and the student that learns
the labels (`keras_bert.distillation`).

Shape legend: B sentences a batch, T tokens (each batch its own length,
rounded up to a multiple of 16 as the fine-tuning batches are), C the
teacher's outputs a sentence.

Each model tokenizes the raw text with its own vocabulary, so a student
need not share the teacher's. The text `[MASK]` (an augmented copy's
masked word) becomes the `[MASK]` id of that vocabulary; BERT's basic
tokenizer would split it into `[`, `mask`, `]`.

A shard is a TFRecord file of `tf.train.Example`s: `text_a`, `text_b`
(empty for a sentence), `has_b`, `label` (the class index or the score),
`has_label` (0 for an unlabelled or augmented sentence) and `teacher` (the
teacher's C outputs).
"""

import tensorflow as tf

from pipelines.packing import pack
from pipelines.vocabulary import MASK

LENGTH_MULTIPLE = 16


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


def packed_inputs(tokenizer, text_a, text_b, has_b, max_seq_length):
    """`{token_ids, segment_ids, padding_mask}` (B, T) for a batch of
    sentences (`has_b` false) and pairs, truncated longest-first as the
    original `run_classifier.py`."""
    segment_a = {"token_ids": tokenize_with_masks(tokenizer, text_a)}
    segment_b = {"token_ids": tokenize_with_masks(tokenizer, text_b)}
    fills = {"token_ids": (tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id)}
    packed = pack(segment_a, segment_b, has_b, max_seq_length, fills)
    longest = tf.reduce_max(tf.reduce_sum(packed["padding_mask"], axis=1))
    length = tf.minimum(
        (longest + LENGTH_MULTIPLE - 1) // LENGTH_MULTIPLE * LENGTH_MULTIPLE, max_seq_length
    )
    return {name: value[:, :length] for name, value in packed.items()}


def sentence_batches(text_a, text_b, tokenizer, max_seq_length, batch_size):
    """Batches of packed inputs for lists of str `text_a` and `text_b`
    (None entries: sentences), in order: what the teacher labels."""
    has_b = [b is not None for b in text_b]
    text_b = [b or "" for b in text_b]
    ds = tf.data.Dataset.from_tensor_slices((list(text_a), text_b, has_b)).batch(batch_size)
    return ds.map(lambda a, b, pair: packed_inputs(tokenizer, a, b, pair, max_seq_length)).prefetch(
        tf.data.AUTOTUNE
    )


def write_shard(path, rows):
    """Writes `rows` (dicts: `text_a`, `text_b` or None, `label` or None,
    `teacher`, a sequence of float) to the TFRecord file `path`, whole or
    not at all (written under a temporary name, then renamed)."""

    def feature(kind, values):
        return tf.train.Feature(**{kind: kind_lists[kind](value=values)})

    kind_lists = {
        "bytes_list": tf.train.BytesList,
        "float_list": tf.train.FloatList,
        "int64_list": tf.train.Int64List,
    }
    partial = path + ".partial"
    with tf.io.TFRecordWriter(partial) as writer:
        for row in rows:
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "text_a": feature("bytes_list", [row["text_a"].encode()]),
                        "text_b": feature("bytes_list", [(row["text_b"] or "").encode()]),
                        "has_b": feature("int64_list", [int(row["text_b"] is not None)]),
                        "label": feature("float_list", [float(row["label"] or 0.0)]),
                        "has_label": feature("int64_list", [int(row["label"] is not None)]),
                        "teacher": feature("float_list", list(row["teacher"])),
                    }
                )
            )
            writer.write(example.SerializeToString())
    tf.io.gfile.rename(partial, path, overwrite=True)


def read_shards(files, num_outputs):
    """The rows of shard `files` as dicts of tensors, in order."""
    spec = {
        "text_a": tf.io.FixedLenFeature([], tf.string),
        "text_b": tf.io.FixedLenFeature([], tf.string),
        "has_b": tf.io.FixedLenFeature([], tf.int64),
        "label": tf.io.FixedLenFeature([], tf.float32),
        "has_label": tf.io.FixedLenFeature([], tf.int64),
        "teacher": tf.io.FixedLenFeature([num_outputs], tf.float32),
    }
    return tf.data.TFRecordDataset(list(files)).map(lambda r: tf.io.parse_single_example(r, spec))


def student_batches(files, num_outputs, tokenizer, max_seq_length, batch_size, seed):
    """One shuffled epoch of `(inputs, targets)` batches from shard
    `files`: inputs packed with the student's `tokenizer`, targets (B, C + 2)
    float32, the teacher's C outputs, the label and whether there is one
    (the layout `StudentLoss` reads)."""
    ds = read_shards(files, num_outputs).shuffle(100_000, seed=seed, reshuffle_each_iteration=True)

    def inputs_and_targets(row):
        inputs = packed_inputs(
            tokenizer, row["text_a"], row["text_b"], row["has_b"] > 0, max_seq_length
        )
        targets = tf.concat(
            [
                row["teacher"],
                row["label"][:, None],
                tf.cast(row["has_label"], tf.float32)[:, None],
            ],
            axis=1,
        )
        return inputs, targets

    return ds.batch(batch_size).map(inputs_and_targets).prefetch(tf.data.AUTOTUNE)
