"""Augmented copies of a transfer-set row (Tang et al. 2019, "Distilling
Task-Specific Knowledge from BERT into Simple Neural Networks", section
3.2): words masked or marked for replacement, then an n-gram kept.

Plain Python on words, seeded per copy: a copy is the same whichever shard,
process or resumed run makes it. Masked words are written as the text
`[MASK]`, which the transfer set's tokenization turns into the `[MASK]` id
of each model's vocabulary (`pipelines.transfer_set`). A word marked
`TO_REPLACE` is replaced before anyone labels the copy: by a word a masked
LM predicts in its context (`masked_lm_words`, Jiao et al. 2020), or by one
of its neighbours in the teacher's embeddings (`neighbour_words`). A copy
carries no label: augmenting can change it.
"""

import re

from pipelines.vocabulary import MASK

# Marks a word of a copy to be replaced, the word after it: a private-use
# character that no text or vocabulary holds.
TO_REPLACE = "\ue0ff"

# The stop words TinyBERT's augmentation never replaces (its released
# `data_augmentation.py`): NLTK's English list without its eight question
# words (what which who whom when where why how), with 's and 're. Written
# out: nltk ships its word lists as a download of their own, which nothing
# here may fetch.
STOP_WORDS = frozenset(
    """i me my myself we our ours ourselves you you're you've you'll you'd your yours
    yourself yourselves he him his himself she she's her hers herself it it's its itself
    they them their theirs themselves this that that'll these those am is are was were be
    been being have has had having do does did doing a an the and but if or because as
    until while of at by for with about against between into through during before after
    above below to from up down in out on off over under again further then once here
    there all any both each few more most other some such no nor not only own same so than
    too very s t can will just don don't should should've now d ll m o re ve y ain aren
    aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't
    isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't
    wasn wasn't weren weren't won won't wouldn wouldn't 's 're""".split()
)


def is_content_word(word):
    """Whether TinyBERT's augmentation may replace `word`: letters only (no
    number, punctuation or hyphenated compound) and no stop word, in
    lower case."""
    word = word.lower()
    return re.fullmatch("[a-z]+", word) is not None and word not in STOP_WORDS


def is_whole_word(token):
    """Whether a vocabulary token can stand as a word: neither a `##`
    continuation nor a `[SPECIAL]` token."""
    return not token.startswith("##") and not (token.startswith("[") and token.endswith("]"))


def marked_places(rows):
    """`(index, field, words)` for each text of `rows` (`text_a`,
    `text_b`, or a tagged sentence's `words`) with a word marked
    `TO_REPLACE`, `words` the text's words."""
    for index, row in enumerate(rows):
        for field in ("words", "text_a", "text_b"):
            words = row.get(field)
            if words is not None:
                words = words if field == "words" else words.split()
                if any(w.startswith(TO_REPLACE) for w in words):
                    yield index, field, words


def set_words(row, field, words):
    """Writes `words` back as `row[field]`: a list, or a text."""
    row[field] = words if field == "words" else " ".join(words)


def augmented_words(words, rng, transfer, cut=True):
    """`words` with each replaced by `[MASK]` with
    `transfer.mask_probability`, or marked for replacement
    (`TO_REPLACE + word`) with `transfer.replace_probability` (with
    `transfer.replace_words: content`, a content word only:
    `is_content_word`); then, when `cut`, with
    `transfer.ngram_probability` only a random run of 1 to
    `transfer.ngram_max` of them is kept.

    Args:
        words: list of str.
        rng: `numpy.random.Generator`.
        transfer: `TransferConfig`.
        cut: bool. Whether n-gram sampling may apply.
    """
    draws = rng.random(len(words))
    masked = transfer.mask_probability
    replaced = masked + transfer.replace_probability
    any_word = transfer.replace_words == "all"
    words = [
        MASK
        if draw < masked
        else TO_REPLACE + word
        if draw < replaced and (any_word or is_content_word(word))
        else word
        for word, draw in zip(words, draws)
    ]
    if cut and words and rng.random() < transfer.ngram_probability:
        n = min(int(rng.integers(1, transfer.ngram_max + 1)), len(words))
        start = int(rng.integers(0, len(words) - n + 1))
        words = words[start : start + n]
    return words


def augmented_text(text, rng, transfer, cut=True):
    """`augmented_words` of `text`'s whitespace-separated words, joined."""
    return " ".join(augmented_words(text.split(), rng, transfer, cut))


def augmented_row(row, rng, transfer):
    """An augmented copy of a transfer-set row, unlabelled: a sentence
    (`text_a`), a pair (`text_a`, `text_b`) or a tagged sentence (`words`).
    A pair's sentences are masked, not cut: a cut pair would lose what
    relates its two parts."""
    if "words" in row:
        return {"words": augmented_words(row["words"], rng, transfer), "labels": None}
    if row["text_b"] is None:
        return {
            "text_a": augmented_text(row["text_a"], rng, transfer),
            "text_b": None,
            "label": None,
        }
    return {
        "text_a": augmented_text(row["text_a"], rng, transfer, cut=False),
        "text_b": augmented_text(row["text_b"], rng, transfer, cut=False),
        "label": None,
    }
