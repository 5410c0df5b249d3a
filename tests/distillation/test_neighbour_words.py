"""A word's neighbours in the teacher's token embeddings, for augmented
copies."""

import numpy as np
import pytest

from keras_bert.distillation.augmentation import TO_REPLACE
from keras_bert.distillation.neighbour_words import NeighbourWords
from keras_bert.models import BertBackbone
from pipelines import BertTokenizer
from tests.finetuning.conftest import FIXTURES

pytestmark = pytest.mark.backend_independent


def neighbour_words(table, top_k=3):
    """`NeighbourWords` of a teacher whose token embeddings are `table`
    (the fixture vocabulary's tokens by 16), which `table(index)` makes
    from the vocabulary's `{token: row}`."""
    vocabulary = (FIXTURES / "vocab.txt").read_text().splitlines()
    backbone = BertBackbone(
        vocabulary_size=len(vocabulary),
        num_layers=1,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
    )
    embeddings = table({token: i for i, token in enumerate(vocabulary)})
    backbone.token_embedding.embeddings.assign(embeddings.astype("float32"))
    return NeighbourWords(backbone, BertTokenizer(str(FIXTURES / "vocab.txt")), top_k)


@pytest.fixture(scope="module")
def neighbours():
    """Neighbours of `fine` (the first axis) in a table where every other
    token lies on another axis but `gold`, `great` and `best`, ever further
    from it, and `##ed` and `[MASK]`, on it but no words."""

    def table(index):
        axes = np.eye(16)
        table = axes[np.random.default_rng(0).integers(1, 16, len(index))]
        table[index["fine"]] = axes[0]
        table[index["gold"]] = axes[0] + 0.1 * axes[2]  # cosine 0.995
        table[index["great"]] = axes[0] + 0.2 * axes[1]  # 0.981
        table[index["best"]] = axes[0] + 0.9 * axes[1]  # 0.743
        table[index["##ed"]] = table[index["[MASK]"]] = 3 * axes[0]  # 1
        return table

    return neighbour_words(table)


def test_the_nearest_whole_words_by_cosine_best_first(neighbours):
    words = neighbours
    assert words.neighbours("fine") == ["gold", "great", "best"]
    assert words.neighbours("FINE") == ["gold", "great", "best"]  # Uncased.
    assert words.neighbours("zzz") == []  # An unknown piece: masked.


def test_marked_words_become_neighbours_or_masks_the_same_for_a_seed(neighbours):
    words = neighbours
    rows = [
        {"text_a": f"a {TO_REPLACE}fine film", "text_b": None, "label": None},
        {"words": ["paris", f"{TO_REPLACE}zzz", "john"], "labels": None},
        {"text_a": "nothing to replace", "text_b": None, "label": None},
    ]
    filled = words.fill([dict(r) for r in rows], [np.random.default_rng(i) for i in range(3)])
    assert filled[0]["text_a"].split()[1] in ["gold", "great", "best"]
    assert filled[1]["words"] == ["paris", "[MASK]", "john"]
    assert filled[2] == rows[2]
    again = words.fill([dict(r) for r in rows], [np.random.default_rng(i) for i in range(3)])
    assert again == filled


def test_a_split_word_by_its_pieces_mean_less_its_own_pieces():
    # TinyBERT looks the words a vocabulary splits up among GloVe's; here,
    # by the mean of the teacher's directions of their pieces: `californias`
    # is `cal ##ifornia ##s`, on e0 + e1, e0 - e1 and e0, whose mean lies on
    # e0, where `paris` is and `john` nearly; every other token is a random
    # direction of 16.
    def table(index):
        e = np.eye(16)
        table = np.random.default_rng(0).normal(size=(len(index), 16))
        table[index["cal"]], table[index["##ifornia"]] = e[0] + e[1], e[0] - e[1]
        table[index["##s"]] = e[0]
        table[index["paris"]] = 2 * e[0]
        table[index["john"]] = e[0] + 0.3 * e[2]
        return table

    words = neighbour_words(table)
    found = words.neighbours("californias")
    assert found[:2] == ["paris", "john"] and "cal" not in found
    rows = [{"text_a": f"{TO_REPLACE}californias wins", "text_b": None, "label": None}]
    assert words.fill(rows, [np.random.default_rng(0)])[0]["text_a"].split()[0] in found
