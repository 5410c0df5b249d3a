"""Sentence and sentence-pair datasets: GLUE TSVs and generic CSV/TSV/JSONL.

Each reader returns a list of `Example`s; `classification_features` turns
them into packed ids for `features.make_dataset`. Column layouts follow the
GLUE distribution (and `run_classifier.py`'s processors): CoLA's train and
dev files have no header, every other file has one.
"""

import csv
import dataclasses
import json
import math
import os

import tensorflow as tf

from pipelines.tasks.errors import TaskDataError, text_file_errors
from pipelines.tasks.features import pack_pair, tokenize_texts
from pipelines.tasks.task_files import is_file
from pipelines.text_files import open_text

# Some GLUE sentences (QQP, MNLI parses) exceed csv's default 128 KiB field.
csv.field_size_limit(2**31 - 1)


@dataclasses.dataclass
class Example:
    """One sentence (pair) with its label (str, float or None)."""

    text_a: str
    text_b: str = None
    label: object = None
    guid: str = ""


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """Where a GLUE task keeps its columns, and its label names.

    Columns are 0-based indices; a negative index counts from the end (MNLI
    has a variable number of annotator columns before `gold_label`).
    `label_names` is None for regression (STS-B).
    """

    text_a: int
    text_b: int
    label: int
    label_names: tuple
    header: bool = True
    dev_files: tuple = ("dev.tsv",)


GLUE_TASKS = {
    "cola": GlueTask(3, None, 1, ("0", "1"), header=False),
    "sst2": GlueTask(0, None, 1, ("0", "1")),
    "mrpc": GlueTask(3, 4, 0, ("0", "1")),
    "qqp": GlueTask(3, 4, 5, ("0", "1")),
    "stsb": GlueTask(7, 8, 9, None),
    "mnli": GlueTask(
        8,
        9,
        -1,
        ("contradiction", "entailment", "neutral"),
        dev_files=("dev_matched.tsv", "dev_mismatched.tsv"),
    ),
    "qnli": GlueTask(1, 2, 3, ("entailment", "not_entailment")),
    "rte": GlueTask(1, 2, 3, ("entailment", "not_entailment")),
    "wnli": GlueTask(1, 2, 3, ("0", "1")),
}
GLUE_DIRS = {
    "cola": "CoLA",
    "sst2": "SST-2",
    "mrpc": "MRPC",
    "qqp": "QQP",
    "stsb": "STS-B",
    "mnli": "MNLI",
    "qnli": "QNLI",
    "rte": "RTE",
    "wnli": "WNLI",
}


def glue_data_dir(task, data_dir):
    """`data_dir` itself, or its GLUE sub-folder (`glue/SST-2`) if present."""
    nested = os.path.join(data_dir, GLUE_DIRS[task])
    return nested if tf.io.gfile.isdir(nested) else data_dir


def read_glue(task, path):
    """Examples of one GLUE TSV file (`train.tsv`, `dev.tsv`, ...).

    Raises:
        TaskDataError: missing file, a row with too few columns or with
            text past the file's last column (a tab inside a sentence),
            an unknown label or a non-numeric STS-B score, naming file and
            line.
    """
    spec = GLUE_TASKS[task]
    columns = [spec.text_a, spec.label] + ([spec.text_b] if spec.text_b is not None else [])
    needed = max(c + 1 if c >= 0 else -c for c in columns)
    rows = _read_tsv(path)
    # CoLA's files have no header: its four columns are fixed.
    width = max(len(next(rows, (1, []))[1]), needed) if spec.header else needed
    examples = []
    for line_number, row in rows:
        if len(row) < needed:
            raise TaskDataError(
                f"{path}:{line_number}: expected at least {needed} tab-separated "
                f"columns for {task}, found {len(row)}"
            )
        _refuse_split_text(row, width, path, line_number)
        label = _parse_label(row[spec.label], spec.label_names, path, line_number)
        examples.append(
            Example(
                text_a=row[spec.text_a],
                text_b=row[spec.text_b] if spec.text_b is not None else None,
                label=label,
                guid=f"{os.path.basename(path)}-{line_number}",
            )
        )
    return examples


# The official unlabelled test files name their columns in a header whose
# first column is the example's index (QQP: `id`), which the leaderboard's
# submission file repeats.
GLUE_TEST_COLUMNS = {
    "cola": ("sentence", None),
    "sst2": ("sentence", None),
    "mrpc": ("#1 String", "#2 String"),
    "qqp": ("question1", "question2"),
    "stsb": ("sentence1", "sentence2"),
    "mnli": ("sentence1", "sentence2"),  # Also AX's diagnostic.tsv.
    "qnli": ("question", "sentence"),
    "rte": ("sentence1", "sentence2"),
    "wnli": ("sentence1", "sentence2"),
}


def is_glue_test_file(path):
    """Whether `path` has the test files' layout (a header starting `index`
    or `id`) rather than the train/dev one."""
    first = next(_read_tsv(path), (None, [""]))[1]
    return bool(first) and first[0].strip() in ("index", "id")


def read_glue_test(task, path):
    """Unlabelled examples of an official GLUE test file; `guid` is its
    index column.

    Raises:
        TaskDataError: missing file, a header without the task's columns, a
            short row or one with text past the header's last column (a tab
            inside a sentence), naming file and line.
    """
    text_a, text_b = GLUE_TEST_COLUMNS[task]
    rows = _read_tsv(path)
    _, header = next(rows, (1, []))
    header = [h.strip() for h in header]
    missing = [c for c in (header[:1] + [text_a, text_b]) if c and c not in header]
    if not header or header[0] not in ("index", "id") or missing:
        raise TaskDataError(
            f"{path}:1: a GLUE {task} test file has a header 'index' "
            f"(or 'id'), {text_a!r}{f' and {text_b!r}' if text_b else ''}; "
            f"found {header}"
        )
    a, b = header.index(text_a), header.index(text_b) if text_b else None
    examples = []
    for line_number, row in rows:
        if len(row) < len(header):
            raise TaskDataError(
                f"{path}:{line_number}: expected {len(header)} tab-separated "
                f"columns as in the header, found {len(row)}"
            )
        _refuse_split_text(row, len(header), path, line_number)
        examples.append(
            Example(text_a=row[a], text_b=row[b] if b is not None else None, guid=row[0])
        )
    return examples


def _parse_label(value, label_names, path, line_number):
    value = value.strip()
    if label_names is None:
        try:
            score = float(value)
        except ValueError:
            score = math.nan
        if not math.isfinite(score):  # nan and inf parse, but train to NaN.
            raise TaskDataError(f"{path}:{line_number}: score {value!r} is not a finite number")
        return score
    if value not in label_names:
        raise TaskDataError(
            f"{path}:{line_number}: unknown label {value!r}; expected one of {list(label_names)}"
        )
    return value


def _refuse_split_text(row, width, path, line_number):
    """A row with text past the last of a file's `width` columns: a tab
    inside a sentence split it, and what follows the tab would be dropped.
    (Empty cells there, a trailing tab, lose nothing.)"""
    if any(cell.strip() for cell in row[width:]):
        raise TaskDataError(
            f"{path}:{line_number}: expected {width} tab-separated columns, found "
            f"{len(row)} (a tab inside a sentence? the text after it would be lost)"
        )


def _read_tsv(path):
    """`(line number, cells)` of each row with text, the header included."""
    if not is_file(path):
        raise TaskDataError(f"{path}: no such file")
    with open_text(path, TaskDataError, newline="") as f, text_file_errors(path):
        # GLUE files are plain tab-separated, without quoting (as the
        # original processors read them: `quotechar=None`).
        reader = csv.reader(f, delimiter="\t", quotechar=None)
        for row in reader:
            if not row or not any(cell.strip() for cell in row):
                continue
            yield reader.line_num, row


def read_table(path, text_column, text_b_column=None, label_column=None):
    """Examples from a CSV, TSV or JSONL file with named columns.

    The format comes from the extension (`.csv`, `.tsv`, `.jsonl`/`.json`).
    CSV and TSV need a header row naming the columns; each JSONL line is an
    object. Labels are returned as `canonical_label` strings; the caller
    turns them into class ids or floats.

    Raises:
        TaskDataError: missing file, unknown extension, a missing column,
            an unparsable line, an empty label or a TSV quote left open,
            naming file and line.
    """
    if not is_file(path):
        raise TaskDataError(f"{path}: no such file")
    wanted = [c for c in (text_column, text_b_column, label_column) if c]
    extension = os.path.splitext(path)[1].lower()
    examples = []
    if extension in (".csv", ".tsv"):
        with open_text(path, TaskDataError, newline="") as f, text_file_errors(path):
            reader = csv.DictReader(f, delimiter="," if extension == ".csv" else "\t")
            missing = [c for c in wanted if c not in (reader.fieldnames or [])]
            if missing:
                raise TaskDataError(
                    f"{path}:1: header has no column(s) {missing}; found {reader.fieldnames}"
                )
            previous_line = reader.line_num
            for row in reader:
                if None in row or any(row[c] is None for c in wanted):
                    raise TaskDataError(
                        f"{path}:{reader.line_num}: expected {len(reader.fieldnames)} "
                        "columns as in the header"
                    )
                # A quote opened and not closed on its line swallows the
                # rows after it into one field (CSV allows line breaks in
                # quoted fields; TSV exports do not write them).
                # (An unused column left off the end is None.)
                if extension == ".tsv" and any(
                    value is not None and ("\n" in value or "\r" in value) for value in row.values()
                ):
                    raise TaskDataError(
                        f"{path}:{previous_line + 1}: a quoted field runs on to "
                        f"line {reader.line_num} (a stray '\"'?); a TSV field "
                        "cannot hold a line break"
                    )
                previous_line = reader.line_num
                examples.append(
                    _table_example(
                        row, text_column, text_b_column, label_column, path, reader.line_num
                    )
                )
    elif extension in (".jsonl", ".json"):
        with open_text(path, TaskDataError) as f:
            for line_number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                # A JSON array's "[" line is no JSON, and a one-line array
                # no row: either would blame a line or a missing key.
                if line.lstrip().startswith("["):
                    raise TaskDataError(
                        f"{path}:{line_number}: a JSON array; a table is JSON Lines "
                        "(.jsonl: one object per line)"
                    )
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise TaskDataError(
                        f"{path}:{line_number}: invalid JSON: {error.msg}"
                    ) from None
                missing = [c for c in wanted if not isinstance(row, dict) or c not in row]
                if missing:
                    raise TaskDataError(f"{path}:{line_number}: missing key(s) {missing}")
                examples.append(
                    _table_example(row, text_column, text_b_column, label_column, path, line_number)
                )
    else:
        raise TaskDataError(f"{path}: unknown file type {extension!r}; use .csv, .tsv or .jsonl")
    return examples


def _table_example(row, text_column, text_b_column, label_column, path, line_number):
    label = None
    if label_column:
        label = canonical_label(row[label_column])
        if label is None:
            raise TaskDataError(f"{path}:{line_number}: empty label in column {label_column!r}")
    return Example(
        text_a=str(row[text_column]),
        text_b=str(row[text_b_column]) if text_b_column else None,
        label=label,
        guid=f"{os.path.basename(path)}-{line_number}",
    )


def canonical_label(value):
    """One spelling per label: surrounding blanks dropped and whole numbers
    written as integers (`1`, `1.0` and ` 1 ` are one class); None for a
    missing or blank label."""
    if value is None or isinstance(value, bool):
        return None if value is None else str(value).lower()
    text = str(value).strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        return text
    if math.isfinite(number) and number == int(number):
        return str(int(number))
    return text


def find_split_file(data_dir, split):
    """`data_dir/{split}.{tsv,csv,jsonl,json}`, the first that exists."""
    for extension in (".tsv", ".csv", ".jsonl", ".json"):
        path = os.path.join(data_dir, split + extension)
        if is_file(path):
            return path
    raise TaskDataError(f"{data_dir}: no {split}.tsv, {split}.csv or {split}.jsonl file")


def classification_features(examples, tokenizer, max_seq_length):
    """Packed `token_ids` / `segment_ids` lists for `make_dataset`."""
    ids_a = tokenize_texts(tokenizer, [e.text_a for e in examples])
    has_b = [e.text_b is not None for e in examples]
    ids_b = tokenize_texts(tokenizer, [e.text_b for e in examples if e.text_b is not None])
    ids_b = iter(ids_b)
    token_ids, segment_ids = [], []
    for a, b in zip(ids_a, has_b):
        tokens, segments = pack_pair(
            a, next(ids_b) if b else None, max_seq_length, tokenizer.cls_id, tokenizer.sep_id
        )
        token_ids.append(tokens)
        segment_ids.append(segments)
    return {"token_ids": token_ids, "segment_ids": segment_ids}
