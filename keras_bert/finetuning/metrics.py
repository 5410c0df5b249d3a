"""The official fine-tuning metrics, in plain Python and NumPy.

Each function reproduces the script the benchmark is scored with:

- GLUE (`accuracy`, `binary_f1`, `matthews_corrcoef`, `pearson`,
  `spearman`): the definitions used by the GLUE leaderboard (scikit-learn's
  `accuracy_score`, `f1_score` with positive label 1, `matthews_corrcoef`;
  SciPy's `pearsonr`, `spearmanr` with average ranks for ties).
- SQuAD (`squad_v1_scores`, `squad_v2_scores`): the official
  `evaluate-v1.1.py` / `evaluate-v2.0.py` answer normalisation (lower case,
  punctuation, articles a/an/the and extra whitespace removed), exact match
  and bag-of-tokens F1, the maximum over the gold answers.
- NER (`entity_scores`): seqeval's default (CoNLL `conlleval`) chunking:
  IOB1 and IOB2 tags both accepted, micro-averaged entity-level F1.

Scores come back as Python floats; SQuAD scores are percentages, as the
official scripts print them, the others fractions in [0, 1] (or [-1, 1]).
"""

import collections
import re
import string

import numpy as np

# --- Classification and regression (GLUE) ---------------------------------


def accuracy(labels, predictions):
    """Fraction of predictions equal to the labels."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    _check_same_length(labels, predictions)
    return float(np.mean(labels == predictions)) if len(labels) else 0.0


def binary_f1(labels, predictions, positive=1):
    """F1 of the positive class (MRPC, QQP); 0 when there is no positive."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    _check_same_length(labels, predictions)
    true_pos = np.sum((predictions == positive) & (labels == positive))
    predicted = np.sum(predictions == positive)
    actual = np.sum(labels == positive)
    if predicted + actual == 0:
        return 0.0
    return float(2 * true_pos / (predicted + actual))


def matthews_corrcoef(labels, predictions):
    """Matthews correlation (CoLA), the multi-class form of Gorodkin (2004).

    For two classes this is (TP·TN − FP·FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN));
    0 when any factor of the denominator is 0, as in scikit-learn.
    """
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    _check_same_length(labels, predictions)
    classes = np.union1d(labels, predictions)
    index = {c: i for i, c in enumerate(classes)}
    confusion = np.zeros((len(classes), len(classes)), np.float64)
    for t, p in zip(labels, predictions):
        confusion[index[t], index[p]] += 1
    true_per_class = confusion.sum(axis=1)
    pred_per_class = confusion.sum(axis=0)
    correct = np.trace(confusion)
    total = confusion.sum()
    cov_yy_hat = correct * total - np.dot(true_per_class, pred_per_class)
    cov_yy = total**2 - np.dot(true_per_class, true_per_class)
    cov_y_hat = total**2 - np.dot(pred_per_class, pred_per_class)
    if cov_yy * cov_y_hat == 0:
        return 0.0
    return float(cov_yy_hat / np.sqrt(cov_yy * cov_y_hat))


def pearson(labels, predictions):
    """Pearson correlation coefficient (STS-B)."""
    x = np.asarray(labels, np.float64)
    y = np.asarray(predictions, np.float64)
    _check_same_length(x, y)
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt(np.dot(x, x) * np.dot(y, y))
    return float(np.dot(x, y) / denominator) if denominator else 0.0


def spearman(labels, predictions):
    """Spearman rank correlation (STS-B): Pearson of average ranks."""
    return pearson(_average_ranks(labels), _average_ranks(predictions))


def _average_ranks(values):
    values = np.asarray(values, np.float64)
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), np.float64)
    sorted_values = values[order]
    start = 0
    while start < len(values):
        stop = start
        while stop + 1 < len(values) and sorted_values[stop + 1] == sorted_values[start]:
            stop += 1
        # Tied values share the mean of the ranks they occupy (1-based).
        ranks[order[start : stop + 1]] = (start + stop) / 2 + 1
        start = stop + 1
    return ranks


def _check_same_length(a, b):
    if len(a) != len(b):
        raise ValueError(
            "Labels and predictions must have the same length. "
            f"Received: {len(a)} labels, {len(b)} predictions"
        )


# --- SQuAD -----------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text):
    """Official SQuAD normalisation: lower, drop punctuation and articles,
    collapse whitespace."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def squad_exact_match(prediction, gold):
    return float(normalize_answer(prediction) == normalize_answer(gold))


def squad_f1(prediction, gold, version=1):
    """Bag-of-tokens F1 between normalised answers.

    Version 2 scores an empty answer against an empty answer as 1 (the
    no-answer case of `evaluate-v2.0.py`); version 1 scores it 0.
    """
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if version == 2 and (not pred_tokens or not gold_tokens):
        return float(pred_tokens == gold_tokens)
    common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_v1_scores(gold_answers, predictions):
    """`evaluate-v1.1.py`: {"exact_match", "f1"} in percent.

    Args:
        gold_answers: dict question id → list of gold answer strings.
        predictions: dict question id → predicted answer string. A question
            without a prediction scores 0, as in the official script.
    """
    exact = f1 = 0.0
    for qid, golds in gold_answers.items():
        if qid not in predictions:
            continue
        prediction = predictions[qid]
        exact += max(squad_exact_match(prediction, g) for g in golds)
        f1 += max(squad_f1(prediction, g, version=1) for g in golds)
    total = max(len(gold_answers), 1)
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


def squad_v2_scores(gold_answers, predictions):
    """`evaluate-v2.0.py`: {"exact", "f1", "total", "HasAns_*", "NoAns_*"}.

    Args:
        gold_answers: dict question id → list of gold answers, empty for an
            unanswerable question (scored against the empty string).
        predictions: dict question id → predicted answer, "" for no answer.
    """
    exact, f1 = {}, {}
    for qid, golds in gold_answers.items():
        golds = [g for g in golds if normalize_answer(g)] or [""]
        prediction = predictions.get(qid, "")
        exact[qid] = max(squad_exact_match(prediction, g) for g in golds)
        f1[qid] = max(squad_f1(prediction, g, version=2) for g in golds)

    def averaged(qids, prefix=""):
        n = len(qids)
        return {
            f"{prefix}exact": 100.0 * sum(exact[q] for q in qids) / max(n, 1),
            f"{prefix}f1": 100.0 * sum(f1[q] for q in qids) / max(n, 1),
            f"{prefix}total": n,
        }

    scores = averaged(list(gold_answers))
    has_answer = [q for q, golds in gold_answers.items() if any(normalize_answer(g) for g in golds)]
    no_answer = [q for q in gold_answers if q not in set(has_answer)]
    if has_answer:
        scores.update(averaged(has_answer, "HasAns_"))
    if no_answer:
        scores.update(averaged(no_answer, "NoAns_"))
    return scores


# --- Named entities (seqeval) ----------------------------------------------


def get_entities(tags):
    """Chunks of a tag sequence as (type, first, last) word indices.

    seqeval's default rules, which accept IOB1 (an entity may open with
    `I-`; `B-` only separates two adjacent entities of one type) and IOB2
    (every entity opens with `B-`). A list of sentences is joined with an
    `O` between sentences so no entity crosses a sentence boundary.
    """
    if tags and isinstance(tags[0], (list, tuple)):
        tags = [t for sentence in tags for t in list(sentence) + ["O"]]
    chunks = []
    prev_tag, prev_type, begin = "O", "", 0
    for i, chunk in enumerate(list(tags) + ["O"]):
        tag = chunk[0]
        type_ = chunk[1:].split("-", maxsplit=1)[-1] or "_"
        if _end_of_chunk(prev_tag, tag, prev_type, type_):
            chunks.append((prev_type, begin, i - 1))
        if _start_of_chunk(prev_tag, tag, prev_type, type_):
            begin = i
        prev_tag, prev_type = tag, type_
    return chunks


def _end_of_chunk(prev_tag, tag, prev_type, type_):
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != type_


def _start_of_chunk(prev_tag, tag, prev_type, type_):
    if tag in ("B", "S"):
        return True
    if prev_tag in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag not in ("O", ".") and prev_type != type_


def entity_scores(gold_tags, predicted_tags):
    """Micro-averaged entity precision, recall and F1 (seqeval `f1_score`).

    Args:
        gold_tags, predicted_tags: lists of sentences, each a list of tags
            such as `["B-PER", "I-PER", "O"]`, sentence lengths equal.

    Returns:
        {"precision", "recall", "f1", "accuracy"}: fractions; accuracy is
        the per-word tag accuracy (seqeval `accuracy_score`).
    """
    if len(gold_tags) != len(predicted_tags) or any(
        len(g) != len(p) for g, p in zip(gold_tags, predicted_tags)
    ):
        raise ValueError("Gold and predicted tag sequences must have the same lengths.")
    gold = set(get_entities([list(s) for s in gold_tags]))
    predicted = set(get_entities([list(s) for s in predicted_tags]))
    correct = len(gold & predicted)
    precision = correct / len(predicted) if predicted else 0.0
    recall = correct / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if correct else 0.0
    words = [(g, p) for gs, ps in zip(gold_tags, predicted_tags) for g, p in zip(gs, ps)]
    word_accuracy = sum(g == p for g, p in words) / len(words) if words else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "accuracy": word_accuracy,
    }
