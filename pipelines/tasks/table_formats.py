"""Rows of a task table, whatever file it comes in.

One reader for every format a labelled or unlabelled table comes in: CSV
and TSV with a header row, JSON Lines, JSON (an array of records, or
`{"data": [...]}`), and, with pyarrow installed (an optional extra), Parquet
(`Dataset.to_parquet`, the Hub's own format) and a Hugging Face `datasets`
`save_to_disk` folder (Arrow IPC streams that its `state.json` lists).
`read_rows` yields each row as a dict; the task readers (`tables.read_table`,
`tables.read_glue`) make examples of them. Large files stream: text a line
at a time, Parquet and Arrow a record batch at a time.
"""

import contextlib
import csv
import json
import os

import tensorflow as tf

from pipelines.tasks.errors import TaskDataError, text_file_errors
from pipelines.tasks.task_files import is_file
from pipelines.text_files import open_text, read_text

TABLE_EXTENSIONS = (".tsv", ".csv", ".jsonl", ".json", ".parquet")
# Rows turned into Python objects at a time from a Parquet or Arrow file:
# memory stays bounded whatever the file's size.
BATCH_ROWS = 1024


def is_saved_dataset(path):
    """Whether `path` is a `datasets.Dataset.save_to_disk` folder."""
    return tf.io.gfile.isdir(path) and is_file(os.path.join(path, "state.json"))


def read_rows(path, columns, optional=()):
    """`(where, number, row)` for each row of the table at `path`.

    The format comes from the extension (`TABLE_EXTENSIONS`), or `path` is
    a `save_to_disk` folder. `where` names the row in messages: its line
    for CSV, TSV and JSON Lines (`train.tsv:3`), its 1-based position for
    the others (`train.parquet: row 3`); `number` is that line or position.
    `row` is a dict holding every name of `columns` and those of
    `optional` the file has; values are the file's (text from CSV and TSV,
    JSON and Arrow types from the others).

    Raises:
        TaskDataError: a missing file, an unknown format, a missing column,
            a line that is not JSON, a TSV quote left open, or pyarrow
            absent for a Parquet file or a `save_to_disk` folder, naming the
            file (and line or row).
    """
    path = os.fspath(path)
    if tf.io.gfile.isdir(path):
        if is_saved_dataset(path):
            return _saved_dataset_rows(path, columns, optional)
        if is_file(os.path.join(path, "dataset_dict.json")):
            raise TaskDataError(
                f"{path}: a `datasets` DatasetDict folder; name one of its splits "
                f"({os.path.join(path, 'train')}, ...)"
            )
        raise TaskDataError(
            f"{path}: a folder, but not a `datasets` save_to_disk one (no state.json)"
        )
    if not is_file(path):
        raise TaskDataError(f"{path}: no such file")
    extension = os.path.splitext(path)[1].lower()
    readers = {
        ".csv": _delimited_rows,
        ".tsv": _delimited_rows,
        ".jsonl": _json_lines_rows,
        ".json": _json_rows,
        ".parquet": _parquet_rows,
    }
    if extension not in readers:
        raise TaskDataError(
            f"{path}: unknown file type {extension!r}; use {', '.join(TABLE_EXTENSIONS)} "
            "or a `datasets` save_to_disk folder"
        )
    return readers[extension](path, list(columns), tuple(optional))


def _delimited_rows(path, columns, optional):
    tsv = path.lower().endswith(".tsv")
    with open_text(path, TaskDataError, newline="") as f, text_file_errors(path):
        reader = csv.DictReader(f, delimiter="\t" if tsv else ",")
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise TaskDataError(
                f"{path}:1: header has no column(s) {missing}; found {reader.fieldnames}"
            )
        previous_line = reader.line_num
        for row in reader:
            if None in row or any(row[c] is None for c in columns):
                raise TaskDataError(
                    f"{path}:{reader.line_num}: expected {len(reader.fieldnames)} "
                    "columns as in the header"
                )
            # A quote opened and not closed on its line swallows the rows
            # after it into one field (CSV allows line breaks in quoted
            # fields; TSV exports do not write them). (An unused column
            # left off the end is None.)
            if tsv and any(
                value is not None and ("\n" in value or "\r" in value) for value in row.values()
            ):
                raise TaskDataError(
                    f"{path}:{previous_line + 1}: a quoted field runs on to "
                    f"line {reader.line_num} (a stray '\"'?); a TSV field "
                    "cannot hold a line break"
                )
            previous_line = reader.line_num
            yield f"{path}:{reader.line_num}", reader.line_num, row


def _json_lines_rows(path, columns, optional):
    with open_text(path, TaskDataError) as f:
        for line_number, line in enumerate(f, 1):
            if line.lstrip().startswith("["):
                # A JSON array's "[" line is no JSON, and a one-line array
                # no row: either would blame a line or a missing key.
                raise TaskDataError(
                    f"{path}:{line_number}: a JSON array in a .jsonl file (one object a "
                    "line); name it .json to read it as an array of records"
                )
            yield from _json_line(path, line_number, line, columns)


def _json_line(path, line_number, line, columns):
    """The row of one JSON Lines line (none for a blank line)."""
    if not line.strip():
        return
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise TaskDataError(f"{path}:{line_number}: invalid JSON: {error.msg}") from None
    missing = [c for c in columns if not isinstance(row, dict) or c not in row]
    if missing:
        raise TaskDataError(f"{path}:{line_number}: missing key(s) {missing}")
    yield f"{path}:{line_number}", line_number, row


def _json_rows(path, columns, optional):
    """A `.json` file: JSON Lines (what `Dataset.to_json` writes), an array
    of records, or `{"data": [records]}`, told apart by its first line."""
    with open_text(path, TaskDataError) as f:
        lines = enumerate(f, 1)
        first_number, first = next(((n, line) for n, line in lines if line.strip()), (0, ""))
        if not first:
            return
        if not first.lstrip().startswith("["):
            try:
                row = json.loads(first)
            except json.JSONDecodeError:
                row = None  # An object over several lines: a document.
            # A first line that is a whole object is a JSON Lines row,
            # unless it is a `{"data": [...]}` document without the columns.
            if isinstance(row, dict) and (
                not isinstance(row.get("data"), list) or all(c in row for c in columns)
            ):
                yield from _json_line(path, first_number, first, columns)
                for line_number, line in lines:
                    yield from _json_line(path, line_number, line, columns)
                return
        # The standard library's `json` cannot stream an array: a JSON
        # document is read whole (JSON Lines, above, streams).
        text = first + f.read()
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        line_number = first_number + error.lineno - 1
        raise TaskDataError(f"{path}:{line_number}: invalid JSON: {error.msg}") from None
    records = document.get("data") if isinstance(document, dict) else document
    if not isinstance(records, list):
        raise TaskDataError(
            f'{path}: a JSON document that is neither an array of records nor {{"data": [...]}}'
        )
    for number, row in enumerate(records, 1):
        missing = [c for c in columns if not isinstance(row, dict) or c not in row]
        if missing:
            raise TaskDataError(f"{path}: row {number}: missing key(s) {missing}")
        yield f"{path}: row {number}", number, row


def _parquet_rows(path, columns, optional):
    pyarrow = _pyarrow(path, "a Parquet file")
    with _open_binary(path) as f, _arrow_errors(path, "Parquet"):
        parquet = pyarrow.parquet.ParquetFile(f)
        wanted = _present_columns(path, parquet.schema_arrow.names, columns, optional)
        batches = parquet.iter_batches(batch_size=BATCH_ROWS, columns=wanted)
        yield from _batch_rows(path, batches, 0)


def _saved_dataset_rows(path, columns, optional):
    pyarrow = _pyarrow(path, "a `datasets` save_to_disk folder")
    state_path = os.path.join(path, "state.json")
    try:
        files = [
            entry["filename"]
            for entry in json.loads(read_text(state_path, TaskDataError))["_data_files"]
        ]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise TaskDataError(
            f"{state_path}: not a `datasets` state file (a '_data_files' list of "
            "{'filename': ...})"
        ) from None
    paths = [os.path.join(path, name) for name in files]
    for file_path in paths:
        if not is_file(file_path):
            raise TaskDataError(f"{file_path}: no such file (listed in {state_path})")
    yield from _batch_rows(path, _stream_batches(pyarrow, path, paths, columns, optional), 0)


def _stream_batches(pyarrow, path, paths, columns, optional):
    """The record batches of `save_to_disk`'s Arrow IPC stream files, in order."""
    for file_path in paths:
        with _open_binary(file_path) as f, _arrow_errors(file_path, "Arrow stream"):
            stream = pyarrow.ipc.open_stream(f)
            wanted = _present_columns(path, stream.schema.names, columns, optional)
            for batch in stream:
                yield batch.select(wanted)


def _batch_rows(path, batches, number):
    for batch in batches:
        for row in batch.to_pylist():
            number += 1
            yield f"{path}: row {number}", number, row


def _present_columns(path, names, columns, optional):
    missing = [c for c in columns if c not in names]
    if missing:
        raise TaskDataError(f"{path}: no column(s) {missing}; found {list(names)}")
    return list(dict.fromkeys(columns + [c for c in optional if c in names]))


def _pyarrow(path, what):
    """pyarrow with the modules the readers use, or the one line that says
    what to install."""
    try:
        import pyarrow
        import pyarrow.ipc
        import pyarrow.parquet
    except ImportError:
        raise TaskDataError(
            f"{path}: reading {what} needs pyarrow, an optional extra: pip install pyarrow"
        ) from None
    return pyarrow


@contextlib.contextmanager
def _arrow_errors(path, what):
    """A file pyarrow cannot read (another format, a truncated download) as
    a `TaskDataError` naming it."""
    import pyarrow

    try:
        yield
    except pyarrow.ArrowException as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise TaskDataError(f"{path}: not a readable {what} file ({reason})") from None


def _open_binary(path):
    """A seekable binary file object on any file system TensorFlow knows."""
    if "://" not in path:
        return open(path, "rb")
    return tf.io.gfile.GFile(path, "rb")
