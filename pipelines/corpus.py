"""Corpus files -> tokenized documents.

Four formats, all ending in the same element: one document as a
`tf.RaggedTensor` int32 of shape `[sentences, tokens]`, every sentence with
at least one token (the original `create_pretraining_data.py` drops lines
that tokenize to nothing, and documents without sentences).

* `"sentences"`: the original BERT format. One sentence per line, a blank
  line (empty or whitespace only, after dropping invalid UTF-8) between
  documents.
* `"text"`: raw text, one document per file (`text_document="file"`) or per
  blank-line-separated block (`text_document="block"`). Sentences are split
  in the graph by `split_sentences` (rule documented there).
* `"lines"`: one short document per line (a review, a ticket, a query),
  split into sentences like `"text"`; blank lines are skipped.
* `"tfrecord"`: shards written by `write_tfrecord_shards`
  (`python -m keras_bert.data`), one `tf.train.Example` per document with
  int64 features `token_ids` (all tokens) and `sentence_lengths`.

Files are checked eagerly (`list_files`): a pattern that matches nothing is an
error naming the pattern; empty files are skipped with a warning that counts
and names them; if nothing is left, an error. A file of blank lines yields no
document, a one-sentence document yields pairs with a random next segment (as
in the original), invalid UTF-8 bytes are dropped (as the original's
`decode("utf-8", "ignore")`), and a 1 MB line without spaces is one [UNK].
"""

import glob
import hashlib
import json
import logging
import os
import unicodedata

import numpy as np
import tensorflow as tf

from pipelines.bert_tokenizer import drop_invalid_utf8
from pipelines.errors import CorpusError

logger = logging.getLogger(__name__)

CORPUS_FORMATS = ("sentences", "text", "lines", "tfrecord")
TEXT_DOCUMENTS = ("file", "block")
TFRECORD_METADATA = "metadata.json"

# Python's str.isspace() characters, which the original strips off each line
# before testing for a blank line (control characters among them included).
_PY_WHITESPACE = (
    r"[\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}"
    r"\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]")
_BLANK_LINE = _PY_WHITESPACE + "*"


def _expand(file_pattern):
    patterns = [file_pattern] if isinstance(file_pattern, (str, os.PathLike)) \
        else list(file_pattern)
    if not patterns:
        raise CorpusError("No file pattern given. Received: file_pattern=[]")
    files = []
    for pattern in patterns:
        pattern = os.fspath(pattern)
        matched = sorted(tf.io.gfile.glob(pattern)) if any(
            c in pattern for c in "*?[") else (
                [pattern] if tf.io.gfile.exists(pattern) else [])
        matched = [f for f in matched if not tf.io.gfile.isdir(f)]
        if not matched:
            raise CorpusError(
                f"No corpus file matches {pattern!r}. Received: "
                f"file_pattern={file_pattern!r}")
        files.extend(matched)
    # Keep the first occurrence of each file; order is the sorted glob order.
    return list(dict.fromkeys(files))


# Text files up to this size are read at start-up to spot blank ones.
_BLANK_CHECK_BYTES = 1 << 20


def _is_blank(path, corpus_format):
    """Whether a file is empty, or a small text file that tokenizes to
    nothing: whitespace and the characters BERT's tokenizer deletes
    (control and format characters such as zero-width spaces, U+FFFD)."""
    size = tf.io.gfile.stat(path).length
    if size == 0:
        return True
    if corpus_format == "tfrecord" or size > _BLANK_CHECK_BYTES:
        return False
    with tf.io.gfile.GFile(path, "rb") as f:
        text = f.read().decode("utf-8", "ignore")
    return all(c.isspace() or c == "\ufffd"
               or unicodedata.category(c) in ("Cc", "Cf") for c in text)


def _looks_binary(path):
    """A NUL byte in the first KiB: no text file has one, binaries do."""
    with tf.io.gfile.GFile(path, "rb") as f:
        return b"\x00" in f.read(1024)


def list_files(file_pattern, corpus_format="sentences"):
    """Expands globs into a sorted, validated list of corpus files.

    Args:
        file_pattern: str or list of str, file paths or globs.
        corpus_format: one of `CORPUS_FORMATS`.

    Returns:
        A list of file paths. Empty files, and text files of at most 1 MiB
        holding only whitespace, are left out with a warning that names them.
        (A larger blank file is read and yields no document.) A text file
        that looks binary is kept, with a warning that names it.

    Raises:
        CorpusError: a pattern matches no file, or every file is empty.
    """
    if corpus_format not in CORPUS_FORMATS:
        raise CorpusError(
            f"`corpus_format` must be one of {CORPUS_FORMATS}. Received: "
            f"corpus_format={corpus_format!r}")
    files = _expand(file_pattern)
    empty = [f for f in files if _is_blank(f, corpus_format)]
    if empty:
        logger.warning(
            "Skipping %d empty or blank corpus file(s): %s", len(empty),
            ", ".join(empty[:10]) + (" ..." if len(empty) > 10 else ""))
    files = [f for f in files if f not in set(empty)]
    if not files:
        raise CorpusError(
            f"Every corpus file matching {file_pattern!r} is empty or blank: "
            f"{', '.join(empty[:10])}")
    if corpus_format != "tfrecord":
        # Read anyway (its bytes become [UNK]s and stray pieces), but said.
        for f in filter(_looks_binary, files):
            logger.warning(
                "Corpus file %s looks binary (NUL bytes in its first KiB), "
                "not %s text; check --input.", f, corpus_format)
    return files


def split_files(file_pattern, holdout_fraction=0.05, *, seed=0,
                corpus_format="sentences"):
    """Splits corpus files into training and held-out files.

    Held-out data is taken at the file (document) level so that no held-out
    sentence is ever paired with a training one. A file's side is decided by
    a hash of its base name and `seed`, so the split is the same on every
    machine and does not move files when others are added.

    Args:
        file_pattern: str or list of str, globs.
        holdout_fraction: float in (0, 1), the share of files held out; at
            least one file is held out and at least one kept.
        seed: int, changes which files are held out.
        corpus_format: as in `list_files`.

    Returns:
        `(train_files, heldout_files)`, two lists of paths; pass either as
        `file_pattern` to `pretraining_dataset`.

    Example:

    >>> train, heldout = split_files("data/corpus/*/*.txt", 0.05)
    >>> ds = pretraining_dataset(train, vocab, corpus_format="text")
    """
    if not 0.0 < holdout_fraction < 1.0:
        raise ValueError(
            "`holdout_fraction` must be in (0, 1). Received: "
            f"holdout_fraction={holdout_fraction}")
    files = list_files(file_pattern, corpus_format)
    if len(files) < 2:
        raise CorpusError(
            f"Need at least 2 files to hold some out; {file_pattern!r} has "
            f"{len(files)}.")

    def key(path):
        name = f"{seed}:{os.path.basename(path)}".encode("utf-8")
        return hashlib.sha256(name).hexdigest(), path

    ranked = sorted(files, key=key)
    n_holdout = min(len(files) - 1, max(1, round(holdout_fraction * len(files))))
    heldout = set(ranked[:n_holdout])
    return ([f for f in files if f not in heldout],
            [f for f in files if f in heldout])


def strip_gutenberg_boilerplate(text):
    """Removes Project Gutenberg licence headers and footers from a book.

    Handles the old header that ends at a line containing
    `*END*THE SMALL PRINT!` (or `*END THE SMALL PRINT!`), the modern
    `*** START OF ... ***` / `*** END OF ... ***` markers and the
    `End of (the) Project Gutenberg ...` trailer line. Text without these
    markers is returned unchanged.
    """
    lines = text.split("\n")

    def find(predicate, lines_range):
        for i in lines_range:
            if predicate(lines[i]):
                return i
        return None

    start = 0
    small_print = find(lambda s: "END*THE SMALL PRINT!" in s
                       or "END THE SMALL PRINT!" in s, range(min(len(lines), 600)))
    start_marker = find(lambda s: s.startswith("*** START OF")
                        or s.startswith("***START OF"), range(min(len(lines), 600)))
    for marker in (small_print, start_marker):
        if marker is not None and marker + 1 > start:
            start = marker + 1
    end = len(lines)
    end_marker = find(
        lambda s: s.startswith("*** END OF") or s.startswith("***END OF")
        or s.lower().startswith("end of the project gutenberg")
        or s.lower().startswith("end of project gutenberg"),
        range(start, len(lines)))
    if end_marker is not None:
        end = end_marker
    return "\n".join(lines[start:end]).strip("\n") + "\n"


# === In-graph readers ===


def read_text_file(filename):
    """Reads a file as one tf.string, with `\\r\\n` turned into `\\n`."""
    content = tf.io.read_file(filename)
    return tf.strings.regex_replace(content, "\r\n", "\n")


def split_sentences(texts):
    """Splits raw texts into sentences, in the graph.

    The rule: a sentence ends at a blank line (paragraph break), or after
    `.`, `!` or `?` followed by any closing quotes or brackets and then
    whitespace. A period after a common title abbreviation (Mr, Mrs, Ms, Dr,
    St, Mt, Jr, Sr, Prof, Rev, Gen, Col, Capt, Lt, Sgt, Hon, Messrs, Mme,
    Mlle, No, vs; matched case-sensitively) does not end a sentence. Line
    breaks inside a paragraph are ordinary spaces. Empty sentences are
    dropped.

    Args:
        texts: tf.string `[N]`, one text per row.

    Returns:
        tf.string ragged `[N, sentences]`.
    """
    # A title's period keeps its sentence open: the following whitespace is
    # replaced by \x01, a control character that the tokenizer deletes (the
    # period itself is punctuation, so "Mr.\x01Smith" tokenizes as "Mr. Smith").
    texts = tf.strings.regex_replace(
        texts,
        r"\b(Mr|Mrs|Ms|Dr|St|Mt|Jr|Sr|Prof|Rev|Gen|Col|Capt|Lt|Sgt|Hon|"
        r"Messrs|Mme|Mlle|No|vs)\.[ \t]*\n?[ \t]*",
        "\\1.\x01")
    texts = tf.strings.regex_replace(texts, r"\n[ \t]*\n\s*", "\x00")
    texts = tf.strings.regex_replace(
        texts, "([.!?][\"'\u2019\u201d)\\]]*)\\s+", "\\1\x00")
    sentences = tf.strings.strip(tf.strings.split(texts, "\x00"))
    return tf.ragged.boolean_mask(sentences, tf.strings.length(sentences) > 0)


def _documents_from_sentences(tokens, doc_ids):
    """Groups tokenized sentences `[S, None]` by sorted `doc_ids` `[S]`.

    Sentences without tokens are dropped (the original skips them without
    starting a new document), then empty documents vanish.
    """
    keep = tokens.row_lengths() > 0
    tokens = tf.ragged.boolean_mask(tokens, keep)
    doc_ids = tf.boolean_mask(doc_ids, keep)
    # Renumber documents 0, 1, ... so that none is empty.
    is_new = tf.concat([tf.ones_like(doc_ids[:1], tf.bool),
                        doc_ids[1:] != doc_ids[:-1]], axis=0)
    compact = tf.cumsum(tf.cast(is_new, tf.int64)) - 1
    return tf.RaggedTensor.from_value_rowids(
        tokens, compact, nrows=tf.reduce_sum(tf.cast(is_new, tf.int64)))


def sentence_file_documents(filename, tokenizer):
    """Original format -> ragged int32 `[docs, sentences, tokens]`."""
    content = read_text_file(filename)
    lines = tf.strings.split(content, "\n")
    # Like the original, invalid UTF-8 is dropped before the blank-line test.
    lines = drop_invalid_utf8(lines)
    blank = tf.strings.regex_full_match(lines, _BLANK_LINE)
    doc_ids = tf.cumsum(tf.cast(blank, tf.int64))
    lines = tf.boolean_mask(lines, tf.logical_not(blank))
    doc_ids = tf.boolean_mask(doc_ids, tf.logical_not(blank))
    return _documents_from_sentences(tokenizer(lines), doc_ids)


def text_file_documents(filename, tokenizer, text_document="file"):
    """Raw text -> ragged int32 `[docs, sentences, tokens]`."""
    content = read_text_file(filename)
    if text_document == "block":
        blocks = tf.strings.split(
            tf.strings.regex_replace(content, r"\n[ \t]*\n\s*", "\x00"), "\x00")
    else:
        blocks = tf.reshape(content, [1])
    sentences = split_sentences(blocks)
    return _documents_from_sentences(
        tokenizer(sentences.flat_values), sentences.value_rowids())


def line_file_documents(filename, tokenizer):
    """One document per line -> ragged int32 `[docs, sentences, tokens]`."""
    lines = drop_invalid_utf8(tf.strings.split(read_text_file(filename), "\n"))
    lines = tf.boolean_mask(
        lines, tf.logical_not(tf.strings.regex_full_match(lines, _BLANK_LINE)))
    sentences = split_sentences(lines)
    return _documents_from_sentences(
        tokenizer(sentences.flat_values), sentences.value_rowids())


def tfrecord_documents(serialized):
    """One serialized Example -> ragged int32 `[sentences, tokens]`."""
    spec = {
        "document": tf.io.RaggedFeature(
            tf.int64, value_key="token_ids",
            partitions=[tf.io.RaggedFeature.RowLengths("sentence_lengths")],
            row_splits_dtype=tf.int64),
    }
    document = tf.io.parse_single_example(serialized, spec)["document"]
    return tf.cast(document, tf.int32)


# === Offline TFRecord shards ===


def _vocab_sha256(vocab_file):
    with tf.io.gfile.GFile(vocab_file, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _check_output_dir(output_dir, num_shards):
    """Refuses what would mix runs or fail only after tokenizing."""
    if isinstance(num_shards, bool) or not isinstance(num_shards, int) \
            or num_shards < 1:
        raise CorpusError(
            f"`num_shards` must be a positive integer. Received: "
            f"num_shards={num_shards!r}")
    if tf.io.gfile.exists(output_dir):
        if not tf.io.gfile.isdir(output_dir):
            raise CorpusError(
                f"`output_dir` is a file, not a folder. Received: "
                f"output_dir={output_dir!r}")
        # Shards of another run (maybe another vocabulary) would be read
        # together with these ones.
        held = tf.io.gfile.listdir(output_dir)
        if held and TFRECORD_METADATA not in held and any(
                name.endswith(".tfrecord") for name in held):
            raise CorpusError(
                f"`output_dir` holds shards but no {TFRECORD_METADATA} (left "
                "by a run that was stopped?); delete them or pick another "
                f"folder. Received: output_dir={output_dir!r}")
        if held:
            raise CorpusError(
                f"`output_dir` must be new or empty; it holds "
                f"{', '.join(sorted(tf.io.gfile.listdir(output_dir))[:5])}. "
                f"Received: output_dir={output_dir!r}")


def write_tfrecord_shards(file_pattern, output_dir, vocab_file, *,
                          corpus_format="sentences", lower_case=True,
                          num_shards=16, text_document="file", progress=None):
    """Tokenizes a corpus once into TFRecord shards of documents.

    Masking and pair construction stay dynamic: read the shards back with
    `pretraining_dataset(..., corpus_format="tfrecord")`. Documents are dealt
    round-robin over `num_shards` files `part-XXXXX-of-YYYYY.tfrecord` in a
    new or empty `output_dir`, and `metadata.json` records the vocabulary's
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
            leaves no shard behind.
    """
    from pipelines.bert_tokenizer import BertTokenizer

    if corpus_format == "tfrecord" or corpus_format not in CORPUS_FORMATS:
        raise CorpusError(
            "`corpus_format` for writing shards must be 'sentences', 'text' "
            f"or 'lines'. Received: corpus_format={corpus_format!r}")
    tokenizer = BertTokenizer(vocab_file, lower_case=lower_case)
    files = list_files(file_pattern, corpus_format)
    _check_output_dir(output_dir, num_shards)
    # Files tokenized in parallel and written in order, each as a whole.
    file_documents = tf.data.Dataset.from_tensor_slices(files).map(
        tf.autograph.experimental.do_not_convert(
            lambda f: _read_documents(f, tokenizer, corpus_format, text_document)),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    paths = [os.path.join(output_dir,
                          f"part-{i:05d}-of-{num_shards:05d}.tfrecord")
             for i in range(num_shards)]
    try:  # Before the tokenizing pass, which the writers' loop drives.
        tf.io.gfile.makedirs(output_dir)
        writers = [tf.io.TFRecordWriter(p) for p in paths]
    except (tf.errors.OpError, OSError) as error:
        raise CorpusError(
            f"`output_dir` cannot be written: {error}. Received: "
            f"output_dir={output_dir!r}") from None
    counts = {"documents": 0, "sentences": 0, "tokens": 0}
    metadata_path = os.path.join(output_dir, TFRECORD_METADATA)
    try:
        _write_documents(file_documents, writers, counts, progress)
        if not counts["documents"]:
            raise CorpusError(
                f"No document in {len(files)} corpus file(s) matching "
                f"{file_pattern!r}: their text tokenizes to nothing (only "
                "control or zero-width characters?).")
        metadata = {
            # A path with a scheme (gs://) is absolute already.
            "vocab_file": (vocab_file if "://" in os.fspath(vocab_file)
                           else os.path.abspath(vocab_file)),
            "vocab_sha256": _vocab_sha256(vocab_file),
            "vocab_size": tokenizer.vocab_size,
            "lower_case": tokenizer.lower_case,
            "corpus_format": corpus_format,
            "input_files": len(files),
            "shards": [os.path.basename(p) for p in paths],
            **counts,
        }
        # Written last and renamed into place: its presence marks the
        # shards as complete.
        with tf.io.gfile.GFile(metadata_path + ".partial", "w") as f:
            json.dump(metadata, f, indent=2)
        tf.io.gfile.rename(metadata_path + ".partial", metadata_path)
    except BaseException as error:
        # Interrupted, full disk or no documents: nothing is left behind
        # that looks like shards.
        for path in paths + [metadata_path + ".partial"]:
            if tf.io.gfile.exists(path):
                tf.io.gfile.remove(path)
        if isinstance(error, (OSError, tf.errors.OpError)):
            raise CorpusError(
                f"Writing shards in {output_dir!r} failed, none kept: "
                f"{getattr(error, 'strerror', None) or error}") from None
        raise
    return {"shards": paths, **counts}


def _write_documents(file_documents, writers, counts, progress):
    """Deals the documents of each file of `file_documents` (ragged
    `[D, S, T]` a file) round-robin over `writers` as `tf.train.Example`s,
    adding to `counts`; closes the writers."""
    num_shards = len(writers)
    files = int(file_documents.cardinality())
    try:
        for done, documents in enumerate(file_documents, 1):
            sentence_splits, token_splits = (
                s.numpy() for s in documents.nested_row_splits)
            tokens = documents.flat_values.numpy()
            for first, end in zip(sentence_splits[:-1], sentence_splits[1:]):
                lengths = np.diff(token_splits[first:end + 1])
                example = tf.train.Example(features=tf.train.Features(feature={
                    "token_ids": tf.train.Feature(int64_list=tf.train.Int64List(
                        value=tokens[token_splits[first]:token_splits[end]])),
                    "sentence_lengths": tf.train.Feature(
                        int64_list=tf.train.Int64List(value=lengths)),
                }))
                writers[counts["documents"] % num_shards].write(
                    example.SerializeToString())
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
                "`python -m keras_bert.data`.")
        if os.path.basename(file) not in meta.get("shards", ()):
            raise CorpusError(
                f"TFRecord shard {file!r} is not one of the shards its "
                f"{TFRECORD_METADATA} lists (left by another run?); rewrite "
                "the shards into an empty `--output_dir`.")
        if meta.get("vocab_sha256") != expected:
            raise CorpusError(
                f"TFRecord shard {file!r} was written with vocabulary "
                f"{meta.get('vocab_file')!r}, not {vocab_file!r} (SHA-256 "
                "differs); rewrite it with `python -m keras_bert.data`.")


# === Documents dataset ===


def documents_dataset(files, tokenizer, *, corpus_format="sentences",
                      text_document="file", shuffle=True, seed=None,
                      repeat=False, input_context=None, cycle_length=4):
    """Files -> `tf.data.Dataset` of documents, ragged int32 `[S, T]`.

    Files are sharded by `input_context.input_pipeline_id` (file level, so
    workers never read the same document), shuffled each epoch, read
    `cycle_length` at a time with a deterministic parallel interleave.
    """
    files = list(files)
    if text_document not in TEXT_DOCUMENTS:
        raise CorpusError(
            f"`text_document` must be one of {TEXT_DOCUMENTS}. Received: "
            f"text_document={text_document!r}")
    ds = tf.data.Dataset.from_tensor_slices(files)
    if input_context is not None and input_context.num_input_pipelines > 1:
        if len(files) < input_context.num_input_pipelines:
            raise CorpusError(
                f"{len(files)} corpus file(s) cannot be sharded over "
                f"{input_context.num_input_pipelines} input pipelines; split "
                "the corpus into more files (e.g. `python -m keras_bert.data "
                "--num_shards N`).")
        ds = ds.shard(input_context.num_input_pipelines,
                      input_context.input_pipeline_id)
    if shuffle:
        ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)

    # Autograph is off for every pipeline function: they use explicit
    # tf.cond/tf.while_loop, and converting them costs seconds per dataset.
    no_autograph = tf.autograph.experimental.do_not_convert
    if corpus_format == "tfrecord":
        def read_dataset(filename):
            return tf.data.TFRecordDataset(filename).map(
                no_autograph(tfrecord_documents))
    else:
        def read_dataset(filename):
            return tf.data.Dataset.from_tensors(_read_documents(
                filename, tokenizer, corpus_format, text_document)).unbatch()
    ds = ds.interleave(
        no_autograph(read_dataset), cycle_length=cycle_length,
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if not repeat:
        return ds
    # Repeated after reading, not before: tf.data then ends a repeat whose
    # first epoch yields no document (text that tokenizes to nothing)
    # instead of cycling through the files forever. Reaching that end is an
    # error, raised by the element after it.
    error = tf.data.Dataset.from_tensors(0).map(no_autograph(
        lambda _: _raise_no_document(ds.element_spec.row_splits_dtype)))
    return ds.repeat().concatenate(error)


# The error `documents_dataset` raises when its files yield nothing.
NO_DOCUMENT = ("the corpus files yield no document; their text tokenizes to "
               "nothing (only blanks, control or zero-width characters?)")


def _raise_no_document(row_splits_dtype):
    failed = tf.debugging.Assert(False, [NO_DOCUMENT])
    with tf.control_dependencies([failed]):
        return tf.RaggedTensor.from_row_splits(
            tf.zeros([0], tf.int32), tf.zeros([1], row_splits_dtype))


def _read_documents(filename, tokenizer, corpus_format, text_document):
    """The documents of one text file, ragged `[D, S, T]`."""
    if corpus_format == "sentences":
        return sentence_file_documents(filename, tokenizer)
    if corpus_format == "lines":
        return line_file_documents(filename, tokenizer)
    return text_file_documents(filename, tokenizer, text_document)
