"""CoNLL-2003 named-entity files, IOB1 or IOB2.

One word per line, the tag in the last column (`EU NNP B-NP B-ORG`), blank
lines between sentences, `-DOCSTART-` lines ignored. Words are tokenized
one by one (as the BERT paper does for NER, section 5.3); the first
WordPiece of each word carries its label, the others the ignored label -1,
and `word_starts` remembers where each word begins so that predictions map
back to one tag per word.
"""

import dataclasses
import re

from pipelines.tasks.errors import TaskDataError
from pipelines.tasks.features import IGNORED_LABEL, tokenize_texts
from pipelines.tasks.task_files import is_file
from pipelines.text_files import open_text

_TAG = re.compile(r"^(O|[BIES]-\S+)$")


@dataclasses.dataclass
class TaggedSentence:
    words: list
    tags: list


def read_conll(path, tagged=True):
    """Sentences of a CoNLL file. With `tagged=False` (text to tag) each
    line's first column is the word, and `tags` is None.

    Raises:
        TaskDataError: missing file, a line with one column, or a tag that
            is neither `O` nor `B-`/`I-`/`E-`/`S-` + type (file and line).
    """
    if not is_file(path):
        raise TaskDataError(f"{path}: no such file")
    sentences, words, tags = [], [], []
    with open_text(path, TaskDataError) as f:
        for line_number, line in enumerate(f, 1):
            columns = line.split()
            if not columns or columns[0] == "-DOCSTART-":
                if words:
                    sentences.append(TaggedSentence(words, tags))
                    words, tags = [], []
                continue
            if not tagged:
                words.append(columns[0])
                continue
            if len(columns) < 2:
                raise TaskDataError(
                    f"{path}:{line_number}: expected a word and a tag, found {line.strip()!r}"
                )
            if not _TAG.match(columns[-1]):
                raise TaskDataError(
                    f"{path}:{line_number}: {columns[-1]!r} is not an IOB tag (O, B-TYPE, I-TYPE)"
                )
            words.append(columns[0])
            tags.append(columns[-1])
    if words:
        sentences.append(TaggedSentence(words, tags))
    if not tagged:
        for sentence in sentences:
            sentence.tags = None
    return sentences


def tag_names(sentences):
    """Sorted tags seen in `sentences`, `O` first."""
    tags = {t for s in sentences for t in s.tags}
    return ["O"] + sorted(tags - {"O"})


def _words_that_fit(word_pieces, budget):
    """How many of a sentence's words (given as their pieces) fit in
    `budget` pieces: those before the first that does not fit, after which
    the rest of the sentence is cut."""
    used = 0
    for count, pieces in enumerate(word_pieces):
        used += len(pieces)
        if used > budget:
            return count
    return len(word_pieces)


def _sentence_pieces(sentences, tokenizer):
    """Per sentence, the pieces of each word (one tokenizer call)."""
    pieces = iter(tokenize_texts(tokenizer, [w for s in sentences for w in s.words]))
    return [[next(pieces) for _ in s.words] for s in sentences]


def words_cut(sentences, tokenizer, max_seq_length):
    """`(words, sentences)`: how many words lie past `max_seq_length - 2`
    pieces, and in how many sentences (`tagging_features` cuts them)."""
    cut = [
        len(pieces) - _words_that_fit(pieces, max_seq_length - 2)
        for pieces in _sentence_pieces(sentences, tokenizer)
    ]
    return sum(cut), sum(1 for c in cut if c)


def tagging_features(sentences, tokenizer, max_seq_length, label_names):
    """Packed ids, per-token labels and word starts for `make_dataset`.

    Words past `max_seq_length - 2` pieces are cut (`words_cut` counts
    them); `word_starts[i][j]` is the token position of word j of sentence
    i, or -1 when the word was cut or tokenized to nothing (such words are
    predicted `O`).

    Returns:
        (features, labels, word_starts): features a dict of `token_ids`,
        `segment_ids`; labels a list of per-token label ids (-1 = ignored).
    """
    index = {name: i for i, name in enumerate(label_names)}
    features = {"token_ids": [], "segment_ids": []}
    labels, word_starts = [], []
    for sentence, pieces in zip(sentences, _sentence_pieces(sentences, tokenizer)):
        tokens, token_labels, starts = [tokenizer.cls_id], [IGNORED_LABEL], []
        fit = _words_that_fit(pieces, max_seq_length - 2)
        tags = sentence.tags or ["O"] * len(sentence.words)  # Untagged: unused.
        for j, (word_pieces, tag) in enumerate(zip(pieces, tags)):
            if j >= fit or not word_pieces:
                starts.append(-1)
                continue
            starts.append(len(tokens))
            tokens.extend(word_pieces)
            token_labels.append(index.get(tag, index["O"]))
            token_labels.extend([IGNORED_LABEL] * (len(word_pieces) - 1))
        tokens.append(tokenizer.sep_id)
        token_labels.append(IGNORED_LABEL)
        features["token_ids"].append(tokens)
        features["segment_ids"].append([0] * len(tokens))
        labels.append(token_labels)
        word_starts.append(starts)
    return features, labels, word_starts
