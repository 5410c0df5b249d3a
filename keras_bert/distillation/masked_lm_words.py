"""Words a pre-trained masked LM predicts in context, for the transfer
set's augmented copies (TinyBERT's augmentation, Jiao et al. 2020,
section 3.2: a word is replaced by one of the masked LM's K best
single-piece predictions at its place), alone or with the teacher's
neighbours for the words the masked LM's vocabulary splits, as TinyBERT
does."""

import logging
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

from keras_bert.distillation.augmentation import (
    TO_REPLACE,
    is_whole_word,
    marked_places,
    set_words,
)
from keras_bert.errors import FinetuneError
from keras_bert.pretraining.fill_mask import masked_sentence_inputs
from pipelines.vocabulary import MASK

logger = logging.getLogger("keras_bert.distill")

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
        context: str. What the masked LM reads (`TransferConfig.
            masked_lm_context`): `copy`, the copy with its masked and
            marked words masked, a call a copy; `sentence` (TinyBERT's),
            the sentence with the one word masked and then whole, a call a
            sentence and word, which its copies share.

    Attributes:
        fingerprint: str. The SHA-256 of the file.
        asked: int. The pieces ranked at each place, before those that
            are no whole word are dropped and `top_k` kept.
    """

    def __init__(self, path, top_k, batch_size, context="copy"):
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
        self.context = context
        self.fingerprint = file_fingerprint(path)
        self.vocabulary = vocabulary
        self._warned_past_length = False
        self._whole_word = np.array([is_whole_word(token) for token in vocabulary])  # (V,)
        # The best pieces at the batch's marked places only, ranked inside
        # the compiled forward pass: the pretrainer's (B, P, V) logits at
        # every mask slot (P rounded up), brought back to numpy and
        # partially sorted there (`fill_mask`), cost more than the forward
        # pass itself (bench/distillation_labelling.py --masked_lm).
        backbone = self.model.backbone
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name) for name in backbone.input
        }
        # (1, N): each place as `row * T + position` in the batch's
        # sequences laid end to end.
        inputs["places"] = keras.Input(shape=(None,), dtype="int32", name="places")
        sequence = backbone({name: inputs[name] for name in backbone.input})["sequence_output"]
        flat = keras.ops.reshape(sequence, (1, -1, backbone.hidden_dim))  # (1, B * T, H)
        logits = self.model.mlm_head(flat, mask_positions=inputs["places"])  # (1, N, V)
        self.asked = min(top_k * _ASKED, len(vocabulary))
        _, best = keras.ops.top_k(keras.ops.cast(logits, "float32"), self.asked)  # (1, N, asked)
        self._best_pieces = keras.Model(inputs, best)

    def single_pieces(self, words):
        """Those of `words` the masked LM's vocabulary holds as one piece."""
        words = sorted(set(words))
        if not words:
            return set()
        pieces = self.tokenizer.tokenize(tf.constant(words)).row_lengths().numpy()
        return {word for word, count in zip(words, pieces) if count == 1}

    def fill(self, rows, rngs, replaces=None):
        """Replaces, in place, every `TO_REPLACE` word of `rows` (their
        `text_a`, `text_b` or `words`) for which `replaces(word)` holds
        (None: every one), each drawn with the row's `rngs` entry from the
        masked LM's `top_k` words at its place, read in `context`; the
        others stay marked."""
        if self.context == "sentence":
            return self._fill_from_sentences(rows, rngs, replaces)
        # Batched by length, so that a batch pads little.
        places = sorted(marked_places(rows), key=lambda place: len(place[2]))
        for start in range(0, len(places), self.batch_size):
            batch = places[start : start + self.batch_size]
            sentences = [
                " ".join(MASK if w.startswith(TO_REPLACE) else w for w in words)
                for _, _, words in batch
            ]
            for (index, field, words), ranked in zip(batch, self.ranked_pieces(sentences)):
                ranked = iter(ranked)  # Each place's, in order, up to the masked LM's length.
                filled = []
                for word in words:
                    if word == MASK:
                        next(ranked, None)
                    elif word.startswith(TO_REPLACE):
                        pieces = next(ranked, None)  # Asked whether replaced or not.
                        if _replaces(replaces, word):
                            word = self._drawn(word, self._whole_words(pieces), rngs[index])
                    filled.append(word)
                set_words(rows[index], field, filled)
        return rows

    def _fill_from_sentences(self, rows, rngs, replaces):
        """`fill` in TinyBERT's context: each replaced word's candidates
        come from its sentence as it came (the marks taken off), that word
        masked, then the sentence whole as the second segment; asked once
        for all the copies of a sentence that replace the word."""
        places = list(marked_places(rows))
        sentences = [tuple(_unmarked(words)) for _, _, words in places]
        candidates = {}  # (sentence's words, place): the whole words ranked there.
        for (_, _, words), sentence in zip(places, sentences):
            for i, word in enumerate(words):
                if word.startswith(TO_REPLACE) and _replaces(replaces, word):
                    candidates.setdefault((sentence, i))
        # Batched by length, so that a batch pads little.
        asked = sorted(candidates, key=lambda key: len(key[0]))
        for start in range(0, len(asked), self.batch_size):
            batch = asked[start : start + self.batch_size]
            first = [" ".join(MASK if j == i else w for j, w in enumerate(s)) for s, i in batch]
            ranked = self.ranked_pieces(first, second=[" ".join(s) for s, _ in batch])
            for key, pieces in zip(batch, ranked):
                candidates[key] = self._whole_words(pieces[0] if len(pieces) else None)
        for (index, field, words), sentence in zip(places, sentences):
            filled = [
                self._drawn(word, candidates[sentence, i], rngs[index])
                if word.startswith(TO_REPLACE) and _replaces(replaces, word)
                else word
                for i, word in enumerate(words)
            ]
            set_words(rows[index], field, filled)
        return rows

    def _whole_words(self, pieces):
        """The `top_k` best of ranked `pieces` that can stand as a word; None
        for a place past the masked LM's length (`pieces` None)."""
        return None if pieces is None else pieces[self._whole_word[pieces]][: self.top_k]

    def _drawn(self, marked, candidates, rng):
        """The `marked` word's replacement, drawn with `rng` from
        `candidates` (ids; `[MASK]` when there are none), or the word
        itself when it had no place (None)."""
        if candidates is None:
            if not self._warned_past_length:
                self._warned_past_length = True
                logger.warning(
                    "distillation.transfer.masked_lm: a sentence is longer than its %d "
                    "pieces; its words past them keep their own word in the copies (warned once)",
                    self.model.backbone.max_sequence_length,
                )
            return marked[len(TO_REPLACE) :]
        if not len(candidates):
            return MASK
        return self.vocabulary[candidates[rng.integers(len(candidates))]]

    def ranked_pieces(self, sentences, second=None):
        """The masked LM's best pieces at each `[MASK]` of `sentences` (at
        most `batch_size` str; `second`: their second segments), in order:
        for each sentence, int (N, `asked`), best first, N its `[MASK]`s
        inside the masked LM's length (a longer sentence is cut)."""
        # A short batch is filled up with copies of its last sentence, the
        # places up to a power of two with the first row's first: few
        # shapes, so few compilations.
        count = len(sentences)
        sentences = sentences + sentences[-1:] * (self.batch_size - count)
        if second is not None:
            second = second + second[-1:] * (self.batch_size - count)
        inputs, positions = masked_sentence_inputs(
            self.tokenizer, sentences, second, self.model.backbone.max_sequence_length
        )
        del inputs["mask_positions"]  # Its slots padded per row; `places` instead.
        length = inputs["token_ids"].shape[1]
        at = [row * length + p for row, masks in enumerate(positions[:count]) for p in masks]
        inputs["places"] = np.zeros((1, _padded_count(len(at))), "int32")
        inputs["places"][0, : len(at)] = at
        best = np.asarray(self._best_pieces.predict_on_batch(inputs))[0]
        ends = np.cumsum([len(masks) for masks in positions[:count]])
        return np.split(best[: len(at)], ends[:-1])


def _replaces(replaces, marked):
    """Whether a `fill` with `replaces` replaces the `marked` word."""
    return replaces is None or replaces(marked[len(TO_REPLACE) :])


def _unmarked(words):
    """`words` with their replacement marks taken off."""
    return [w[len(TO_REPLACE) :] if w.startswith(TO_REPLACE) else w for w in words]


def _padded_count(count):
    """`count` rounded up to a power of two, at least 64."""
    return max(64, 1 << (count - 1).bit_length())


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
        """Replaces, in place, every `TO_REPLACE` word of `rows`: in the
        `copy` context first the split ones by neighbours, then the rest by
        the masked LM, which reads them in their copies; in the `sentence`
        context the masked LM's first, as it reads each sentence as it
        came."""
        marked = [
            w[len(TO_REPLACE) :]
            for _, _, words in marked_places(rows)
            for w in words
            if w.startswith(TO_REPLACE)
        ]
        single = self.masked_lm_words.single_pieces(marked)
        if self.masked_lm_words.context == "sentence":
            self.masked_lm_words.fill(rows, rngs, replaces=lambda word: word in single)
            return self.neighbour_words.fill(rows, rngs)
        self.neighbour_words.fill(rows, rngs, replaces=lambda word: word not in single)
        return self.masked_lm_words.fill(rows, rngs)
