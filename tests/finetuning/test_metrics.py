"""Each official metric against values worked out by hand."""

import math

import pytest

from keras_bert.finetuning import metrics

pytestmark = pytest.mark.backend_independent


def test_accuracy_and_binary_f1():
    labels = [1, 0, 1, 1, 0]
    preds = [1, 1, 0, 1, 0]
    assert metrics.accuracy(labels, preds) == pytest.approx(3 / 5)
    # TP=2, FP=1, FN=1: F1 = 2·2 / (3 + 3).
    assert metrics.binary_f1(labels, preds) == pytest.approx(4 / 6)
    assert metrics.binary_f1([0, 0], [0, 0]) == 0.0


def test_matthews_binary_by_hand():
    labels = [1, 1, 1, 0, 0, 0, 0]
    preds = [1, 1, 0, 0, 0, 0, 1]
    tp, tn, fp, fn = 2, 3, 1, 1
    expected = (tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    assert metrics.matthews_corrcoef(labels, preds) == pytest.approx(expected)
    assert expected == pytest.approx(5 / 12)
    # Constant predictions: undefined, reported as 0 like scikit-learn.
    assert metrics.matthews_corrcoef([0, 1, 1], [1, 1, 1]) == 0.0
    assert metrics.matthews_corrcoef([0, 1], [1, 0]) == pytest.approx(-1.0)


def test_matthews_multiclass_matches_formula():
    # 3 classes: t=[0,0,1,2], p=[0,1,1,2]; c=3, s=4, t_k=[2,1,1], p_k=[1,2,1].
    # (c·s − t·p) / sqrt((s² − t·t)(s² − p·p)) = (12 − 5) / sqrt(10·10).
    assert metrics.matthews_corrcoef([0, 0, 1, 2], [0, 1, 1, 2]) == pytest.approx(0.7)


def test_pearson_and_spearman():
    x = [1.0, 2.0, 3.0, 4.0]
    assert metrics.pearson(x, [2.0, 4.0, 6.0, 8.0]) == pytest.approx(1.0)
    assert metrics.pearson(x, [4.0, 3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    # x̄=2.5, ȳ=2: dx=[-1.5,-.5,.5,1.5], dy=[-1,1,0,0]; Σdxdy = 1,
    # Σdx² = 5, Σdy² = 2 → 1 / sqrt(10).
    assert metrics.pearson(x, [1.0, 3.0, 2.0, 2.0]) == pytest.approx(1 / math.sqrt(10))
    # Monotone but not linear: Spearman 1, Pearson below 1.
    assert metrics.spearman(x, [1.0, 10.0, 100.0, 1000.0]) == pytest.approx(1.0)
    # Ties take average ranks: y ranks [1, 3.5, 3.5, 2] vs [1, 2, 3, 4];
    # dy = [-1.5, 1, 1, -.5]: Σdxdy = 2.25 - .5 + .5 - .75 = 1.5,
    # Σdx² = 5, Σdy² = 4.5.
    assert metrics.spearman(x, [0.0, 5.0, 5.0, 1.0]) == pytest.approx(1.5 / math.sqrt(5 * 4.5))


def test_glue_metrics_agree_with_scipy_and_sklearn():
    np = pytest.importorskip("numpy")
    stats = pytest.importorskip("scipy.stats")
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, 200).astype(float)
    b = a + rng.normal(size=200)
    assert metrics.spearman(a, b) == pytest.approx(stats.spearmanr(a, b)[0])
    assert metrics.pearson(a, b) == pytest.approx(stats.pearsonr(a, b)[0])
    y, p = rng.integers(0, 3, 100), rng.integers(0, 3, 100)
    assert metrics.matthews_corrcoef(y, p) == pytest.approx(sk.matthews_corrcoef(y, p))
    assert metrics.binary_f1(y > 0, p > 0, positive=True) == pytest.approx(
        sk.f1_score(y > 0, p > 0)
    )


def test_squad_normalisation():
    assert metrics.normalize_answer("The  Denver Broncos!") == "denver broncos"
    assert metrics.normalize_answer("an apple, a pear") == "apple pear"
    # Articles only as whole words.
    assert metrics.normalize_answer("Theatre") == "theatre"


def test_squad_v1_exact_and_f1():
    gold = {"q1": ["Denver Broncos", "The Denver Broncos"], "q2": ["1920s"], "q3": ["x"]}
    preds = {"q1": "the denver broncos.", "q2": "the 1920s and 1930s"}
    scores = metrics.squad_v1_scores(gold, preds)
    # q1 exact; q2: pred "1920s and 1930s" (3 tokens) vs "1920s": P=1/3, R=1,
    # F1 = 0.5; q3 has no prediction and scores 0.
    assert scores["exact_match"] == pytest.approx(100 / 3)
    assert scores["f1"] == pytest.approx(100 * (1 + 0.5) / 3)


def test_squad_f1_token_overlap_by_hand():
    f1 = metrics.squad_f1("red green blue", "green blue yellow orange")
    # overlap 2: P = 2/3, R = 2/4 → F1 = 2·(2/3)(1/2) / (2/3 + 1/2) = 4/7.
    assert f1 == pytest.approx(4 / 7)
    assert metrics.squad_f1("", "", version=1) == 0.0
    assert metrics.squad_f1("", "", version=2) == 1.0


def test_squad_v2_no_answer():
    gold = {"a": ["Paris"], "b": [], "c": []}
    preds = {"a": "Paris", "b": "", "c": "London"}
    scores = metrics.squad_v2_scores(gold, preds)
    assert scores["exact"] == pytest.approx(200 / 3)
    assert scores["HasAns_exact"] == 100.0
    assert scores["NoAns_exact"] == 50.0
    assert scores["NoAns_total"] == 2


def test_get_entities_iob2_and_iob1():
    assert metrics.get_entities(["B-PER", "I-PER", "O", "B-LOC"]) == [
        ("PER", 0, 1),
        ("LOC", 3, 3),
    ]
    # IOB1: entities open with I-; B- separates adjacent same-type entities.
    assert metrics.get_entities(["I-ORG", "I-ORG", "B-ORG", "O", "I-LOC"]) == [
        ("ORG", 0, 1),
        ("ORG", 2, 2),
        ("LOC", 4, 4),
    ]
    # A type change inside I- tags starts a new entity.
    assert metrics.get_entities(["I-PER", "I-LOC"]) == [("PER", 0, 0), ("LOC", 1, 1)]
    # Sentences never join across a boundary.
    assert metrics.get_entities([["I-PER"], ["I-PER"]]) == [("PER", 0, 0), ("PER", 2, 2)]


def test_entity_f1_seqeval_readme_example():
    # The example from seqeval's README: F1 0.50, accuracy 0.80.
    gold = [["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    pred = [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    scores = metrics.entity_scores(gold, pred)
    assert scores["precision"] == pytest.approx(0.5)
    assert scores["recall"] == pytest.approx(0.5)
    assert scores["f1"] == pytest.approx(0.5)
    assert scores["accuracy"] == pytest.approx(0.8)


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="3 labels, 2 predictions"):
        metrics.accuracy([1, 2, 3], [1, 2])
