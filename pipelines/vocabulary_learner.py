"""Learning a WordPiece vocabulary from a corpus (`python -m keras_bert.vocab`).

Words are split exactly as `BertTokenizer` splits them, so the vocabulary
fits the tokenizer it will be used with; tensorflow-text's WordPiece learner
picks the pieces. `vocabulary.py` reads and writes the files.
"""

import collections
import logging

import tensorflow as tf

from pipelines import corpus, corpus_files
from pipelines.bert_tokenizer import basic_split
from pipelines.errors import VocabularyError
from pipelines.vocabulary import (
    MIN_VOCAB_SIZE,
    SPECIAL_TOKENS,
    SUFFIX_INDICATOR,
)

logger = logging.getLogger(__name__)


def learn_vocabulary(
    file_pattern,
    vocab_size=30522,
    *,
    lower_case=True,
    corpus_format="text",
    max_word_chars=50,
    max_unique_chars=1000,
    min_count=10,
    progress=None,
):
    """Learns a WordPiece vocabulary from text files.

    Words are produced by `BertTokenizer`'s own normalisation and splitting
    (so the vocabulary fits the tokenizer it will be used with), counted,
    and handed to tensorflow-text's WordPiece learner
    (`wordpiece_tokenizer_learner_lib.learn`, a threshold search over
    candidate pieces). The reserved tokens `[PAD] [UNK] [CLS] [SEP] [MASK]`
    take ids 0-4.

    Args:
        file_pattern: str or list of str, globs of UTF-8 text files. Line and
            document structure do not matter here.
        vocab_size: int, the maximum size of the vocabulary, special tokens
            included (the learner accepts sizes down to 5% below it); at
            least `MIN_VOCAB_SIZE`. A small size also shrinks the alphabet
            (see `max_unique_chars`).
        lower_case: bool, lower-case and strip accents (uncased model).
        corpus_format: "sentences" or "text"; only used to validate files.
        max_word_chars: int, longer words are not counted.
        max_unique_chars: int, size of the single-character alphabet; at
            most half of what `vocab_size` leaves after the special tokens
            (each character comes with and without `##`).
        min_count: int, the lowest piece frequency the learner's threshold
            search may go down to. A small corpus may yield fewer than
            `vocab_size` tokens (the bundled 7.6 MB corpus gives ~10.6k for
            30522); lower it to get closer.
        progress: None or a callable `progress(bytes_done, bytes)`, called
            as the words are counted (the learner's search after that
            reports nothing).

    Returns:
        A list of at most `vocab_size` tokens.

    Raises:
        VocabularyError: `vocab_size` is too small.
        CorpusError: no usable corpus file.
    """
    if (
        isinstance(vocab_size, bool)
        or not isinstance(vocab_size, int)
        or vocab_size < MIN_VOCAB_SIZE
    ):
        raise VocabularyError(
            f"`vocab_size` must be an int >= {MIN_VOCAB_SIZE} (the special "
            f"tokens {' '.join(SPECIAL_TOKENS)} and a few characters). "
            f"Received: vocab_size={vocab_size!r}"
        )
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    files = corpus_files.list_files(file_pattern, corpus_format=corpus_format)
    no_autograph = tf.autograph.experimental.do_not_convert
    lines = (
        tf.data.Dataset.from_tensor_slices(files)
        .map(no_autograph(lambda f: tf.strings.split(corpus.read_text_file(f), "\n")))
        .unbatch()
    )
    lines = lines.batch(4096).map(
        no_autograph(
            lambda x: (
                basic_split(x, lower_case=lower_case).flat_values,
                # The lines' bytes with their newlines.
                tf.reduce_sum(tf.strings.length(x) + 1),
            )
        ),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    total_bytes = sum(tf.io.gfile.stat(f).length for f in files) if progress else None
    counts, bytes_done = collections.Counter(), 0
    for words, size in lines.as_numpy_iterator():
        counts.update(words.tolist())
        if progress:
            # Counted from the decoded lines, so off by a byte per file (its
            # last line has no newline) or per `\r\n`: clipped here,
            # completed below.
            bytes_done = min(bytes_done + int(size), total_bytes)
            progress(bytes_done, total_bytes)
    if progress:
        progress(total_bytes, total_bytes)
    word_counts = [(w.decode("utf-8"), c) for w, c in counts.items()]
    logger.info(
        "Learning a %d-token vocabulary from %d distinct words.", vocab_size, len(word_counts)
    )
    # Every character is two tokens (`x`, `##x`), which the learner keeps
    # whatever its target: a large alphabet alone could overflow it.
    max_unique_chars = min(max_unique_chars, (vocab_size - len(SPECIAL_TOKENS) - 1) // 2)
    vocab = learner.learn(
        word_counts,
        vocab_size=vocab_size,
        reserved_tokens=list(SPECIAL_TOKENS),
        max_token_length=max_word_chars,
        max_unique_chars=max_unique_chars,
        lower_thresh=min_count,
        include_joiner_token=True,
        joiner=SUFFIX_INDICATOR,
    )
    return _cap_size(vocab, vocab_size)


def _is_character(token):
    return len(token[len(SUFFIX_INDICATOR) :] if token.startswith(SUFFIX_INDICATOR) else token) <= 1


def _cap_size(vocab, vocab_size):
    """`vocab` cut to `vocab_size` tokens.

    The learner's threshold search may stop above its target. Its output is
    the special tokens, the characters, then pieces most frequent first, so
    the tail pieces are the ones to drop; every character stays, with and
    without `##`, so that no word becomes [UNK].
    """
    if len(vocab) <= vocab_size:
        return vocab
    fixed = {t for t in vocab if t in SPECIAL_TOKENS or _is_character(t)}
    pieces = [t for t in vocab if t not in fixed][: vocab_size - len(fixed)]
    keep = fixed | set(pieces)
    return [t for t in vocab if t in keep]
