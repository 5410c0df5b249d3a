"""Augmented copies (Tang et al. 2019): masking, then an n-gram kept."""

import numpy as np
import pytest

from keras_bert.distillation.augmentation import augmented_row, augmented_text
from keras_bert.distillation.config import TransferConfig

pytestmark = pytest.mark.backend_independent

SENTENCE = "the film is a quiet and moving portrait of two brothers"


def rng(seed=0):
    return np.random.default_rng(seed)


def test_masking_replaces_words_at_its_rate():
    transfer = TransferConfig(mask_probability=0.3, ngram_probability=0.0)
    words = [w for s in range(400) for w in augmented_text(SENTENCE, rng(s), transfer).split()]
    assert len(words) == 400 * len(SENTENCE.split())
    assert abs(words.count("[MASK]") / len(words) - 0.3) < 0.02
    none = TransferConfig(mask_probability=0.0, ngram_probability=0.0)
    assert augmented_text(SENTENCE, rng(), none) == SENTENCE


def test_an_ngram_is_a_run_of_the_words_no_longer_than_ngram_max():
    transfer = TransferConfig(mask_probability=0.0, ngram_probability=1.0, ngram_max=3)
    lengths = set()
    for seed in range(200):
        cut = augmented_text(SENTENCE, rng(seed), transfer)
        assert f" {cut} " in f" {SENTENCE} "
        lengths.add(len(cut.split()))
    assert lengths == {1, 2, 3}


def test_a_pair_is_masked_but_not_cut():
    transfer = TransferConfig(mask_probability=0.0, ngram_probability=1.0)
    pair = {"text_a": "a b c d e f g", "text_b": "h i j k l m", "label": 1}
    assert augmented_row(pair, rng(), transfer) == {**pair, "label": None}
    masked = TransferConfig(mask_probability=1.0)
    assert augmented_row({"text_a": "a b", "text_b": "c", "label": 0}, rng(), masked) == {
        "text_a": "[MASK] [MASK]",
        "text_b": "[MASK]",
        "label": None,
    }


def test_a_tagged_sentence_keeps_whole_words_and_loses_its_tags():
    transfer = TransferConfig(mask_probability=0.3, ngram_probability=0.5, ngram_max=3)
    words = ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."]
    for seed in range(50):
        copy = augmented_row({"words": words, "labels": [1] * 9}, rng(seed), transfer)
        assert copy["labels"] is None and 1 <= len(copy["words"]) <= 9
        assert all(w == "[MASK]" or w in words for w in copy["words"])


def test_a_copy_is_fixed_by_its_seed():
    transfer = TransferConfig(mask_probability=0.5, ngram_probability=0.5)
    assert augmented_text(SENTENCE, rng(7), transfer) == augmented_text(SENTENCE, rng(7), transfer)
