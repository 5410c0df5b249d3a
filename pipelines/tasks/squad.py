"""SQuAD v1.1 / v2.0 JSON into sliding-window span features.

Offsets are kept at the word level, as google-research/bert `run_squad.py`
does: the context is split on whitespace into words (with a character →
word map for the answer offsets), every word is tokenized on its own, and
each WordPiece remembers its word. A predicted token span therefore maps
to a run of original words, which `keras_bert.finetuning.squad_postprocess`
trims back to the exact substring of the original text. (tensorflow-text's
`tokenize_with_offsets` was not used: with lower-casing its offsets index
the accent-stripped text, not the original.)

Defaults follow the paper: max_seq_length 384, doc_stride 128,
max_query_length 64.
"""

import dataclasses
import json
import logging

from pipelines.limits import SQUAD_DOC_STRIDE, SQUAD_MAX_QUERY_LENGTH
from pipelines.tasks.errors import TaskDataError
from pipelines.tasks.features import tokenize_texts
from pipelines.tasks.task_files import is_file
from pipelines.text_files import open_text

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class SquadExample:
    qid: str
    question: str
    context: str
    doc_words: list
    answers: list  # Gold answer texts ([] when unanswerable).
    is_impossible: bool = False
    start_word: int = -1  # Word span of the first answer (training).
    end_word: int = -1


@dataclasses.dataclass
class SquadFeature:
    example_index: int
    token_ids: list
    segment_ids: list
    token_to_word: dict  # Context token position → word index.
    token_is_max_context: dict  # Position → bool (best window for it).
    start_position: int = 0
    end_position: int = 0


def _is_whitespace(ch):
    return ch in " \t\r\n" or ord(ch) == 0x202F


def split_words(context):
    """Whitespace words and, per character, the index of its word."""
    words, char_to_word = [], []
    previous_is_space = True
    for ch in context:
        if _is_whitespace(ch):
            previous_is_space = True
        else:
            if previous_is_space:
                words.append(ch)
            else:
                words[-1] += ch
            previous_is_space = False
        char_to_word.append(len(words) - 1)
    return words, char_to_word


def read_squad(path, version_2=False, training=False):
    """Examples of a SQuAD JSON file.

    With `training`, each answerable question keeps the word span of its
    first answer; questions whose answer text cannot be found at its
    `answer_start` are dropped (as `run_squad.py` does) and counted in a
    warning that names the first; when most are, the file is refused.

    Without `training` (questions to answer or score), every question id
    must be unique: answers and scores are keyed by id.

    Raises:
        TaskDataError: missing file, invalid JSON, a missing key, a
            `context`/`question`/answer `text` that is not text, or (not
            `training`) a repeated question id, naming the file and the
            JSON position (`data[0].paragraphs[3].qas[1]`); or more than
            half of the answers off their offsets.
    """
    if not is_file(path):
        raise TaskDataError(f"{path}: no such file")
    try:
        with open_text(path, TaskDataError) as f:
            data = json.load(f)
    except json.JSONDecodeError as error:
        raise TaskDataError(f"{path}:{error.lineno}: invalid JSON: {error.msg}") from None
    examples, misplaced, answerable, seen_ids = [], [], 0, {}
    try:
        articles = data["data"]
    except (KeyError, TypeError):
        raise TaskDataError(f"{path}: no top-level 'data' list") from None
    for a, article in enumerate(articles):
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            where = f"data[{a}].paragraphs[{p}]"
            if "context" not in paragraph:
                raise TaskDataError(f"{path}: {where} has no 'context'")
            context = paragraph["context"]
            if not isinstance(context, str):
                raise TaskDataError(
                    f"{path}: {where}: 'context' must be text, not {type(context).__name__}"
                )
            words, char_to_word = split_words(context)
            for q, qa in enumerate(paragraph.get("qas", [])):
                here = f"{where}.qas[{q}]"
                for key in ("id", "question"):
                    if key not in qa:
                        raise TaskDataError(f"{path}: {here} has no {key!r}")
                if not isinstance(qa["question"], str):
                    raise TaskDataError(
                        f"{path}: {here}: 'question' must be text, "
                        f"not {type(qa['question']).__name__}"
                    )
                if not training:
                    # Predictions and scores are keyed by id (`{id: answer}`,
                    # as the official script reads them): a repeated id would
                    # keep one answer for several questions. Compared as
                    # text, the form the id takes in the predictions file.
                    first = seen_ids.setdefault(str(qa["id"]), here)
                    if first != here:
                        raise TaskDataError(
                            f"{path}: question id {qa['id']!r} is repeated ({first} "
                            f"and {here}); answers are keyed by id, so each needs its own"
                        )
                is_impossible = bool(qa.get("is_impossible", False)) and version_2
                answers = [] if is_impossible else qa.get("answers", [])
                if not isinstance(answers, list):
                    raise TaskDataError(
                        f"{path}: {here}: 'answers' must be a list, not {type(answers).__name__}"
                    )
                for answer in answers:
                    if not isinstance(answer, dict) or not {"text", "answer_start"} <= set(answer):
                        raise TaskDataError(
                            f"{path}: {here}: every answer needs 'text' and 'answer_start'"
                        )
                    # The official script compares answers as text.
                    if not isinstance(answer["text"], str):
                        raise TaskDataError(
                            f"{path}: {here} (id {qa['id']!r}): answer 'text' must be "
                            f"text, not {type(answer['text']).__name__}"
                        )
                example = SquadExample(
                    qid=qa["id"],
                    question=qa["question"],
                    context=context,
                    doc_words=words,
                    answers=[x["text"] for x in answers],
                    is_impossible=is_impossible,
                )
                if training and not is_impossible:
                    if not answers:
                        raise TaskDataError(f"{path}: {here} has no answer")
                    answerable += 1
                    if not _locate_answer(example, answers[0], words, char_to_word):
                        misplaced.append(here)
                        continue
                examples.append(example)
    if misplaced:
        message = (
            f"{path}: {len(misplaced)} of {answerable} answers are not at "
            f"their 'answer_start' in the context (first: {misplaced[0]})"
        )
        if 2 * len(misplaced) > answerable:
            raise TaskDataError(message + "; offsets from another file or text?")
        logger.warning("%s; those questions are left out of training.", message)
    return examples


def _locate_answer(example, answer, words, char_to_word):
    """Sets `example`'s word span from `answer`; False when the answer's text
    is not at its `answer_start`."""
    start = answer["answer_start"]
    if not isinstance(start, int):
        return False
    end = start + len(answer["text"]) - 1
    if not 0 <= start <= end < len(char_to_word):
        return False
    example.start_word = char_to_word[start]
    example.end_word = char_to_word[end]
    found = " ".join(words[example.start_word : example.end_word + 1])
    return " ".join(answer["text"].split()) in found


def _max_context(spans, span_index, position):
    """Whether window `span_index` gives `position` the most context
    (min of left and right context, ties to the longer window)."""
    best_score, best_index = None, None
    for index, (start, length) in enumerate(spans):
        end = start + length - 1
        if not start <= position <= end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return best_index == span_index


def doc_spans(num_tokens, window, doc_stride):
    """`run_squad.py`'s windows over a context of `num_tokens` pieces.

    Each window holds up to `window` pieces (what `[CLS] question [SEP] …
    [SEP]` leaves); the next one starts `doc_stride` pieces later (never
    past the end of the current one), and the last one reaches the end. An
    empty context still gets one empty window.

    Returns:
        list of (start, length).

    Raises:
        ValueError: `window` < 1 (the question leaves no room for context:
            the original loops forever) or `doc_stride` < 1.
    """
    if window < 1 or doc_stride < 1:
        raise ValueError(
            "`doc_stride` and the window (max_seq_length - question pieces "
            "- 3) must be positive; lower max_query_length or raise "
            f"max_seq_length. Received: doc_stride={doc_stride}, "
            f"window={window}"
        )
    spans, start = [], 0
    while start < num_tokens or not spans:
        length = min(num_tokens - start, window)
        spans.append((start, length))
        if start + length >= num_tokens:
            break
        start += min(length, doc_stride)
    return spans


def squad_features(
    examples,
    tokenizer,
    max_seq_length=384,
    doc_stride=SQUAD_DOC_STRIDE,
    max_query_length=SQUAD_MAX_QUERY_LENGTH,
    training=False,
):
    """Sliding-window features `[CLS] question [SEP] context window [SEP]`.

    In training, a window that does not contain the whole answer (and every
    window of an unanswerable question) points at `[CLS]` (0, 0).
    """
    questions = tokenize_texts(tokenizer, [e.question for e in examples])
    contexts = {}
    for e in examples:
        contexts.setdefault(e.context, e.doc_words)
    context_list = list(contexts)
    flat_words = [w for c in context_list for w in contexts[c]]
    flat_pieces = iter(tokenize_texts(tokenizer, flat_words))
    word_pieces = {c: [next(flat_pieces) for _ in contexts[c]] for c in context_list}

    features = []
    for example_index, (example, query) in enumerate(zip(examples, questions)):
        query = query[:max_query_length]
        doc_tokens, token_word, word_first_token = [], [], []
        for word_index, pieces in enumerate(word_pieces[example.context]):
            word_first_token.append(len(doc_tokens))
            doc_tokens.extend(pieces)
            token_word.extend([word_index] * len(pieces))
        answer_start = answer_end = None
        if training and not example.is_impossible:
            answer_start = word_first_token[example.start_word]
            if example.end_word + 1 < len(word_first_token):
                answer_end = word_first_token[example.end_word + 1] - 1
            else:
                answer_end = len(doc_tokens) - 1
            answer_start, answer_end = _improve_span(
                doc_tokens, answer_start, answer_end, tokenizer, example.answers[0]
            )
        spans = doc_spans(len(doc_tokens), max_seq_length - len(query) - 3, doc_stride)
        for span_index, (start, length) in enumerate(spans):
            token_ids = [tokenizer.cls_id] + query + [tokenizer.sep_id]
            segment_ids = [0] * len(token_ids)
            token_to_word, is_max = {}, {}
            for i in range(length):
                position = len(token_ids)
                token_to_word[position] = token_word[start + i]
                is_max[position] = _max_context(spans, span_index, start + i)
                token_ids.append(doc_tokens[start + i])
                segment_ids.append(1)
            token_ids.append(tokenizer.sep_id)
            segment_ids.append(1)
            feature = SquadFeature(example_index, token_ids, segment_ids, token_to_word, is_max)
            if answer_start is not None and start <= answer_start and answer_end < start + length:
                offset = len(query) + 2 - start
                feature.start_position = answer_start + offset
                feature.end_position = answer_end + offset
            features.append(feature)
    return features


def _improve_span(doc_tokens, start, end, tokenizer, answer_text):
    """Narrows a word-aligned span to the answer's own pieces, e.g. the
    answer "1895" inside the word "(1895-1943)"."""
    answer = tokenize_texts(tokenizer, [answer_text])[0]
    for new_start in range(start, end + 1):
        for new_end in range(end, new_start - 1, -1):
            if doc_tokens[new_start : new_end + 1] == answer:
                return new_start, new_end
    return start, end
