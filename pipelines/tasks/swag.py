"""SWAG multiple choice (Zellers et al., 2018), the released CSV layout.

Columns used: `sent1` (the context), `sent2` (the start of the ending),
`ending0` ... `ending3` and `label`. As in the BERT paper (section 4.4),
each choice is `[CLS] sent1 [SEP] sent2 + " " + ending_i [SEP]`.
"""

import csv
import dataclasses
import os

from pipelines.tasks.errors import TaskDataError, text_file_errors
from pipelines.tasks.features import pack_pair, tokenize_texts
from pipelines.tasks.task_files import is_file
from pipelines.text_files import open_text

NUM_CHOICES = 4


@dataclasses.dataclass
class ChoiceExample:
    context: str
    endings: list
    label: int = None
    guid: str = ""


def read_swag(path):
    """Examples of a SWAG CSV (train, val; test has no label column).

    Raises:
        TaskDataError: missing file or column, or a label that is not
            0-3 (file and line).
    """
    if not is_file(path):
        raise TaskDataError(f"{path}: no such file")
    required = ["sent1", "sent2"] + [f"ending{i}" for i in range(NUM_CHOICES)]
    examples = []
    with open_text(path, TaskDataError, newline="") as f, text_file_errors(path):
        reader = csv.DictReader(f)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise TaskDataError(f"{path}:1: header has no column(s) {missing}")
        has_label = "label" in reader.fieldnames
        for row in reader:
            if None in row or any(row[c] is None for c in required):
                raise TaskDataError(
                    f"{path}:{reader.line_num}: expected "
                    f"{len(reader.fieldnames)} columns as in the header"
                )
            label = None
            if has_label:
                if row["label"] not in [str(i) for i in range(NUM_CHOICES)]:
                    raise TaskDataError(
                        f"{path}:{reader.line_num}: label {row['label']!r} "
                        f"is not one of 0..{NUM_CHOICES - 1}"
                    )
                label = int(row["label"])
            examples.append(
                ChoiceExample(
                    context=row["sent1"],
                    endings=[
                        f"{row['sent2']} {row[f'ending{i}']}".strip() for i in range(NUM_CHOICES)
                    ],
                    label=label,
                    guid=f"{os.path.basename(path)}-{reader.line_num}",
                )
            )
    return examples


def choice_features(examples, tokenizer, max_seq_length):
    """Per example, C packed sequences padded to one length and concatenated
    (`make_dataset(..., num_choices=C)` folds them back to (C, T))."""
    contexts = tokenize_texts(tokenizer, [e.context for e in examples])
    endings = iter(tokenize_texts(tokenizer, [x for e in examples for x in e.endings]))
    features = {"token_ids": [], "segment_ids": []}
    for example, context in zip(examples, contexts):
        packed = [
            pack_pair(context, next(endings), max_seq_length, tokenizer.cls_id, tokenizer.sep_id)
            for _ in example.endings
        ]
        length = max(len(tokens) for tokens, _ in packed)
        token_ids, segment_ids = [], []
        for tokens, segments in packed:
            pad = length - len(tokens)
            token_ids += tokens + [tokenizer.pad_id] * pad
            segment_ids += segments + [0] * pad
        features["token_ids"].append(token_ids)
        features["segment_ids"].append(segment_ids)
    return features
