"""Sentence and sentence-pair datasets: GLUE files and generic tables.

Each reader returns a list of `Example`s; `classification_features` turns
them into packed ids for `features.make_dataset`. A GLUE task reads two
layouts. The GLUE distribution's TSVs are read by column position, as
`run_classifier.py`'s processors read them: CoLA's train and dev files have
no header, every other file has one. A Hugging Face `datasets` export of
the task (a TSV, CSV, JSON, Parquet file or a save_to_disk folder) is read
by the column names of `datasets`' GLUE config, its integer labels mapped
onto the task's label names. Generic tables (`read_table`) name their
columns in the task's config. Every table but the distribution's TSVs is
read by `table_formats.read_rows`. A GLUE TSV is opened once, its header
telling its layout before its rows are read on: `predict` may read a named
pipe.
"""

import contextlib
import csv
import dataclasses
import itertools
import math
import os
import shlex

import tensorflow as tf

from pipelines.labels import canonical_label
from pipelines.tasks.errors import TaskDataError, text_file_errors
from pipelines.tasks.features import pack_pair, tokenize_texts
from pipelines.tasks.table_formats import (
    TABLE_EXTENSIONS,
    delimited_rows,
    hub_shards,
    is_saved_dataset,
    read_rows,
)
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

    `text_a`, `text_b` and `label` are the GLUE distribution's columns,
    0-based; a negative index counts from the end (MNLI has a variable
    number of annotator columns before `gold_label`). `label_names` is None
    for regression (STS-B). `export_columns` are the text columns of
    `datasets`' config of the task, and `export_labels` its class names in
    the order of its integer labels, each with the task's label it is.
    `dev_splits`: the dev files' names without extension (`datasets` calls
    them `validation...`).
    """

    text_a: int
    text_b: int
    label: int
    label_names: tuple
    export_columns: tuple
    export_labels: tuple = ()
    header: bool = True
    dev_splits: tuple = ("dev",)


GLUE_TASKS = {
    "cola": GlueTask(
        3,
        None,
        1,
        ("0", "1"),
        ("sentence", None),
        (("unacceptable", "0"), ("acceptable", "1")),
        header=False,
    ),
    "sst2": GlueTask(
        0, None, 1, ("0", "1"), ("sentence", None), (("negative", "0"), ("positive", "1"))
    ),
    "mrpc": GlueTask(
        3,
        4,
        0,
        ("0", "1"),
        ("sentence1", "sentence2"),
        (("not_equivalent", "0"), ("equivalent", "1")),
    ),
    "qqp": GlueTask(
        3,
        4,
        5,
        ("0", "1"),
        ("question1", "question2"),
        (("not_duplicate", "0"), ("duplicate", "1")),
    ),
    "stsb": GlueTask(7, 8, 9, None, ("sentence1", "sentence2")),
    "mnli": GlueTask(
        8,
        9,
        -1,
        ("contradiction", "entailment", "neutral"),
        ("premise", "hypothesis"),
        (
            ("entailment", "entailment"),
            ("neutral", "neutral"),
            ("contradiction", "contradiction"),
        ),
        dev_splits=("dev_matched", "dev_mismatched"),
    ),
    "qnli": GlueTask(
        1,
        2,
        3,
        ("entailment", "not_entailment"),
        ("question", "sentence"),
        (("entailment", "entailment"), ("not_entailment", "not_entailment")),
    ),
    "rte": GlueTask(
        1,
        2,
        3,
        ("entailment", "not_entailment"),
        ("sentence1", "sentence2"),
        (("entailment", "entailment"), ("not_entailment", "not_entailment")),
    ),
    "wnli": GlueTask(
        1,
        2,
        3,
        ("0", "1"),
        ("sentence1", "sentence2"),
        (("not_entailment", "0"), ("entailment", "1")),
    ),
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
    """`data_dir` itself, or its sub-folder for the task if present: the
    GLUE distribution's (`glue/SST-2`) or the Hub's (`glue/sst2`)."""
    for name in (GLUE_DIRS[task], task):
        nested = os.path.join(data_dir, name)
        if tf.io.gfile.isdir(nested):
            return nested
    return data_dir


def read_glue(task, path, labelled=True):
    """Examples of one GLUE file, in the layout it shows: a `datasets`
    export (`is_glue_export`), the official unlabelled test file (a header
    starting `index` or `id`; read when `labelled` is False), or the GLUE
    distribution's train/dev TSV (`train.tsv`, `dev.tsv`, ...).

    `labelled=False` reads no label from an export or a test file (a
    train/dev TSV's are checked all the same). An export's `idx` column,
    where it has one, is the examples' `guid`.

    Raises:
        TaskDataError: missing file, a row with too few columns or with
            text past the file's last column (a tab inside a sentence), a
            missing column, a column or value of the wrong type (as
            `read_rows` refuses them), an unknown label or a non-numeric
            STS-B score, naming file and line (or row); an unknown label's
            message names the labels the task takes and the generic task
            for others.
    """
    path = os.fspath(path)
    if not _is_tsv(path):
        return _read_glue_export(task, path, labelled)
    with _open_tsv(path) as f:
        header, lines = _header(f)
        if _names_export_columns(task, header):
            return _read_glue_export(task, path, labelled, lines)
        rows = _tsv_rows(lines)
        if not labelled and _is_test_header(header):
            return _glue_test_examples(task, path, rows)
        return _glue_distribution_examples(task, path, rows)


def is_glue_export(task, path):
    """Whether `path` holds a `datasets` export of GLUE `task` rather than
    a GLUE distribution TSV: any other format than TSV, or a TSV whose header
    names `datasets`' text columns (`GlueTask.export_columns`) and `idx`,
    or names them where the distribution's file has other columns (RTE's
    `sentence1 sentence2 label` against `index sentence1 sentence2 label`).
    A header starting with `index` or `id` is the distribution's."""
    path = os.fspath(path)
    if not _is_tsv(path):
        return True
    with _open_tsv(path) as f:
        return _names_export_columns(task, _header(f)[0])


def _names_export_columns(task, header):
    header = [cell.strip() for cell in header]
    spec = GLUE_TASKS[task]
    named = [(p, n) for p, n in zip((spec.text_a, spec.text_b), spec.export_columns) if n]
    if not header or header[0] in ("index", "id") or any(n not in header for _, n in named):
        return False
    return "idx" in header or any(p >= len(header) or header[p] != n for p, n in named)


def _read_glue_export(task, path, labelled, lines=None):
    """`lines`: those of the TSV `path`, opened already (None: `path`'s
    rows, as `read_rows` reads them)."""
    spec = GLUE_TASKS[task]
    text_a, text_b = spec.export_columns
    texts = [c for c in (text_a, text_b) if c]
    labels = ["label"] if labelled else []
    rows = (
        read_rows(path, texts, labels, optional=("idx",))
        if lines is None
        else delimited_rows(path, lines, texts, labels, optional=("idx",))
    )
    name = os.path.basename(path)
    examples = []
    for where, number, row in rows:
        idx = "" if row.get("idx") is None else str(row["idx"]).strip()
        examples.append(
            Example(
                text_a=row[text_a],
                text_b=row[text_b] if text_b else None,
                label=_export_label(task, row["label"], where) if labelled else None,
                guid=idx or f"{name}-{number}",
            )
        )
    return examples


def _export_label(task, value, where):
    """The task's label for a `datasets` label: its integer, its class name
    or the task's own name for it."""
    spec = GLUE_TASKS[task]
    if spec.label_names is None:
        return _parse_score(value, where)
    label = canonical_label(value)
    if label is None:
        raise TaskDataError(f"{where}: empty label in column 'label'")
    known = {str(i): ours for i, (_, ours) in enumerate(spec.export_labels)}
    known.update(spec.export_labels)
    known.update((n, n) for n in spec.label_names)
    if label not in known:
        numbered = [f"{i} ({theirs})" for i, (theirs, _) in enumerate(spec.export_labels)]
        # `datasets` writes -1 where the GLUE test splits have no label.
        unlabelled = " (-1: an unlabelled row, as in a test split)" if label == "-1" else ""
        raise TaskDataError(
            f"{where}: unknown label {label!r}{unlabelled}; {task} takes `datasets`' labels "
            f"{', '.join(numbered[:-1])} and {numbered[-1]}, or those names; "
            + glue_alternative(task, *spec.export_columns)
        )
    return known[label]


def glue_alternative(task, text_a, text_b, label_column="label"):
    """The advice for labels GLUE `task` does not know: the generic task
    that reads the file, with the `--set`s naming its columns (`text_a`
    None: a file without a header, which the generic tasks cannot read)."""
    generic = "classification" if GLUE_TASKS[task].text_b is None else "pair_classification"
    if text_a is None:
        return f"for other labels use --task {generic} on a table whose header names its columns"
    keys = [f"data.text_column={text_a}"]
    keys += [f"data.text_b_column={text_b}"] if text_b else []
    keys += [f"data.label_column={label_column}"] if label_column != "label" else []
    return f"for other labels use --task {generic} " + " ".join(
        f"--set {shlex.quote(key)}" for key in keys
    )


def _glue_distribution_examples(task, path, rows):
    """The examples of a GLUE distribution train/dev TSV's `rows`
    (`_tsv_rows`), the header's first where the task's files have one."""
    spec = GLUE_TASKS[task]
    columns = [spec.text_a, spec.label] + ([spec.text_b] if spec.text_b is not None else [])
    needed = max(c + 1 if c >= 0 else -c for c in columns)
    # CoLA's files have no header: its four columns are fixed.
    header = next(rows, (1, []))[1] if spec.header else None
    width = max(len(header), needed) if spec.header else needed
    advice = glue_alternative(task, None, None)
    if header and len(header) >= needed:
        advice = glue_alternative(
            task,
            header[spec.text_a].strip(),
            header[spec.text_b].strip() if spec.text_b is not None else None,
            header[spec.label].strip(),
        )
    examples = []
    for line_number, row in rows:
        if len(row) < needed:
            raise TaskDataError(
                f"{path}:{line_number}: expected at least {needed} tab-separated "
                f"columns for {task}, found {len(row)}"
            )
        _refuse_split_text(row, width, path, line_number)
        where = f"{path}:{line_number}"
        label = _parse_label(row[spec.label], spec.label_names, where, advice)
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
    with _open_tsv(path) as f:
        return _is_test_header(_header(f)[0])


def _is_test_header(header):
    return bool(header) and header[0].strip() in ("index", "id")


def read_glue_test(task, path):
    """Unlabelled examples of an official GLUE test file; `guid` is its
    index column.

    Raises:
        TaskDataError: missing file, a header without the task's columns, a
            short row or one with text past the header's last column (a tab
            inside a sentence), naming file and line.
    """
    with _open_tsv(path) as f:
        return _glue_test_examples(task, path, _tsv_rows(f))


def _glue_test_examples(task, path, rows):
    """The examples of a GLUE test file's `rows` (`_tsv_rows`), its header
    the first."""
    text_a, text_b = GLUE_TEST_COLUMNS[task]
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


def _parse_label(value, label_names, where, advice):
    value = value.strip()
    if label_names is None:
        return _parse_score(value, where)
    if value not in label_names:
        raise TaskDataError(
            f"{where}: unknown label {value!r}; expected one of {list(label_names)}; {advice}"
        )
    return value


def _parse_score(value, where):
    try:
        score = float(value)
    except (TypeError, ValueError):
        score = math.nan
    if not math.isfinite(score):  # nan and inf parse, but train to NaN.
        raise TaskDataError(f"{where}: score {value!r} is not a finite number")
    return score


def _refuse_split_text(row, width, path, line_number):
    """A row with text past the last of a file's `width` columns: a tab
    inside a sentence split it, and what follows the tab would be dropped.
    (Empty cells there, a trailing tab, lose nothing.)"""
    if any(cell.strip() for cell in row[width:]):
        raise TaskDataError(
            f"{path}:{line_number}: expected {width} tab-separated columns, found "
            f"{len(row)} (a tab inside a sentence? the text after it would be lost)"
        )


def _is_tsv(path):
    return path.lower().endswith(".tsv") and not tf.io.gfile.isdir(path)


@contextlib.contextmanager
def _open_tsv(path):
    """A GLUE TSV, open as text; its reading in the block raises
    `TaskDataError`s naming it."""
    if not is_file(path):
        raise TaskDataError(f"{path}: no such file")
    with open_text(path, TaskDataError, newline="") as f, text_file_errors(path):
        yield f


def _header(lines):
    """`(cells, lines)`: the tab-separated cells of the first line of
    `lines` with text, and `lines` from their start again (those read
    kept, so that a pipe is read once)."""
    read = []
    for line in lines:
        read.append(line)
        cells = line.rstrip("\r\n").split("\t")
        if any(cell.strip() for cell in cells):
            return cells, itertools.chain(read, lines)
    return [], iter(read)


def _tsv_rows(lines):
    """`(line number, cells)` of each row with text, the header included."""
    # GLUE files are plain tab-separated, without quoting (as the original
    # processors read them: `quotechar=None`).
    reader = csv.reader(lines, delimiter="\t", quotechar=None)
    for row in reader:
        if not row or not any(cell.strip() for cell in row):
            continue
        yield reader.line_num, row


def read_table(path, text_column, text_b_column=None, label_column=None):
    """Examples from a table with named columns: CSV, TSV, JSON Lines, JSON,
    Parquet, a `datasets` save_to_disk folder or a split in the Hub's shards
    (`table_formats.read_rows`).

    CSV and TSV need a header row naming the columns. Labels are returned
    as `canonical_label` strings; the caller turns them into class ids or
    floats.

    Raises:
        TaskDataError: what `read_rows` raises (a text that is not a
            string, a label that is null or NaN, ...) or an empty label,
            naming file and line (or row).
    """
    texts = [c for c in (text_column, text_b_column) if c]
    labels = [label_column] if label_column else []
    name = os.path.basename(path)
    return [
        _table_example(row, text_column, text_b_column, label_column, where, f"{name}-{number}")
        for where, number, row in read_rows(path, texts, labels)
    ]


def _table_example(row, text_column, text_b_column, label_column, where, guid):
    label = None
    if label_column:
        label = canonical_label(row[label_column])
        if label is None:
            raise TaskDataError(f"{where}: empty label in column {label_column!r}")
    return Example(
        text_a=row[text_column],
        text_b=row[text_b_column] if text_b_column else None,
        label=label,
        guid=guid,
    )


def find_split_file(data_dir, *splits):
    """The first table of `splits`, each in turn, in `data_dir` or else in
    its `data/` (where the Hub keeps a dataset's files): `{split}.tsv`,
    `.csv`, `.jsonl`, `.json`, `.parquet`, a `{split}/` save_to_disk folder
    or the Hub's `{split}-00000-of-00002.parquet`, ... (returned as
    `{split}`: `read_rows` reads every shard)."""
    for split in splits:
        for folder in (data_dir, os.path.join(data_dir, "data")):
            path = os.path.join(folder, split)
            for extension in TABLE_EXTENSIONS:
                if is_file(path + extension):
                    return path + extension
            if is_saved_dataset(path) or hub_shards(path):
                return path
    raise TaskDataError(
        f"{data_dir}: no {' or '.join(splits)} table ({', '.join(TABLE_EXTENSIONS)}, a "
        f"`datasets` save_to_disk folder or the Hub's {splits[-1]}-00000-of-00001.parquet "
        "shards, there or in data/)"
    )


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
