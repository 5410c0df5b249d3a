"""A word's neighbours in the teacher's token embeddings, for the transfer
set's augmented copies: the replacement that needs no second model (Tang et
al. 2019 replace a word by one of the same part of speech; Jiao et al.
2020 by its nearest GloVe words where no masked LM can predict it).

Shape legend: V the teacher's vocabulary, W its whole-word tokens, H its
hidden size.
"""

import keras
import numpy as np

from keras_bert.distillation.augmentation import (
    TO_REPLACE,
    is_whole_word,
    marked_places,
    set_words,
)
from pipelines.vocabulary import MASK


class NeighbourWords:
    """Fills the `TO_REPLACE` words of transfer-set rows with one of the
    `top_k` whole-word tokens nearest to the word (cosine similarity of
    the teacher's input token embeddings), drawn with the row's generator.
    A word that is no single token of the vocabulary (a rare word the
    tokenizer splits, a word with punctuation attached) is masked.

    Args:
        backbone: the teacher's `BertBackbone`.
        tokenizer: the teacher's `BertTokenizer`: its vocabulary, and its
            casing (an uncased one looks words up lower-cased).
        top_k: int. The neighbours a replacement is drawn from.

    Attributes:
        fingerprint: None. The teacher's embeddings are the teacher's,
            which the transfer set's manifest fingerprints.
    """

    fingerprint = None

    def __init__(self, backbone, tokenizer, top_k):
        self.vocabulary = list(tokenizer.vocabulary)
        self.index = {token: i for i, token in enumerate(self.vocabulary)}
        self.lower_case = tokenizer.lower_case
        self.top_k = top_k
        embeddings = keras.ops.convert_to_numpy(backbone.token_embedding.embeddings)  # (V, H)
        norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
        self.unit = embeddings / np.maximum(norms, 1e-12)
        self.words = np.array(
            [i for i, token in enumerate(self.vocabulary) if is_whole_word(token)]
        )  # (W,)
        self.word_unit = self.unit[self.words]  # (W, H), gathered once
        self._neighbours = {}  # Token id -> its nearest whole words, computed once.

    def neighbours(self, word):
        """The `top_k` whole-word tokens nearest to `word`, best first; []
        when `word` is no token of the vocabulary."""
        token = self.index.get(word.lower() if self.lower_case else word)
        if token is None:
            return []
        if token not in self._neighbours:
            similarity = self.word_unit @ self.unit[token]  # (W,)
            best = self.words[np.argsort(-similarity, kind="stable")[: self.top_k + 1]]
            self._neighbours[token] = [self.vocabulary[i] for i in best if i != token][: self.top_k]
        return self._neighbours[token]

    def fill(self, rows, rngs):
        """Replaces, in place, every `TO_REPLACE` word of `rows`, each drawn
        with the row's `rngs` entry from the word's neighbours."""
        for index, field, words in marked_places(rows):
            filled = []
            for word in words:
                if word.startswith(TO_REPLACE):
                    candidates = self.neighbours(word[len(TO_REPLACE) :])
                    word = candidates[rngs[index].integers(len(candidates))] if candidates else MASK
                filled.append(word)
            set_words(rows[index], field, filled)
        return rows
