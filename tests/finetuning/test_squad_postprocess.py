"""SQuAD v2.0 "no answer" decision on hand-set logits.

As in google-research/bert `run_squad.py`: the null score is
start[CLS] + end[CLS] (the smallest over a question's windows), the best
span scores start[s] + end[e], and "" is predicted only when
null - best > `null_score_diff_threshold`.
"""

import numpy as np
import pytest

import pipelines.tasks as tasks
from keras_bert.finetuning.squad_postprocess import squad_predictions

pytestmark = pytest.mark.backend_independent


def unanswerable_question(fixtures):
    # q5: "Who won the 1920s cup?" on "John Smith visited Paris in 1920s, ...".
    examples = tasks.read_squad(fixtures / "squad/dev-v2.0.json", version_2=True)
    return [e for e in examples if e.qid == "q5"]


def span_positions(feature, first_word, last_word):
    """First and last WordPiece positions of a run of context words."""
    positions = [p for p, w in feature.token_to_word.items() if first_word <= w <= last_word]
    return min(positions), max(positions)


def test_null_score_diff_threshold(fixtures, tokenizer):
    examples = unanswerable_question(fixtures)
    features = tasks.squad_features(examples, tokenizer)
    assert len(features) == 1
    start, end = span_positions(features[0], 0, 1)  # "John Smith".
    # (1, T) with T past the feature's length: the padding is never read.
    starts = np.full((1, 32), -10.0, dtype="float32")
    ends = starts.copy()
    starts[0, 0], ends[0, 0] = 4.0, 2.5  # Null score 6.5.
    starts[0, start], ends[0, end] = 3.0, 2.0  # Best span score 5.0.

    def predict(threshold):
        return squad_predictions(
            examples,
            features,
            starts,
            ends,
            tokenizer.vocabulary,
            version_2=True,
            null_score_diff_threshold=threshold,
        )

    predictions, null_odds = predict(0.0)
    assert predictions == {"q5": ""}
    assert null_odds == {"q5": pytest.approx(6.5 - 5.0)}
    assert predict(1.0)[0] == {"q5": ""}
    # The null answer must beat the span by strictly more than the threshold.
    assert predict(1.5)[0] == {"q5": "John Smith"}
    assert predict(2.0)[0] == {"q5": "John Smith"}
    # v1 ignores the [CLS] score.
    predictions, null_odds = squad_predictions(
        examples, features, starts, ends, tokenizer.vocabulary
    )
    assert predictions == {"q5": "John Smith"} and null_odds == {}


def test_null_score_is_the_smallest_over_windows(fixtures, tokenizer):
    examples = unanswerable_question(fixtures)
    features = tasks.squad_features(examples, tokenizer, max_seq_length=20, doc_stride=4)
    assert len(features) > 1
    start, end = span_positions(features[0], 0, 1)  # "John Smith", first window only.
    starts = np.full((len(features), 20), -10.0, dtype="float32")
    ends = starts.copy()
    starts[:, 0], ends[:, 0] = 4.0, 2.5  # Null 6.5 in every window...
    starts[-1, 0], ends[-1, 0] = 1.0, 1.0  # ...but 2.0 in the last one.
    starts[0, start], ends[0, end] = 3.0, 2.0  # Best span score 5.0.
    predictions, null_odds = squad_predictions(
        examples, features, starts, ends, tokenizer.vocabulary, version_2=True
    )
    assert null_odds == {"q5": pytest.approx(2.0 - 5.0)}
    assert predictions == {"q5": "John Smith"}
