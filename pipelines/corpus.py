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
* `"tfrecord"`: shards written by `shards.write_tfrecord_shards`
  (`python -m keras_bert.data`), one `tf.train.Example` per document with
  int64 features `token_ids` (all tokens) and `sentence_lengths`.

The files come checked from `pipelines.corpus_files` (`list_files`,
`split_files`). A file of blank lines yields no document, a one-sentence document yields pairs with a random next segment (as
in the original), invalid UTF-8 bytes are dropped (as the original's
`decode("utf-8", "ignore")`; `list_files` refuses a file that holds any),
and a 1 MB line without spaces is one [UNK].
"""

import tensorflow as tf

from pipelines.bert_tokenizer import drop_invalid_utf8
from pipelines.corpus_files import FileRange
from pipelines.errors import CorpusError

TEXT_DOCUMENTS = ("file", "block")

# Python's str.isspace() characters, which the original strips off each line
# before testing for a blank line (control characters among them included).
_PY_WHITESPACE = (
    r"[\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}"
    r"\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]"
)
_BLANK_LINE = _PY_WHITESPACE + "*"


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
    small_print = find(
        lambda s: "END*THE SMALL PRINT!" in s or "END THE SMALL PRINT!" in s,
        range(min(len(lines), 600)),
    )
    start_marker = find(
        lambda s: s.startswith("*** START OF") or s.startswith("***START OF"),
        range(min(len(lines), 600)),
    )
    for marker in (small_print, start_marker):
        if marker is not None and marker + 1 > start:
            start = marker + 1
    end = len(lines)
    end_marker = find(
        lambda s: (
            s.startswith("*** END OF")
            or s.startswith("***END OF")
            or s.lower().startswith("end of the project gutenberg")
            or s.lower().startswith("end of project gutenberg")
        ),
        range(start, len(lines)),
    )
    if end_marker is not None:
        end = end_marker
    return "\n".join(lines[start:end]).strip("\n") + "\n"


# === In-graph readers ===


def read_text_file(filename, start=0, end=-1):
    """Reads a file as one tf.string, with `\\r\\n` turned into `\\n`:
    bytes `[start, end)` of it, all of it where `end` is -1."""
    content = tf.io.read_file(filename)
    start, end = tf.cast(start, tf.int64), tf.cast(end, tf.int64)
    end = tf.where(end < 0, tf.cast(tf.strings.length(content), tf.int64), end)
    content = tf.strings.substr(content, start, end - start)
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
        "\\1.\x01",
    )
    texts = tf.strings.regex_replace(texts, r"\n[ \t]*\n\s*", "\x00")
    texts = tf.strings.regex_replace(texts, "([.!?][\"'\u2019\u201d)\\]]*)\\s+", "\\1\x00")
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
    is_new = tf.concat([tf.ones_like(doc_ids[:1], tf.bool), doc_ids[1:] != doc_ids[:-1]], axis=0)
    compact = tf.cumsum(tf.cast(is_new, tf.int64)) - 1
    return tf.RaggedTensor.from_value_rowids(
        tokens, compact, nrows=tf.reduce_sum(tf.cast(is_new, tf.int64))
    )


def sentence_file_documents(content, tokenizer):
    """Original format (a file's text) -> ragged int32 `[docs, sentences, tokens]`."""
    lines = tf.strings.split(content, "\n")
    # Like the original, invalid UTF-8 is dropped before the blank-line test.
    lines = drop_invalid_utf8(lines)
    blank = tf.strings.regex_full_match(lines, _BLANK_LINE)
    doc_ids = tf.cumsum(tf.cast(blank, tf.int64))
    lines = tf.boolean_mask(lines, tf.logical_not(blank))
    doc_ids = tf.boolean_mask(doc_ids, tf.logical_not(blank))
    return _documents_from_sentences(tokenizer(lines), doc_ids)


def text_file_documents(content, tokenizer, text_document="file"):
    """Raw text (a file's) -> ragged int32 `[docs, sentences, tokens]`."""
    if text_document == "block":
        blocks = tf.strings.split(
            tf.strings.regex_replace(content, r"\n[ \t]*\n\s*", "\x00"), "\x00"
        )
    else:
        blocks = tf.reshape(content, [1])
    sentences = split_sentences(blocks)
    return _documents_from_sentences(tokenizer(sentences.flat_values), sentences.value_rowids())


def line_file_documents(content, tokenizer):
    """One document per line (a file's text) -> ragged int32 `[docs, sentences, tokens]`."""
    lines = drop_invalid_utf8(tf.strings.split(content, "\n"))
    lines = tf.boolean_mask(lines, tf.logical_not(tf.strings.regex_full_match(lines, _BLANK_LINE)))
    sentences = split_sentences(lines)
    return _documents_from_sentences(tokenizer(sentences.flat_values), sentences.value_rowids())


def tfrecord_documents(serialized):
    """One serialized Example -> ragged int32 `[sentences, tokens]`."""
    spec = {
        "document": tf.io.RaggedFeature(
            tf.int64,
            value_key="token_ids",
            partitions=[tf.io.RaggedFeature.RowLengths("sentence_lengths")],
            row_splits_dtype=tf.int64,
        ),
    }
    document = tf.io.parse_single_example(serialized, spec)["document"]
    return tf.cast(document, tf.int32)


# === Documents dataset ===


def documents_dataset(
    files,
    tokenizer,
    *,
    corpus_format="sentences",
    text_document="file",
    shuffle=True,
    seed=None,
    repeat=False,
    input_context=None,
    cycle_length=4,
):
    """Files -> `tf.data.Dataset` of documents, ragged int32 `[S, T]`.

    Files are sharded by `input_context.input_pipeline_id` (file level, so
    workers never read the same document), shuffled each epoch, read
    `cycle_length` at a time with a deterministic parallel interleave.
    """
    files = list(files)
    if text_document not in TEXT_DOCUMENTS:
        raise CorpusError(
            f"`text_document` must be one of {TEXT_DOCUMENTS}. Received: "
            f"text_document={text_document!r}"
        )
    ranges = [f if isinstance(f, FileRange) else FileRange(f, 0, -1) for f in files]
    paths, starts, ends = zip(*ranges)
    ds = tf.data.Dataset.from_tensor_slices(
        (list(paths), tf.constant(starts, tf.int64), tf.constant(ends, tf.int64))
    )
    if input_context is not None and input_context.num_input_pipelines > 1:
        if len(files) < input_context.num_input_pipelines:
            raise CorpusError(
                f"{len(files)} corpus file(s) cannot be sharded over "
                f"{input_context.num_input_pipelines} input pipelines; split "
                "the corpus into more files (e.g. `python -m keras_bert.data "
                "--num_shards N`)."
            )
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if shuffle:
        ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)

    # Autograph is off for every pipeline function: they use explicit
    # tf.cond/tf.while_loop, and converting them costs seconds per dataset.
    no_autograph = tf.autograph.experimental.do_not_convert
    if corpus_format == "tfrecord":

        def read_dataset(filename, start, end):
            records = tf.data.TFRecordDataset(filename).skip(start).take(end - start)
            return records.map(no_autograph(tfrecord_documents))
    else:

        def read_dataset(filename, start, end):
            return tf.data.Dataset.from_tensors(
                read_documents(filename, tokenizer, corpus_format, text_document, start, end)
            ).unbatch()

    ds = ds.interleave(
        no_autograph(read_dataset),
        cycle_length=cycle_length,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if not repeat:
        return ds
    # Repeated after reading, not before: tf.data then ends a repeat whose
    # first epoch yields no document (text that tokenizes to nothing)
    # instead of cycling through the files forever. Reaching that end is an
    # error, raised by the element after it.
    error = tf.data.Dataset.from_tensors(0).map(
        no_autograph(lambda _: _raise_no_document(ds.element_spec.row_splits_dtype))
    )
    return ds.repeat().concatenate(error)


# The error `documents_dataset` raises when its files yield nothing.
NO_DOCUMENT = (
    "the corpus files yield no document; their text tokenizes to "
    "nothing (only blanks, control or zero-width characters?)"
)


def _raise_no_document(row_splits_dtype):
    failed = tf.debugging.Assert(False, [NO_DOCUMENT])
    with tf.control_dependencies([failed]):
        return tf.RaggedTensor.from_row_splits(
            tf.zeros([0], tf.int32), tf.zeros([1], row_splits_dtype)
        )


def read_documents(filename, tokenizer, corpus_format, text_document, start=0, end=-1):
    """The documents of one text file (of its bytes `[start, end)`), ragged
    `[D, S, T]`."""
    content = read_text_file(filename, start, end)
    if corpus_format == "sentences":
        return sentence_file_documents(content, tokenizer)
    if corpus_format == "lines":
        return line_file_documents(content, tokenizer)
    return text_file_documents(content, tokenizer, text_document)
