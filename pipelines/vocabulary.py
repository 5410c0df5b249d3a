"""WordPiece vocabulary files: the special tokens, loading and validation,
writing.

A vocabulary file holds one token per line; the line number is the id. It
must contain the five BERT special tokens and no duplicate or empty lines.
`vocabulary_learner.learn_vocabulary` learns one from a corpus. This module
imports nothing else from `pipelines` but its errors and `text_files`: the
tokenizer, the corpus readers and the learner all build on it.
"""

import os

import tensorflow as tf

from pipelines.errors import VocabularyError
from pipelines.text_files import read_text

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
SUFFIX_INDICATOR = "##"
# The special tokens plus room for a few characters: anything smaller cannot
# tokenize text at all.
MIN_VOCAB_SIZE = len(SPECIAL_TOKENS) + 5


def load_vocabulary(vocab_file):
    """Reads and validates a vocabulary file.

    Args:
        vocab_file: str, path to a UTF-8 file (a byte-order mark is
            fine) with one token per line.

    Returns:
        A list of tokens; the index of a token is its id.

    Raises:
        VocabularyError: the file is missing or unreadable, is not UTF-8 (the
            line named), has an empty line or a duplicate token, or lacks one
            of `[PAD] [UNK] [CLS] [SEP] [MASK]`. The message names the file.
    """
    vocab_file = os.fspath(vocab_file)
    if not tf.io.gfile.exists(vocab_file):
        raise VocabularyError(f"Vocabulary file not found: {vocab_file!r}")
    try:
        text = read_text(vocab_file, VocabularyError)
    except (OSError, tf.errors.OpError) as e:
        raise VocabularyError(f"Cannot read vocabulary file {vocab_file!r}: {e}") from None
    # Like the original `load_vocab`, surrounding whitespace is stripped.
    tokens = [line.strip() for line in text.splitlines()]
    if not tokens:
        raise VocabularyError(f"Vocabulary file {vocab_file!r} is empty.")
    seen = {}
    for index, token in enumerate(tokens):
        if not token:
            raise VocabularyError(
                f"Vocabulary file {vocab_file!r} has an empty token on line {index + 1}."
            )
        if token in seen:
            raise VocabularyError(
                f"Vocabulary file {vocab_file!r} has duplicate token "
                f"{token!r} on lines {seen[token] + 1} and {index + 1}."
            )
        seen[token] = index
    missing = [t for t in SPECIAL_TOKENS if t not in seen]
    if missing:
        raise VocabularyError(
            f"Vocabulary file {vocab_file!r} lacks the special token(s) "
            f"{', '.join(missing)}; a BERT vocabulary needs all of "
            f"{' '.join(SPECIAL_TOKENS)}."
        )
    return tokens


def infer_lower_case(vocabulary):
    """Whether text for `vocabulary` is lower-cased: uncased vocabularies
    have no upper-case letter outside their [SPECIAL] tokens. Training,
    `predict` and the serving export all decide by this one rule."""
    return not any(token != token.lower() for token in vocabulary if not token.startswith("["))
