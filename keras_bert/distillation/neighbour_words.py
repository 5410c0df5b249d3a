"""A word's neighbours in the teacher's token embeddings, for the transfer
set's augmented copies: the replacement that needs no second model (Tang et
al. 2019 replace a word by one of the same part of speech; Jiao et al.
2020 by its nearest GloVe words where no masked LM can predict it).

Shape legend: V the teacher's vocabulary, W its whole-word tokens, H its
hidden size.
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.distillation.augmentation import (
    TO_REPLACE,
    is_whole_word,
    marked_places,
    set_words,
)
from pipelines.vocabulary import MASK, UNK


class NeighbourWords:
    """Fills the `TO_REPLACE` words of transfer-set rows with one of the
    `top_k` whole-word tokens nearest to the word (cosine similarity of
    the teacher's input token embeddings), drawn with the row's generator.
    A word the teacher's tokenizer splits (a rare word, a word with
    punctuation attached) is looked up by the mean of its pieces'
    directions, its own pieces left out of its neighbours; a word with an
    unknown piece is masked.

    Args:
        backbone: the teacher's `BertBackbone`.
        tokenizer: the teacher's `BertTokenizer`: its vocabulary, and its
            casing (an uncased one looks words up lower-cased).
        top_k: int. The neighbours a replacement is drawn from.

    Attributes:
        fingerprint: str. How the neighbours are found (the teacher's
            embeddings are the teacher's, which the transfer set's manifest
            fingerprints).
    """

    fingerprint = "teacher_neighbours, split words by their pieces' mean"

    def __init__(self, backbone, tokenizer, top_k):
        self.tokenizer = tokenizer
        self.vocabulary = list(tokenizer.vocabulary)
        self.unknown = self.vocabulary.index(UNK)
        self.top_k = top_k
        embeddings = keras.ops.convert_to_numpy(backbone.token_embedding.embeddings)  # (V, H)
        norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
        self.unit = embeddings / np.maximum(norms, 1e-12)
        self.words = np.array(
            [i for i, token in enumerate(self.vocabulary) if is_whole_word(token)]
        )  # (W,)
        self.word_unit = self.unit[self.words]  # (W, H), gathered once
        self._pieces = {}  # Word -> its token ids, tokenized once.
        self._neighbours = {}  # Token ids -> their nearest whole words, computed once.

    def neighbours(self, word):
        """The `top_k` whole-word tokens nearest to `word`, best first; []
        when a piece of `word` is unknown to the vocabulary."""
        self._tokenize([word])
        pieces = self._pieces[word]
        if not pieces or self.unknown in pieces:
            return []
        if pieces not in self._neighbours:
            similarity = self.word_unit @ self.unit[list(pieces)].mean(axis=0)  # (W,)
            best = self.words[np.argsort(-similarity, kind="stable")[: self.top_k + len(pieces)]]
            self._neighbours[pieces] = [self.vocabulary[i] for i in best if i not in pieces][
                : self.top_k
            ]
        return self._neighbours[pieces]

    def _tokenize(self, words):
        """Tokenizes the `words` not seen before, in one call."""
        new = sorted({w for w in words if w not in self._pieces})
        if new:
            for word, ids in zip(new, self.tokenizer.tokenize(tf.constant(new)).to_list()):
                self._pieces[word] = tuple(ids)

    def fill(self, rows, rngs, replaces=None):
        """Replaces, in place, every `TO_REPLACE` word of `rows` for which
        `replaces(word)` holds (None: every one), each drawn with the row's
        `rngs` entry from the word's neighbours; the others stay marked."""
        places = list(marked_places(rows))
        self._tokenize(
            w[len(TO_REPLACE) :]
            for _, _, words in places
            for w in words
            if w.startswith(TO_REPLACE)
        )
        for index, field, words in places:
            filled = []
            for word in words:
                if word.startswith(TO_REPLACE) and (
                    replaces is None or replaces(word[len(TO_REPLACE) :])
                ):
                    candidates = self.neighbours(word[len(TO_REPLACE) :])
                    word = candidates[rngs[index].integers(len(candidates))] if candidates else MASK
                filled.append(word)
            set_words(rows[index], field, filled)
        return rows
