"""An independent, plain-Python statement of the original BERT tokenizer.

Written from the description of google-research/bert ``tokenization.py``
(``BasicTokenizer`` followed by greedy longest-match-first ``WordpieceTokenizer``)
so that ``pipelines.BertTokenizer`` can be checked id for id. It is slow and
simple on purpose: it is the specification the in-graph tokenizer is held to.

The steps, in order:

1. Cleaning: code points U+0000 and U+FFFD and every control character
   (categories Cc and Cf, except tab, newline and carriage return) are
   deleted; tab, newline, carriage return and category Zs become a space.
2. Every CJK ideograph gets a space on each side.
3. The text is split on whitespace (Python's ``str.split()``).
4. Uncased only: each word is lower-cased (``str.lower``), NFD-normalised and
   its non-spacing marks (category Mn) are removed.
5. Each word is split around punctuation: ASCII 33-47, 58-64, 91-96, 123-126
   and every Unicode category P*.
6. Each resulting word longer than 200 characters becomes ``[UNK]``; other
   words are split greedily into the longest vocabulary pieces, continuation
   pieces carrying the ``##`` prefix; a word with no full split becomes
   ``[UNK]``.
"""

import unicodedata

MAX_CHARS_PER_WORD = 200


def load_vocab(path):
    vocab = {}
    with open(path, encoding="utf-8") as f:
        for index, line in enumerate(f):
            vocab[line.strip()] = index
    return vocab


def _is_whitespace(ch):
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch):
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf")


def _is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_cjk(ch):
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def basic_tokenize(text, lower_case=True):
    cleaned = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or _is_control(ch):
            continue
        cleaned.append(" " if _is_whitespace(ch) else ch)
    spaced = []
    for ch in cleaned:
        spaced.append(f" {ch} " if _is_cjk(ch) else ch)
    words = []
    for word in "".join(spaced).split():
        if lower_case:
            word = unicodedata.normalize("NFD", word.lower())
            word = "".join(c for c in word if unicodedata.category(c) != "Mn")
        current = []
        for ch in word:
            if _is_punctuation(ch):
                if current:
                    words.append("".join(current))
                    current = []
                words.append(ch)
            else:
                current.append(ch)
        if current:
            words.append("".join(current))
    # The original re-splits the joined words on whitespace.
    return " ".join(words).split()


def wordpiece(word, vocab, unk="[UNK]"):
    if len(word) > MAX_CHARS_PER_WORD:
        return [unk]
    pieces = []
    start = 0
    while start < len(word):
        end = len(word)
        found = None
        while start < end:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                found = piece
                break
            end -= 1
        if found is None:
            return [unk]
        pieces.append(found)
        start = end
    return pieces


class ReferenceTokenizer:
    def __init__(self, vocab_file, lower_case=True):
        self.vocab = load_vocab(vocab_file)
        self.lower_case = lower_case

    def tokenize(self, text):
        if isinstance(text, bytes):
            # The original's convert_to_unicode.
            text = text.decode("utf-8", "ignore")
        pieces = []
        for word in basic_tokenize(text, self.lower_case):
            pieces.extend(wordpiece(word, self.vocab))
        return pieces

    def ids(self, text):
        return [self.vocab[p] for p in self.tokenize(text)]
