"""In-graph BERT WordPiece tokenizer, id for id equal to the original.

The original tokenizer (google-research/bert `tokenization.py`) is
`BasicTokenizer` (clean, split CJK, split whitespace, lower-case and strip
accents, split punctuation) followed by greedy longest-match-first WordPiece.
tensorflow-text's `FastWordpieceTokenizer` in end-to-end mode does the
whitespace/punctuation split and the WordPiece step exactly as the original
(same punctuation set: ASCII 33-47, 58-64, 91-96, 123-126 and Unicode P*), so
it is used as is. The rest is done here with core TensorFlow string ops,
because the ready-made tensorflow-text pieces deviate from the original:

* `FastBertNormalizer` turns control characters into spaces; the original
  *deletes* them (and U+0000, U+FFFD), so "a\u200bb" is one word there.
* `FastBertNormalizer(lower_case_nfd_strip_accents=True)` also applies
  compatibility folding ("\ufb01" -> "fi", full-width "\uff21" -> "a"); the
  original only lower-cases, NFD-normalises and drops category Mn.
* `FastWordpieceTokenizer` turns words longer than `max_bytes_per_word`
  *bytes* into [UNK]; the original does that for words longer than 200
  *characters*. We give it 4 * 200 bytes (no word of <= 200 characters is cut)
  and replace longer words ourselves before it sees them.
* Invalid UTF-8 bytes are dropped, as the original's
  `bytes.decode("utf-8", "ignore")` does.

Everything is a TensorFlow op, so the tokenizer runs inside `tf.data` graphs.
"""

import logging
import os

import tensorflow as tf
import tensorflow_text as tf_text

from pipelines import vocabulary as vocab_lib

logger = logging.getLogger(__name__)

# The original's `max_input_chars_per_word`.
MAX_CHARS_PER_WORD = 200
# UTF-8 needs at most 4 bytes a character, so this byte limit never fires
# on a word of <= MAX_CHARS_PER_WORD characters.
_MAX_BYTES_PER_WORD = 4 * MAX_CHARS_PER_WORD

# The original `_is_chinese_char` ranges (CJK Unified Ideographs and
# extensions, compatibility ideographs). Hangul, kana etc. are not included.
_CJK_CLASS = (
    r"\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}"
    r"\x{2A700}-\x{2B73F}\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}"
    r"\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}"
)
# Deleted by the original `_clean_text`: U+0000, U+FFFD and categories Cc
# and Cf except tab, newline and carriage return (Cc is U+0000-001F and
# U+007F-009F).
_DELETED = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\p{Cf}\x{FFFD}]"
# Whitespace other than ' ', '\t', '\n', '\r' (which FastWordpieceTokenizer
# already splits on): category Zs, which the original maps to ' ', and the
# line/paragraph separators, which Python's `str.split()` splits on.
_OTHER_WHITESPACE = r"[^\P{Zs} ]|[\p{Zl}\p{Zp}]"
# Characters that can be part of a word after basic tokenization: not
# whitespace, not punctuation (the original `_is_punctuation`).
_PUNCT = r"!-/:-@\[-`{-~\pP"
# A run of more than 200 non-whitespace characters. Strings that have one
# first get spaces around punctuation (which does not change the tokens, as
# punctuation is always a word of its own) so that the run is a word.
_LONG_WORD = r"[^ \t\n\r]{%d,}" % (MAX_CHARS_PER_WORD + 1)
_MAYBE_LONG_WORD = r"(?s).*" + _LONG_WORD + ".*"


def _apply_where(mask, fn, strings):
    """Returns `strings` with `fn` applied only to the elements in `mask`."""

    def apply():
        indices = tf.where(mask)
        return tf.tensor_scatter_nd_update(strings, indices, fn(tf.gather_nd(strings, indices)))

    return tf.cond(
        tf.reduce_all(mask),
        lambda: fn(strings),
        lambda: tf.cond(tf.reduce_any(mask), apply, lambda: strings),
    )


def drop_invalid_utf8(strings):
    """Drops invalid UTF-8 bytes, as Python's `decode("utf-8", "ignore")`."""
    # RE2 does not match invalid UTF-8 against a class, so this finds bad
    # strings fast and only those pay for the transcoding. The explicit ranges
    # (not ".") also reject encoded surrogates and code points > U+10FFFF,
    # which RE2's "." lets through but Python rejects.
    valid = tf.strings.regex_full_match(strings, r"(?s)[\x{0}-\x{D7FF}\x{E000}-\x{10FFFF}]*")
    return _apply_where(
        tf.logical_not(valid),
        lambda t: tf.strings.unicode_transcode(t, "UTF-8", "UTF-8", errors="ignore"),
        strings,
    )


def normalize(texts, lower_case=True, long_word_replacement="\ue000"):
    """The original `BasicTokenizer` up to, not including, the final split.

    Args:
        texts: tf.string tensor, any shape.
        lower_case: bool, lower-case, NFD-normalise and drop accents (Mn).
        long_word_replacement: str, a single character that the vocabulary
            cannot tokenize; words longer than 200 characters are replaced by
            it so that WordPiece maps them to [UNK].

    Returns:
        A tf.string tensor of the same shape, ready for
        `FastWordpieceTokenizer` (which splits whitespace and punctuation).
    """
    texts = tf.convert_to_tensor(texts, tf.string)
    flat = tf.reshape(texts, [-1])

    def unicode_path(t):
        t = drop_invalid_utf8(t)
        t = tf.strings.regex_replace(t, _DELETED, "")
        t = tf.strings.regex_replace(t, _OTHER_WHITESPACE, " ")
        t = tf.strings.regex_replace(t, "([" + _CJK_CLASS + "])", r" \1 ")
        if lower_case:
            # Full Unicode lower-casing, like Python's str.lower().
            t = tf.strings.lower(t, encoding="utf-8")
            t = tf_text.normalize_utf8(t, "NFD")
            t = tf.strings.regex_replace(t, r"\p{Mn}", "")
        return t

    def ascii_path(t):
        # The same steps restricted to ASCII: only control characters to
        # delete and A-Z to lower-case (NFD, accents, CJK and other
        # whitespace cannot occur). Cheaper than the Unicode path.
        t = tf.strings.regex_replace(t, r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "")
        return tf.strings.lower(t) if lower_case else t

    is_ascii = tf.strings.regex_full_match(flat, r"[\x00-\x7f]*")
    flat = _apply_where(tf.logical_not(is_ascii), unicode_path, flat)
    flat = _apply_where(is_ascii, ascii_path, flat)
    # The 200-character rule counts characters of the normalised word, as the
    # original applies it after BasicTokenizer.
    flat = _apply_where(
        tf.strings.regex_full_match(flat, _MAYBE_LONG_WORD),
        lambda t: tf.strings.regex_replace(
            tf.strings.regex_replace(t, "([" + _PUNCT + "])", r" \1 "),
            _LONG_WORD,
            f" {long_word_replacement} ",
        ),
        flat,
    )
    return tf.reshape(flat, tf.shape(texts))


def basic_split(texts, lower_case=True):
    """The original `BasicTokenizer`: strings [N] -> ragged words [N, None].

    Used to count words for vocabulary learning; words longer than 200
    characters are dropped.
    """
    normalized = normalize(texts, lower_case, long_word_replacement="")
    return tf_text.regex_split(
        normalized,
        delim_regex_pattern=r"[ \t\n\r]+|[" + _PUNCT + "]",
        keep_delim_regex_pattern="[" + _PUNCT + "]",
    )


class BertTokenizer:
    """BERT WordPiece tokenizer that runs in the TensorFlow graph.

    Gives exactly the ids of the original BERT `FullTokenizer`
    (google-research/bert `tokenization.py`); see the module docstring for
    what is done around tensorflow-text's `FastWordpieceTokenizer` and why.

    Args:
        vocab_file: str, path to a vocabulary file (one token per line). It is
            validated: special tokens present, no duplicates
            (`pipelines.VocabularyError` otherwise).
        lower_case: bool, defaults to `True`. Lower-case and strip accents
            (uncased models). `False` for cased vocabularies.

    Call arguments:
        texts: tf.string tensor of shape `[N]` (or a scalar).

    Returns:
        A `tf.RaggedTensor` of int32 ids, shape `[N, None]` (a 1-D tensor for
        a scalar input).

    Example:

    >>> tok = BertTokenizer("data/vocab/bert_uncased_vocab.txt")
    >>> tok(tf.constant(["Hello, World!"])).to_list()
    [[7592, 1010, 2088, 999]]
    >>> tok.detokenize([[7592, 1010, 2088, 999]]).numpy()
    array([b'hello , world !'], dtype=object)
    """

    def __init__(self, vocab_file, lower_case=True):
        self.vocab_file = os.fspath(vocab_file)
        self.lower_case = bool(lower_case)
        self.vocabulary = vocab_lib.load_vocabulary(self.vocab_file)
        self.vocab_size = len(self.vocabulary)
        if not self.lower_case and not any(
            t != t.lower() for t in self.vocabulary if not t.startswith("[")
        ):
            logger.warning(
                "Cased tokenization with %s, a vocabulary without upper-case "
                "tokens (uncased): capitalised words become [UNK] or stray "
                "pieces. Tokenize uncased, or use a cased vocabulary.",
                self.vocab_file,
            )
        index = {token: i for i, token in enumerate(self.vocabulary)}
        self.pad_id = index[vocab_lib.PAD]
        self.unk_id = index[vocab_lib.UNK]
        self.cls_id = index[vocab_lib.CLS]
        self.sep_id = index[vocab_lib.SEP]
        self.mask_id = index[vocab_lib.MASK]
        # A private-use character the vocabulary cannot tokenize: long words
        # are replaced by it and so become [UNK].
        self._long_word_replacement = next(
            chr(cp)
            for cp in range(0xE000, 0xF900)
            if chr(cp) not in index and "##" + chr(cp) not in index
        )
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=self.vocabulary,
            suffix_indicator=vocab_lib.SUFFIX_INDICATOR,
            max_bytes_per_word=_MAX_BYTES_PER_WORD,
            token_out_type=tf.int32,
            unknown_token=vocab_lib.UNK,
            no_pretokenization=False,
        )
        self._id_to_token = tf.constant(self.vocabulary)
        is_special = [
            token.startswith("[") and token.endswith("]") and len(token) > 2
            for token in self.vocabulary
        ]
        # Ids a masked token may be replaced with (the "10% random token"):
        # every token that is not bracketed like [PAD] or [unused7].
        self.random_token_ids = tf.constant(
            [i for i, s in enumerate(is_special) if not s], tf.int32
        )
        self.is_suffix = tf.constant(
            [t.startswith(vocab_lib.SUFFIX_INDICATOR) for t in self.vocabulary]
        )

    def normalize(self, texts):
        """The original BasicTokenizer's cleaning and normalisation."""
        return normalize(texts, self.lower_case, self._long_word_replacement)

    def __call__(self, texts):
        return self.tokenize(texts)

    def tokenize(self, texts):
        """tf.string `[N]` -> `tf.RaggedTensor` int32 `[N, None]`."""
        return self._wordpiece.tokenize(self.normalize(texts))

    def detokenize(self, ids):
        """Ids `[N, None]` (ragged or dense) -> tf.string `[N]`.

        Pieces are joined with spaces and `##` continuations glued to the
        piece before them, as the original's usual inverse does. Lower-casing,
        accents and exact spacing are not recoverable.
        """
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.ragged.constant(ids) if isinstance(ids, list) else ids
        tokens = tf.gather(self._id_to_token, ids)
        joined = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(joined, " ##", "")

    def token_to_id(self, token):
        return self.vocabulary.index(token)

    def id_to_token(self, token_id):
        return self.vocabulary[token_id]
