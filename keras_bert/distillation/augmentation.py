"""Augmented copies of a sentence for the transfer set (Tang et al. 2019,
"Distilling Task-Specific Knowledge from BERT into Simple Neural
Networks", section 3.2): words masked, then an n-gram kept.

Plain Python on whitespace words, seeded per copy: a copy is the same
whichever shard, process or resumed run makes it. Masked words are written
as the text `[MASK]`, which the transfer set's tokenization turns into the
`[MASK]` id of each model's vocabulary (`pipelines.transfer_set`).
"""

from pipelines.vocabulary import MASK


def augmented_text(text, rng, transfer, cut=True):
    """`text` with each word replaced by `[MASK]` with
    `transfer.mask_probability`; then, when `cut`, with
    `transfer.ngram_probability` only a random run of 1 to
    `transfer.ngram_max` of its words is kept.

    Args:
        text: str.
        rng: `numpy.random.Generator`.
        transfer: `TransferConfig`.
        cut: bool. Whether n-gram sampling may apply.
    """
    words = text.split()
    words = [MASK if rng.random() < transfer.mask_probability else w for w in words]
    if cut and words and rng.random() < transfer.ngram_probability:
        n = min(int(rng.integers(1, transfer.ngram_max + 1)), len(words))
        start = int(rng.integers(0, len(words) - n + 1))
        words = words[start : start + n]
    return " ".join(words)


def augmented_pair(text_a, text_b, rng, transfer):
    """An augmented copy of a sentence or a pair: `(text_a, text_b)`, with
    `text_b` None for a sentence. A pair's sentences are masked, not cut:
    a cut pair would lose what relates its two parts."""
    if text_b is None:
        return augmented_text(text_a, rng, transfer), None
    return (
        augmented_text(text_a, rng, transfer, cut=False),
        augmented_text(text_b, rng, transfer, cut=False),
    )
