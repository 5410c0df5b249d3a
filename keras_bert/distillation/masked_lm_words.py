"""Words a pre-trained masked LM predicts in context, for the transfer
set's augmented copies (TinyBERT's augmentation, Jiao et al. 2020,
section 3.2: a word is replaced by one of the masked LM's K best
single-piece predictions at its place), alone or with the teacher's
neighbours for the words the masked LM's vocabulary splits, as TinyBERT
does."""

import os
import tempfile

import tensorflow as tf

from keras_bert.distillation.augmentation import (
    TO_REPLACE,
    is_whole_word,
    marked_places,
    set_words,
)
from keras_bert.errors import FinetuneError
from keras_bert.pretraining.fill_mask import fill_mask
from pipelines.vocabulary import MASK

# Fillers asked of the masked LM for each word, before the pieces that are
# no whole word (`##` continuations, `[SPECIAL]` tokens) are dropped and
# `top_k` are kept.
_ASKED = 4


class MaskedLmWords:
    """Fills the `TO_REPLACE` words of transfer-set rows.

    Args:
        path: str. A `BertPretrainer` `.keras` (`pretrain`'s
            `pretrainer.keras`), its vocabulary inside.
        top_k: int. The best single-piece words a replacement is drawn from.
        batch_size: int. Sentences a masked-LM call.

    Attributes:
        fingerprint: str. The SHA-256 of the file.
    """

    def __init__(self, path, top_k, batch_size):
        import pipelines
        from keras_bert.distillation.transfer_set import file_fingerprint
        from keras_bert.finetuning.runner import load_keras_model
        from keras_bert.models import BertPretrainer
        from pipelines.vocabulary import infer_lower_case

        flag = "distillation.transfer.masked_lm"
        if not os.path.exists(path):
            raise FinetuneError(f"{flag} {path}: no such file")
        self.model = load_keras_model(path)
        if not isinstance(self.model, BertPretrainer) or not self.model.backbone.vocabulary:
            raise FinetuneError(
                f"{flag} {path}: holds a {type(self.model).__name__}, not a BertPretrainer "
                "with its vocabulary (pretrain's pretrainer.keras)"
            )
        vocabulary = list(self.model.backbone.vocabulary)
        with tempfile.TemporaryDirectory() as folder:
            vocab_file = os.path.join(folder, "vocab.txt")
            with open(vocab_file, "w", encoding="utf-8") as f:
                f.write("".join(token + "\n" for token in vocabulary))
            self.tokenizer = pipelines.BertTokenizer(
                vocab_file, lower_case=infer_lower_case(vocabulary)
            )
        self.top_k = top_k
        self.batch_size = batch_size
        self.fingerprint = file_fingerprint(path)

    def single_pieces(self, words):
        """Those of `words` the masked LM's vocabulary holds as one piece."""
        words = sorted(set(words))
        if not words:
            return set()
        pieces = self.tokenizer.tokenize(tf.constant(words)).row_lengths().numpy()
        return {word for word, count in zip(words, pieces) if count == 1}

    def fill(self, rows, rngs):
        """Replaces, in place, every `TO_REPLACE` word of `rows` (their
        `text_a`, `text_b` or `words`), each drawn with the row's `rngs`
        entry from the masked LM's `top_k` words at its place, the row's
        other masked and marked words masked."""
        # Batched by length, so that a batch pads little.
        places = sorted(marked_places(rows), key=lambda place: len(place[2]))
        for start in range(0, len(places), self.batch_size):
            batch = places[start : start + self.batch_size]
            sentences = [
                " ".join(MASK if w.startswith(TO_REPLACE) else w for w in words)
                for _, _, words in batch
            ]
            fillers = fill_mask(self.model, self.tokenizer, sentences, top_k=self.top_k * _ASKED)
            for (index, field, words), per_mask in zip(batch, fillers):
                masks = iter(per_mask)
                filled = []
                for word in words:
                    if word == MASK:
                        next(masks)
                    elif word.startswith(TO_REPLACE):
                        candidates = [t for t, _ in next(masks) if is_whole_word(t)][: self.top_k]
                        word = (
                            candidates[rngs[index].integers(len(candidates))]
                            if candidates
                            else MASK
                        )
                    filled.append(word)
                set_words(rows[index], field, filled)
        return rows


class MaskedLmAndNeighbourWords:
    """TinyBERT's replacement (Jiao et al. 2020, section 3.2): a marked word
    that is one piece of the masked LM's vocabulary becomes one of the
    masked LM's predictions at its place (`MaskedLmWords`), any other one
    of its neighbours in the teacher's embeddings (`NeighbourWords`; the
    paper's are GloVe's, which no file here holds).

    Args:
        masked_lm_words: `MaskedLmWords`.
        neighbour_words: `NeighbourWords`.

    Attributes:
        fingerprint: str. The masked LM's file's and how neighbours are found.
    """

    def __init__(self, masked_lm_words, neighbour_words):
        self.masked_lm_words = masked_lm_words
        self.neighbour_words = neighbour_words
        self.fingerprint = f"{masked_lm_words.fingerprint} + {neighbour_words.fingerprint}"

    def fill(self, rows, rngs):
        """Replaces, in place, every `TO_REPLACE` word of `rows`: first the
        split ones by neighbours, then the rest by the masked LM, which
        reads them in their sentences."""
        marked = [
            w[len(TO_REPLACE) :]
            for _, _, words in marked_places(rows)
            for w in words
            if w.startswith(TO_REPLACE)
        ]
        single = self.masked_lm_words.single_pieces(marked)
        self.neighbour_words.fill(rows, rngs, replaces=lambda word: word not in single)
        return self.masked_lm_words.fill(rows, rngs)
