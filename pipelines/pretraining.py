"""The BERT pre-training dataset: files -> masked, packed NSP batches.

    files --(shard by input pipeline, shuffle, interleave)--> documents
          [pack_documents: --(cut into pieces of <= PACK_PIECE_TOKENS, ends
            marked by [SEP], shuffle, cut every seq_len - 1 tokens)-->
            full sequences, instead of:]
          --(cut into pieces of ~PIECE_SEQUENCES sequences, each tagged
            with its document's id; corpus-wide shuffle)--> pieces
          --(group)--> next-sentence pairs (create_pairs)
          --(permute in group, unbatch, shuffle)--> packed sequences
          --(mask_batch on blocks of 1024, fresh every epoch, rebatch)-->
          (features, labels, weights) batches

The original shuffles all instances of a shard, so a batch mixes many
documents. Streaming whole books cannot: pairs made from a group of books
come out together. Cutting documents into pieces at sentence boundaries and
shuffling the pieces in a buffer of ~PIECE_SHUFFLE_TOKENS tokens (the whole
bundled corpus) gives batches as mixed as a global shuffle while memory
stays bounded. A piece boundary ends a chunk early, as a document end does,
for ~1 sequence in PIECE_SEQUENCES.

Everything after the file names runs as TensorFlow ops inside tf.data (no
Python generator, no `tf.py_function`), so the same dataset feeds CPUs, GPUs,
TPUs and every Keras backend. Each random stage takes its stateless seed
from a `tf.data.Dataset.random(seed)` stream zipped in after `repeat`, so a
given `seed` gives the same batches and every epoch gets new pairs and masks.
"""

import logging

import tensorflow as tf

from pipelines import corpus, corpus_files, shards
from pipelines.bert_tokenizer import BertTokenizer
from pipelines.limits import MIN_SEQ_LEN
from pipelines.masking import mask_batch
from pipelines.next_sentence import create_pairs

logger = logging.getLogger(__name__)

# Pieces per pair-construction call; NotNext segments come from the pieces
# of other documents in the group.
PIECES_PER_GROUP = 16
# A piece is ~PIECE_SEQUENCES packed sequences of text (cut at a sentence).
PIECE_SEQUENCES = 16
# Tokens held by the piece shuffle buffer (16 MB of int32 ids).
PIECE_SHUFFLE_TOKENS = 1 << 22
# Pairs are first permuted inside their group (cheap, in the graph), then
# mixed across groups by this element buffer (a larger one costs tf.data
# time on every pair; BENCHMARKS.md#input-pipeline measures the pipeline).
PAIR_SHUFFLE_BUFFER = 1024
MASK_BLOCK = 1024
# `pack_documents`: documents cut into pieces of at most PACK_PIECE_TOKENS
# tokens, shuffled in a buffer of DOCUMENT_SHUFFLE_BUFFER pieces (at most
# PIECE_SHUFFLE_TOKENS tokens), then packed PACK_BLOCK_PIECES at a time
# (only a block's last sequence holds padding).
DOCUMENT_SHUFFLE_BUFFER = 1 << 14
PACK_PIECE_TOKENS = PIECE_SHUFFLE_TOKENS // DOCUMENT_SHUFFLE_BUFFER
PACK_BLOCK_PIECES = 1024
# Autograph is off for every pipeline function: they use explicit
# tf.cond/tf.while_loop, and converting them costs seconds per dataset.
no_autograph = tf.autograph.experimental.do_not_convert


def _check(condition, message):
    if not condition:
        raise ValueError(message)


def _seed_stream(seed, salt):
    """Infinite stream of `[2]` int64 stateless seeds."""
    stream_seed = None if seed is None else seed * 1000 + salt
    return tf.data.Dataset.random(seed=stream_seed).batch(2)


def _sub_seed(seed, salt):
    return None if seed is None else seed * 1000 + salt


def _cut_into_pieces(document, piece_tokens):
    """A document `[S, T]` -> `(doc_ids [P], pieces [P, S', T])`.

    Sentence i goes to piece `floor(tokens before i / piece_tokens)`, numbered
    without gaps. Every piece carries the document's id, a hash of its
    length and first tokens, so pieces of one document (or of two copies of
    it) are recognised as one document by `create_pairs`.
    """
    starts = tf.cumsum(document.row_lengths(), exclusive=True)
    bucket = starts // piece_tokens  # [S]
    new_piece = tf.cast(bucket[1:] != bucket[:-1], tf.int64)
    piece_of_sentence = tf.cumsum(tf.concat([[0], new_piece], axis=0))
    pieces = tf.RaggedTensor.from_value_rowids(document, piece_of_sentence)
    tokens = document.flat_values
    fingerprint = tf.strings.reduce_join(
        tf.strings.as_string(
            tf.concat([tf.shape(tokens, out_type=tf.int32), tokens[:256]], axis=0)
        ),
        separator=" ",
    )
    doc_id = tf.strings.to_hash_bucket_fast(fingerprint, 1 << 62)
    return tf.fill([pieces.nrows()], doc_id), pieces


def _next_sentence_pairs(
    documents, tokenizer, *, seq_len, short_seq_prob, next_sentence_rate, shuffle, seed
):
    """Documents -> `[CLS] A [SEP] B [SEP]` pairs, one element each, as the
    original builds them (see the module docstring for the pieces)."""
    piece_tokens = PIECE_SEQUENCES * seq_len
    pieces = documents.map(
        lambda document: _cut_into_pieces(document, piece_tokens),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    ).unbatch()
    if shuffle:
        pieces = pieces.shuffle(PIECE_SHUFFLE_TOKENS // piece_tokens, seed=_sub_seed(seed, 2))
    groups = pieces.ragged_batch(PIECES_PER_GROUP)

    def make_pairs(group, pair_seed):
        doc_ids, group = group
        pairs = create_pairs(
            group,
            pair_seed,
            seq_len=seq_len,
            short_seq_prob=short_seq_prob,
            cls_id=tokenizer.cls_id,
            sep_id=tokenizer.sep_id,
            pad_id=tokenizer.pad_id,
            doc_ids=doc_ids,
            next_sentence_rate=next_sentence_rate,
        )
        if not shuffle:
            return pairs
        order = tf.argsort(
            tf.random.stateless_uniform(
                tf.shape(pairs["next_sentence_label"]),
                tf.random.experimental.stateless_fold_in(pair_seed, 99),
            )
        )
        return {k: tf.gather(v, order) for k, v in pairs.items()}

    pairs = tf.data.Dataset.zip((groups, _seed_stream(seed, 3))).map(
        no_autograph(make_pairs), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return pairs.unbatch()


def _packed_sequences(documents, tokenizer, *, seq_len, shuffle, seed):
    """Documents -> full sequences `[CLS] d1 [SEP] d2 [SEP] d3 ...`.

    RoBERTa's FULL-SENTENCES input (Liu et al. 2019, section 4.2) for a
    corpus of short documents (reviews, tickets, queries), where one padded
    document per sequence would leave most positions empty. Each document
    is cut into pieces of at most PACK_PIECE_TOKENS tokens, each ended by
    `[SEP]` (a piece of a long document is packed like a document of its
    own); the pieces of a block of PACK_BLOCK_PIECES, in order, are cut
    every `seq_len - 1` tokens after a `[CLS]`, so a piece may go on in the
    next sequence and only the block's last sequence is padded. One
    segment, no next-sentence label (the task is off). Every buffer holds
    pieces, so memory and the work before the first batch are bounded in
    tokens whatever the documents' length (one 1.7 MB line once filled a
    buffer of 1,024 copies of itself).
    """
    piece_width = PACK_PIECE_TOKENS - 1

    def cut(document):
        tokens = document.flat_values
        pieces = tf.RaggedTensor.from_value_rowids(
            tokens, tf.range(tf.size(tokens, out_type=tf.int64), dtype=tf.int64) // piece_width
        )  # (P, <= PACK_PIECE_TOKENS - 1)
        sep = tf.fill([pieces.nrows(), 1], tokenizer.sep_id)
        return tf.concat([pieces, sep], axis=1)

    pieces = documents.map(
        no_autograph(cut), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    ).unbatch()
    if shuffle:
        pieces = pieces.shuffle(DOCUMENT_SHUFFLE_BUFFER, seed=_sub_seed(seed, 6))
    blocks = pieces.ragged_batch(PACK_BLOCK_PIECES)
    width = seq_len - 1

    def pack(block):
        tokens = block.flat_values
        rows = (tf.size(tokens) + width - 1) // width
        tokens = tf.pad(
            tokens, [[0, rows * width - tf.size(tokens)]], constant_values=tokenizer.pad_id
        )
        token_ids = tf.concat(
            [tf.fill([rows, 1], tokenizer.cls_id), tf.reshape(tokens, [rows, width])], axis=1
        )  # (R, T)
        return {
            "token_ids": token_ids,
            "segment_ids": tf.zeros_like(token_ids),
            "next_sentence_label": tf.zeros([rows], tf.int32),
        }

    return blocks.map(
        no_autograph(pack), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    ).unbatch()


def corpus_token_counts(
    file_pattern,
    vocab_file,
    *,
    max_tokens,
    corpus_format="sentences",
    lower_case=True,
    seed=None,
    shuffle=True,
    text_document="file",
):
    """float32 `(V,)`: how often each vocabulary id occurs among the first
    `max_tokens` tokens of a corpus's documents, the files in the order
    `pretraining_dataset` reads them with the same `seed` and `shuffle`.

    Counted from the tokenized documents, before the pieces and their
    shuffle buffer: `pretraining_dataset` fills that buffer (the whole
    bundled corpus) before its first batch, seconds that this count does
    not wait for.
    """
    tokenizer = BertTokenizer(vocab_file, lower_case=lower_case)
    documents = corpus.documents_dataset(
        corpus_files.list_files(file_pattern, corpus_format),
        tokenizer,
        corpus_format=corpus_format,
        text_document=text_document,
        shuffle=shuffle,
        seed=_sub_seed(seed, 1),
    )
    vocabulary_size = tokenizer.vocab_size
    # Each document's tokens with the number before them; `take_while`
    # reads no document past the one that reaches `max_tokens`.
    documents = documents.scan(
        0, lambda before, d: (before + tf.size(d.flat_values), (d.flat_values, before))
    ).take_while(lambda _, before: before < max_tokens)

    def count(counts, document):
        tokens, before = document
        return counts + tf.math.bincount(
            tokens[: max_tokens - before],
            minlength=vocabulary_size,
            maxlength=vocabulary_size,
            dtype=tf.float32,
        )

    return documents.reduce(tf.zeros([vocabulary_size]), count).numpy()


def pretraining_dataset(
    file_pattern,
    vocab_file,
    *,
    seq_len=128,
    max_predictions=20,
    batch_size=32,
    corpus_format="sentences",
    lower_case=True,
    mask_rate=0.15,
    short_seq_prob=0.1,
    whole_word_masking=False,
    next_sentence_rate=0.5,
    seed=None,
    shuffle=True,
    repeat=True,
    input_context=None,
    text_document="file",
    pack_documents=False,
):
    """Builds the BERT masked-LM + next-sentence pre-training dataset.

    Args:
        file_pattern: str or list of str, corpus files or globs.
        vocab_file: str, WordPiece vocabulary (validated).
        seq_len: int, packed sequence length T (128 or 512 in BERT).
        max_predictions: int P, masked positions per sequence (20 at 128,
            80 at 512).
        batch_size: int B, sequences per batch yielded by this dataset (per
            input pipeline; with `tf.distribute` pass the per-replica size).
        corpus_format: `"sentences"` (one sentence a line, blank line between
            documents), `"text"` (raw text, sentence-split in the graph; see
            `pipelines.corpus.split_sentences`), `"lines"` (one document
            per line) or `"tfrecord"` (shards from
            `python -m keras_bert.data`).
        lower_case: bool, uncased tokenization; must match the vocabulary.
        mask_rate: float, share of tokens predicted.
        short_seq_prob: float, chance a document targets a shorter length.
        whole_word_masking: bool, mask the `##` pieces of a word together.
        next_sentence_rate: float, share of NotNext pairs (0.5 in BERT; 0
            for contiguous text when next-sentence prediction is off).
        seed: int or None. With an int, the same batches every run.
        shuffle: bool, shuffle files, pieces and pairs.
        repeat: bool, repeat forever (new pairs and masks every epoch).
        input_context: `tf.distribute.InputContext` or None; files are
            sharded by `input_pipeline_id` (each pipeline needs >= 1 file).
        text_document: `"file"` or `"block"`, what a document is in the
            `"text"` format: a whole file or a blank-line-separated block.
        pack_documents: bool, fill every sequence with consecutive
            documents, each ended by `[SEP]` (RoBERTa's FULL-SENTENCES), for
            corpora of short documents such as `"lines"`; needs
            `next_sentence_rate=0`. Otherwise a sequence never crosses a
            document end.

    Returns:
        A `tf.data.Dataset` of `(features, labels, sample_weights)`:
        features `{"token_ids": int32 (B, T), "segment_ids": int32 (B, T),
        "padding_mask": bool (B, T), "mask_positions": int32 (B, P)}`,
        labels `{"mlm": int32 (B, P) original ids at mask_positions,
        "nsp": int32 (B,) 0 = IsNext, 1 = NotNext (as in the original BERT)}`,
        sample_weights `{"mlm": float32 (B, P), 1.0 for real predictions}`.
        Batches drop the remainder; all shapes are static.

    Raises:
        pipelines.VocabularyError: the vocabulary is missing or invalid.
        pipelines.CorpusError: no usable corpus file.
        ValueError: an argument out of range (the message echoes it).

    Example (building the pipeline takes seconds, so it is not run as a
    doctest):

        ds = pretraining_dataset("data/corpus/*/*.txt",
                                 "data/vocab/bert_uncased_vocab.txt",
                                 corpus_format="text", seed=0)
        features, labels, weights = next(iter(ds))
        features["token_ids"].shape  # (32, 128)
        labels["mlm"].shape  # (32, 20)
    """
    _check(
        isinstance(seq_len, int) and seq_len >= MIN_SEQ_LEN,
        f"`seq_len` must be an int >= {MIN_SEQ_LEN}. Received: seq_len={seq_len!r}",
    )
    _check(
        isinstance(max_predictions, int) and 1 <= max_predictions <= seq_len,
        "`max_predictions` must be an int in [1, seq_len]. Received: "
        f"max_predictions={max_predictions!r}, seq_len={seq_len}",
    )
    _check(
        isinstance(batch_size, int) and batch_size >= 1,
        f"`batch_size` must be an int >= 1. Received: batch_size={batch_size!r}",
    )
    _check(
        0.0 < mask_rate < 1.0, f"`mask_rate` must be in (0, 1). Received: mask_rate={mask_rate!r}"
    )
    _check(
        0.0 <= next_sentence_rate <= 1.0,
        "`next_sentence_rate` must be in [0, 1]. Received: "
        f"next_sentence_rate={next_sentence_rate!r}",
    )
    _check(
        0.0 <= short_seq_prob <= 1.0,
        f"`short_seq_prob` must be in [0, 1]. Received: short_seq_prob={short_seq_prob!r}",
    )
    _check(
        not pack_documents or next_sentence_rate == 0.0,
        "`pack_documents` fills sequences across documents, so it needs "
        "the next-sentence task off (`next_sentence_rate=0`). Received: "
        f"next_sentence_rate={next_sentence_rate!r}",
    )
    tokenizer = BertTokenizer(vocab_file, lower_case=lower_case)
    files = corpus_files.list_files(file_pattern, corpus_format)
    if corpus_format == "tfrecord":
        shards.check_tfrecord_vocabulary(files, tokenizer.vocab_file)
    # DEBUG: one line per dataset (each phase's training and held-out data).
    logger.debug(
        "Pre-training data: %d %s file(s) from %r.", len(files), corpus_format, file_pattern
    )

    documents = corpus.documents_dataset(
        files,
        tokenizer,
        corpus_format=corpus_format,
        text_document=text_document,
        shuffle=shuffle,
        seed=_sub_seed(seed, 1),
        repeat=repeat,
        input_context=input_context,
    )
    if pack_documents:
        pairs = _packed_sequences(documents, tokenizer, seq_len=seq_len, shuffle=shuffle, seed=seed)
    else:
        pairs = _next_sentence_pairs(
            documents,
            tokenizer,
            seq_len=seq_len,
            short_seq_prob=short_seq_prob,
            next_sentence_rate=next_sentence_rate,
            shuffle=shuffle,
            seed=seed,
        )
    if shuffle:
        pairs = pairs.shuffle(PAIR_SHUFFLE_BUFFER, seed=_sub_seed(seed, 4))
    # Masking runs on blocks of >= MASK_BLOCK sequences (whole batches), then
    # the blocks are cut into batches: per-sequence masks are independent, so
    # this is the same distribution, and it spreads the per-op cost of the
    # masking graph over more sequences, so more sequences per CPU-second
    # (BENCHMARKS.md#input-pipeline).
    block = batch_size * max(1, MASK_BLOCK // batch_size)
    batches = pairs.batch(block)

    special_ids = [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id]

    def mask(batch, mask_seed):
        token_ids, mask_positions, mask_ids, mask_weights = mask_batch(
            batch["token_ids"],
            mask_seed,
            max_predictions=max_predictions,
            mask_rate=mask_rate,
            mask_id=tokenizer.mask_id,
            pad_id=tokenizer.pad_id,
            special_ids=special_ids,
            random_token_ids=tokenizer.random_token_ids,
            is_suffix=tokenizer.is_suffix,
            whole_word_masking=whole_word_masking,
        )
        features = {
            "token_ids": token_ids,
            "segment_ids": batch["segment_ids"],
            "padding_mask": batch["token_ids"] != tokenizer.pad_id,
            "mask_positions": mask_positions,
        }
        labels = {"mlm": mask_ids, "nsp": batch["next_sentence_label"]}
        return features, labels, {"mlm": mask_weights}

    batches = tf.data.Dataset.zip((batches, _seed_stream(seed, 5))).map(
        no_autograph(mask), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    batches = batches.rebatch(batch_size, drop_remainder=True)
    options = tf.data.Options()
    options.deterministic = seed is not None
    return batches.with_options(options).prefetch(tf.data.AUTOTUNE)
