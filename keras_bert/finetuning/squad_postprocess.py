"""SQuAD answers from start/end logits: n-best spans mapped to the text.

Follows google-research/bert `run_squad.py` (`write_predictions`): per
question, the `n_best_size` highest start and end logits of every window
form candidate spans (inside the context, start ≤ end, at most
`max_answer_length` pieces, start in its best-context window); the best by
start + end logit wins. The span's WordPieces are mapped to whole original
words and then trimmed to the exact substring matching the tokenized
answer (`final_text`). For v2.0 the `[CLS]` score start[0] + end[0] is the
"no answer" score; "" is predicted when it beats the best span by more
than `null_score_diff_threshold`.
"""

import collections

import numpy as np

from pipelines.bert_tokenizer import basic_split
from pipelines.limits import SQUAD_MAX_ANSWER_LENGTH, SQUAD_N_BEST_SIZE

Candidate = collections.namedtuple("Candidate", "score feature start end")


def _top_indices(logits, n):
    return np.argsort(-logits, kind="stable")[:n].tolist()


def span_candidates(
    features,
    indices,
    start_logits,
    end_logits,
    n_best_size=SQUAD_N_BEST_SIZE,
    max_answer_length=SQUAD_MAX_ANSWER_LENGTH,
):
    """One question's candidate spans, best first (`run_squad.py`).

    Of each window (`features[i]` for i in `indices`, in window order), the
    `n_best_size` highest start and end logits (ties to the lower position)
    pair up; a pair is kept when both ends are context pieces, start ≤ end,
    the span has at most `max_answer_length` pieces and the window gives
    its start the most context. The sort is stable, so equal scores keep
    window, then start-rank, then end-rank order. The SavedModel's
    in-graph `keras_bert.serving.squad_windows.best_spans` must pick the
    first of this list.

    Returns:
        list of `Candidate(score, feature index, start, end)` positions.
    """
    candidates = []
    for index in indices:
        feature = features[index]
        starts, ends = start_logits[index], end_logits[index]
        length = len(feature.token_ids)
        for s in _top_indices(starts[:length], n_best_size):
            for e in _top_indices(ends[:length], n_best_size):
                if s not in feature.token_to_word or e not in feature.token_to_word:
                    continue
                if e < s or e - s + 1 > max_answer_length:
                    continue
                if not feature.token_is_max_context.get(s, False):
                    continue
                candidates.append(Candidate(float(starts[s] + ends[e]), index, s, e))
    candidates.sort(key=lambda c: -c.score)
    return candidates


def squad_predictions(
    examples,
    features,
    start_logits,
    end_logits,
    vocabulary,
    lower_case=True,
    n_best_size=SQUAD_N_BEST_SIZE,
    max_answer_length=SQUAD_MAX_ANSWER_LENGTH,
    version_2=False,
    null_score_diff_threshold=0.0,
    starts=None,
):
    """Predicted answer text per question id.

    Args:
        examples: list of `pipelines.tasks.SquadExample`.
        features: list of `pipelines.tasks.SquadFeature` (any order).
        start_logits, end_logits: arrays (num_features, T), one row per
            feature (T may exceed a feature's length: padding).
        vocabulary: list of str, id → WordPiece.
        lower_case: bool, as the tokenizer.
        n_best_size, max_answer_length: ints (paper defaults 20, 30).
        version_2: bool, allow "no answer".
        null_score_diff_threshold: float, v2 only.
        starts: None, or a dict that receives qid → the answer's first
            word index (None for no answer).

    Returns:
        (predictions, null_odds): dict qid → answer text, and for v2 a dict
        qid → no-answer score minus best span score (empty for v1).
    """
    by_example = collections.defaultdict(list)
    for index, feature in enumerate(features):
        by_example[feature.example_index].append(index)

    chosen = {}  # example index → list of (score, piece text, orig text, first word)
    null_scores = {}
    for example_index, example in enumerate(examples):
        indices = by_example[example_index]
        if version_2:  # [CLS] scores "no answer"; its lowest over the windows.
            null_scores[example_index] = min(
                (float(start_logits[i][0] + end_logits[i][0]) for i in indices),
                default=None,
            )
        candidates = span_candidates(
            features, indices, start_logits, end_logits, n_best_size, max_answer_length
        )
        spans = []
        for c in candidates[: n_best_size * 2]:
            feature = features[c.feature]
            pieces = [vocabulary[i] for i in feature.token_ids[c.start : c.end + 1]]
            piece_text = " ".join(pieces).replace(" ##", "").replace("##", "")
            piece_text = " ".join(piece_text.split())
            first = feature.token_to_word[c.start]
            last = feature.token_to_word[c.end]
            orig_text = " ".join(example.doc_words[first : last + 1])
            spans.append((c.score, piece_text, orig_text, first))
        chosen[example_index] = spans

    # One batched basic-tokenizer call for every candidate's original words.
    originals = sorted({span[2] for spans in chosen.values() for span in spans})
    basic = {}
    if originals:
        words = basic_split(originals, lower_case=lower_case).to_list()
        basic = {o: " ".join(w.decode("utf-8") for w in ws) for o, ws in zip(originals, words)}

    predictions, null_odds = {}, {}
    for example_index, example in enumerate(examples):
        seen, best_text, best_score, best_first = set(), None, None, None
        for score, piece_text, orig_text, first in chosen[example_index]:
            text = final_text(piece_text, orig_text, basic[orig_text])
            if text in seen:
                continue
            seen.add(text)
            if len(seen) > n_best_size:
                break
            if best_text is None:
                best_text, best_score, best_first = text, score, first
        if version_2 and best_text is not None:
            null_odds[example.qid] = null_scores[example_index] - best_score
            if null_odds[example.qid] > null_score_diff_threshold:
                best_text = None
        elif version_2:
            null_odds[example.qid] = 0.0
        predictions[example.qid] = best_text if best_text is not None else ""
        if starts is not None:
            starts[example.qid] = best_first if best_text else None
    return predictions, null_odds


def final_text(piece_text, orig_text, basic_text):
    """The part of `orig_text` (whole original words) that `piece_text`
    (the detokenized WordPieces) covers.

    `basic_text` is `orig_text` after the basic tokenizer (cleaned,
    lower-cased, accents stripped, punctuation split), joined with spaces.
    The two are aligned character by character after removing spaces; if
    that fails (normalisation changed the length), the whole words are
    returned, as in `run_squad.py`'s `get_final_text`.
    """
    start = basic_text.find(piece_text)
    if start < 0:
        return orig_text
    end = start + len(piece_text) - 1

    def strip_spaces(text):
        kept, positions = [], []
        for i, ch in enumerate(text):
            if ch != " ":
                kept.append(ch)
                positions.append(i)
        return "".join(kept), positions

    orig_stripped, orig_positions = strip_spaces(orig_text)
    basic_stripped, basic_positions = strip_spaces(basic_text)
    if len(orig_stripped) != len(basic_stripped):
        return orig_text
    basic_to_stripped = {p: i for i, p in enumerate(basic_positions)}
    if start not in basic_to_stripped or end not in basic_to_stripped:
        return orig_text
    orig_start = orig_positions[basic_to_stripped[start]]
    orig_end = orig_positions[basic_to_stripped[end]]
    return orig_text[orig_start : orig_end + 1]
