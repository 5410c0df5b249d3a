"""Offline TFRecord shards: a corpus tokenized once (`python -m keras_bert.data`).

Masking and pair construction stay dynamic: `corpus.tfrecord_documents`
reads the shards back (`pretraining_dataset(..., corpus_format="tfrecord")`).
One `tf.train.Example` per document, with int64 features `token_ids` (all
tokens) and `sentence_lengths`; `metadata.json` beside the shards pins the
vocabulary they were written with, checked by `check_tfrecord_vocabulary`
before they are read.
"""

import hashlib
import json
import os
import shutil
import tempfile
import uuid

import numpy as np
import tensorflow as tf

from pipelines import corpus, corpus_files
from pipelines.bert_tokenizer import BertTokenizer
from pipelines.errors import CorpusError

TFRECORD_METADATA = "metadata.json"
# The hidden folder inside `output_dir`, `.partial-<random>`, that new
# shards are written to and moved out of once complete, so that a failed
# run leaves the folder as it was (an earlier run's shards included, under
# --overwrite). Random and created exclusively: at a fixed name a planted
# link would have the shards written, and the folder emptied, through it.
STAGING = ".partial"


def _vocab_sha256(vocab_file):
    with tf.io.gfile.GFile(vocab_file, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _is_shard(name):
    return name.startswith("part-") and name.endswith(".tfrecord")


def _is_own_file(name):
    """A name `write_tfrecord_shards` writes (or stages) in its folder."""
    return name == TFRECORD_METADATA or _is_staging(name) or _is_shard(name)


def _is_staging(name):
    """A staging folder's name; a bare `.partial` is an older version's."""
    return name == STAGING or name.startswith(STAGING + "-")


def _check_output_dir(output_dir, num_shards, overwrite):
    """Refuses what would mix runs, delete what this command did not write,
    or fail only after tokenizing."""
    if isinstance(num_shards, bool) or not isinstance(num_shards, int) or num_shards < 1:
        raise CorpusError(
            f"`num_shards` must be a positive integer. Received: num_shards={num_shards!r}"
        )
    if not tf.io.gfile.exists(output_dir):
        return
    if not tf.io.gfile.isdir(output_dir):
        raise CorpusError(
            f"`output_dir` is a file, not a folder. Received: output_dir={output_dir!r}"
        )
    held = sorted(tf.io.gfile.listdir(output_dir))
    others = [name for name in held if not _is_own_file(name.rstrip("/"))]
    if overwrite and others:
        raise CorpusError(
            f"`output_dir` holds {', '.join(others[:5])}, which are not shards "
            "this command wrote: not replaced, even with --overwrite; pick another "
            f"folder. Received: output_dir={output_dir!r}"
        )
    if overwrite or not held:
        return
    # Shards of another run (maybe another vocabulary) would be read
    # together with these ones.
    if TFRECORD_METADATA not in held and any(name.endswith(".tfrecord") for name in held):
        raise CorpusError(
            f"`output_dir` holds shards but no {TFRECORD_METADATA} (left "
            "by a run that was stopped?); pass --overwrite to replace them or "
            f"pick another folder. Received: output_dir={output_dir!r}"
        )
    raise CorpusError(
        f"`output_dir` must be new or empty (--overwrite replaces the shards of an "
        f"earlier run); it holds {', '.join(held[:5])}. Received: output_dir={output_dir!r}"
    )


def write_tfrecord_shards(
    file_pattern,
    output_dir,
    vocab_file,
    *,
    corpus_format="sentences",
    lower_case=True,
    num_shards=16,
    text_document="file",
    progress=None,
    overwrite=False,
):
    """Tokenizes a corpus once into TFRecord shards of documents.

    Masking and pair construction stay dynamic: read the shards back with
    `pretraining_dataset(..., corpus_format="tfrecord")`. Documents are dealt
    round-robin over `num_shards` files `part-XXXXX-of-YYYYY.tfrecord` in a
    new or empty `output_dir` (with `overwrite`, one holding only an earlier
    run's shards, which the new ones replace once complete), and
    `metadata.json` records the vocabulary's
    SHA-256 and the shards' names, so that every shard is checked against
    the vocabulary it is read with.

    `progress`, if given, is called as `progress(files_done, files)` after
    each input file (a file is tokenized as a whole, so files are the unit
    of progress).

    Returns:
        A dict with the shard paths and document/sentence/token counts.

    Raises:
        CorpusError: bad arguments, an `output_dir` in use, no document in
            the corpus or a failed write; an interrupted or failed run
            leaves the folder as it was.
    """
    if corpus_format == "tfrecord" or corpus_format not in corpus_files.CORPUS_FORMATS:
        raise CorpusError(
            "`corpus_format` for writing shards must be 'sentences', 'text' "
            f"or 'lines'. Received: corpus_format={corpus_format!r}"
        )
    tokenizer = BertTokenizer(vocab_file, lower_case=lower_case)
    files = corpus_files.list_files(file_pattern, corpus_format)
    _check_output_dir(output_dir, num_shards, overwrite)
    # Files tokenized in parallel and written in order, each as a whole.
    file_documents = tf.data.Dataset.from_tensor_slices(files).map(
        tf.autograph.experimental.do_not_convert(
            lambda f: corpus.read_documents(f, tokenizer, corpus_format, text_document)
        ),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    names = [f"part-{i:05d}-of-{num_shards:05d}.tfrecord" for i in range(num_shards)]
    staging = None
    try:  # Before the tokenizing pass, which the writers' loop drives.
        _remove_left_staging(output_dir)
        staging = _new_staging(output_dir)
        writers = [tf.io.TFRecordWriter(os.path.join(staging, name)) for name in names]
    except (tf.errors.OpError, OSError) as error:
        if staging is not None:
            _remove_staging(staging)
        raise CorpusError(
            f"`output_dir` cannot be written: {error}. Received: output_dir={output_dir!r}"
        ) from None
    counts = {"documents": 0, "sentences": 0, "tokens": 0}
    try:
        _write_documents(file_documents, writers, counts, progress)
        if not counts["documents"]:
            raise CorpusError(
                f"No document in {len(files)} corpus file(s) matching "
                f"{file_pattern!r}: their text tokenizes to nothing (only "
                "control or zero-width characters?)."
            )
        metadata = {
            # A path with a scheme (gs://) is absolute already.
            "vocab_file": (
                vocab_file if "://" in os.fspath(vocab_file) else os.path.abspath(vocab_file)
            ),
            "vocab_sha256": _vocab_sha256(vocab_file),
            "vocab_size": tokenizer.vocab_size,
            "lower_case": tokenizer.lower_case,
            "corpus_format": corpus_format,
            "input_files": len(files),
            "shards": names,
            **counts,
        }
        with tf.io.gfile.GFile(os.path.join(staging, TFRECORD_METADATA), "w") as f:
            json.dump(metadata, f, indent=2)
        _move_into_place(staging, output_dir, names)
    except BaseException as error:
        # Interrupted, full disk or no documents: the folder is left as it
        # was, with no new shard in it.
        _remove_staging(staging)
        if isinstance(error, (OSError, tf.errors.OpError)):
            raise CorpusError(
                f"Writing shards in {output_dir!r} failed, none kept: "
                f"{getattr(error, 'strerror', None) or error}"
            ) from None
        raise
    return {"shards": [os.path.join(output_dir, name) for name in names], **counts}


def _move_into_place(staging, output_dir, names):
    """Replaces an earlier run's shards (under --overwrite) with the
    complete ones in `staging`. `metadata.json` goes first and comes back
    last: in between the folder reads as unfinished, which readers refuse,
    never as a mix of two runs."""
    metadata = os.path.join(output_dir, TFRECORD_METADATA)
    if tf.io.gfile.exists(metadata):
        tf.io.gfile.remove(metadata)
    for name in tf.io.gfile.listdir(output_dir):
        if _is_shard(name):
            tf.io.gfile.remove(os.path.join(output_dir, name))
    for name in names:
        tf.io.gfile.rename(os.path.join(staging, name), os.path.join(output_dir, name))
    tf.io.gfile.rename(os.path.join(staging, TFRECORD_METADATA), metadata)
    _remove_staging(staging)


# `keras_bert.file_io.remove` and `atomic_directory` sit a floor above
# `pipelines`; the folder must stay (it may hold an earlier run's shards),
# so only the staging inside it is created and removed here.


def _new_staging(output_dir):
    """A new, empty staging folder in `output_dir` (made if missing)."""
    if "://" in os.fspath(output_dir):
        staging = os.path.join(output_dir, f"{STAGING}-{uuid.uuid4().hex}")
        tf.io.gfile.makedirs(staging)
        return staging
    # `mkdtemp` never takes an existing name, and its folder is private
    # (0700) while it exists; the shards moved out of it keep the umask's
    # mode. `os.makedirs`: TensorFlow makes local folders 0755 whatever
    # the umask says.
    os.makedirs(output_dir, exist_ok=True)
    return tempfile.mkdtemp(prefix=f"{STAGING}-", dir=output_dir)


def _remove_left_staging(output_dir):
    """Removes the staging folders a killed run left in `output_dir`."""
    if tf.io.gfile.isdir(output_dir):
        for name in tf.io.gfile.listdir(output_dir):
            if _is_staging(name.rstrip("/")):
                _remove_staging(os.path.join(output_dir, name.rstrip("/")))


def _remove_staging(staging):
    """Removes `staging`; a link there is unlinked, never followed
    (TensorFlow's `rmtree` would empty the folder it points to)."""
    if "://" in os.fspath(staging):
        if tf.io.gfile.exists(staging):
            tf.io.gfile.rmtree(staging)
    elif os.path.islink(staging) or os.path.isfile(staging):
        os.unlink(staging)
    elif os.path.isdir(staging):
        shutil.rmtree(staging)


def _write_documents(file_documents, writers, counts, progress):
    """Deals the documents of each file of `file_documents` (ragged
    `[D, S, T]` a file) round-robin over `writers` as `tf.train.Example`s,
    adding to `counts`; closes the writers."""
    num_shards = len(writers)
    files = int(file_documents.cardinality())
    try:
        for done, documents in enumerate(file_documents, 1):
            sentence_splits, token_splits = (s.numpy() for s in documents.nested_row_splits)
            tokens = documents.flat_values.numpy()
            for first, end in zip(sentence_splits[:-1], sentence_splits[1:]):
                lengths = np.diff(token_splits[first : end + 1])
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "token_ids": tf.train.Feature(
                                int64_list=tf.train.Int64List(
                                    value=tokens[token_splits[first] : token_splits[end]]
                                )
                            ),
                            "sentence_lengths": tf.train.Feature(
                                int64_list=tf.train.Int64List(value=lengths)
                            ),
                        }
                    )
                )
                writers[counts["documents"] % num_shards].write(example.SerializeToString())
                counts["documents"] += 1
                counts["sentences"] += len(lengths)
                counts["tokens"] += int(lengths.sum())
            if progress:
                progress(done, files)
    finally:
        for w in writers:
            w.close()


def check_tfrecord_vocabulary(files, vocab_file):
    """Raises `CorpusError` unless every shard in `files` is listed in the
    `metadata.json` beside it with `vocab_file`'s SHA-256."""
    expected = _vocab_sha256(vocab_file)
    metadata = {}
    for directory in sorted({os.path.dirname(f) for f in files}):
        path = os.path.join(directory, TFRECORD_METADATA)
        if tf.io.gfile.exists(path):
            with tf.io.gfile.GFile(path) as f:
                metadata[directory] = json.load(f)
    for file in files:
        meta = metadata.get(os.path.dirname(file))
        if meta is None:
            raise CorpusError(
                f"TFRecord shard {file!r} has no {TFRECORD_METADATA} beside "
                "it, so its vocabulary is unknown; write shards with "
                "`python -m keras_bert.data`."
            )
        if os.path.basename(file) not in meta.get("shards", ()):
            raise CorpusError(
                f"TFRecord shard {file!r} is not one of the shards its "
                f"{TFRECORD_METADATA} lists (left by another run?); rewrite "
                "the shards into an empty `--output`."
            )
        if meta.get("vocab_sha256") != expected:
            raise CorpusError(
                f"TFRecord shard {file!r} was written with vocabulary "
                f"{meta.get('vocab_file')!r}, not {vocab_file!r} (SHA-256 "
                "differs); rewrite it with `python -m keras_bert.data`."
            )
