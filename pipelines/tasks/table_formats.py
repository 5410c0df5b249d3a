"""Rows of a task table, whatever file it comes in.

One reader for every format a labelled or unlabelled table comes in: CSV
and TSV with a header row, JSON Lines, JSON (an array of records, or
`{"data": [...]}`), and, with pyarrow installed (an optional extra), Parquet
(`Dataset.to_parquet`, the Hub's own format), a Hugging Face `datasets`
`save_to_disk` folder (Arrow IPC streams that its `state.json` lists) and a
split the Hub keeps in shards (`train-00000-of-00002.parquet`, ...).
`read_rows` yields each row as a dict; the task readers (`tables.read_table`,
`tables.read_glue`) make examples of them. Large files stream: text a line
at a time, Parquet and Arrow a record batch at a time. Each file is opened
once, so that a named pipe can be read (but not a Parquet one: that format
is read from its end).

Text columns hold strings and label columns strings, integers or numbers,
checked by the column's Arrow type before any row is read, and row by row
in JSON: a list of words made text by `str()`, or pandas' NaN made a class
"nan", would be trained on and scored without a word.
"""

import contextlib
import csv
import dataclasses
import itertools
import json
import os
import posixpath
import re

import tensorflow as tf

from pipelines.tasks.errors import TaskDataError, text_file_errors
from pipelines.tasks.task_files import is_file
from pipelines.text_files import open_text, read_text

TABLE_EXTENSIONS = (".tsv", ".csv", ".jsonl", ".json", ".parquet")
# Rows turned into Python objects at a time from a Parquet or Arrow file:
# memory stays bounded whatever the file's size.
BATCH_ROWS = 1024
# How the Hub names a split's files: `train-00000-of-00002.parquet`, with a
# fingerprint after the count where an older `push_to_hub` wrote them.
HUB_SHARD = r"-(\d{5})-of-(\d{5})(?:-[0-9a-f]+)?(\.[A-Za-z]+)"
# What a JSON value is, in JSON's words, for messages.
JSON_TYPES = {
    bool: "a boolean",
    int: "a number",
    float: "a number",
    list: "an array",
    dict: "an object",
}


@dataclasses.dataclass(frozen=True)
class _Columns:
    """The columns a reader wants: text, labels, and those read where present."""

    text: tuple
    labels: tuple
    optional: tuple

    @property
    def required(self):
        return list(dict.fromkeys(self.text + self.labels))


def is_saved_dataset(path):
    """Whether `path` is a `datasets.Dataset.save_to_disk` folder."""
    return tf.io.gfile.isdir(path) and is_file(os.path.join(path, "state.json"))


def hub_shards(split):
    """The files of `split` (a path without extension: data/train) as the
    Hub stores it, `train-00000-of-00002.parquet`, ..., in order; [] where
    it has none.

    Raises:
        TaskDataError: shards that are not all of one split (one missing,
            or two uploads' side by side), naming them.
    """
    folder, name = os.path.split(split)
    if not tf.io.gfile.isdir(folder or "."):
        return []
    pattern = re.compile(re.escape(name) + HUB_SHARD)
    shards = {}
    for file_name in sorted(tf.io.gfile.listdir(folder or ".")):
        match = pattern.fullmatch(file_name)
        if match and match[3].lower() in TABLE_EXTENSIONS:
            shards.setdefault((int(match[1]), int(match[2])), []).append(file_name)
    if not shards:
        return []
    counts = {count for _, count in shards}
    count = counts.pop()
    listed = ", ".join(n for names in shards.values() for n in names)
    if counts or any(len(names) > 1 for names in shards.values()):
        raise TaskDataError(
            f"{split}: the Hub's shards of the split are {listed}; not one upload's "
            "(each shard once, all of one count)"
        )
    for index in range(count):
        if (index, count) not in shards:
            raise TaskDataError(
                f"{split}: the Hub's shards of the split are {listed}; shard "
                f"{index:05d} of {count:05d} is missing"
            )
    return [os.path.join(folder, shards[index, count][0]) for index in range(count)]


def read_rows(path, text_columns, label_columns=(), optional=()):
    """`(where, number, row)` for each row of the table at `path`.

    The format comes from the extension (`TABLE_EXTENSIONS`), or `path` is
    a `save_to_disk` folder, or a split in the Hub's shards (`hub_shards`),
    read one after the other. `where` names the row in messages: its line
    for CSV, TSV and JSON Lines (`train.tsv:3`), its 1-based position for
    the others (`train.parquet: row 3`), in its shard for a split in
    shards; `number` is that line or position (in the split, for shards).
    `row` is a dict holding every name of `text_columns` (a string each)
    and `label_columns` (a string, an integer or a number, not NaN) and
    those of `optional` the file has; values are the file's (text from CSV
    and TSV, JSON and Arrow types from the others).

    Raises:
        TaskDataError: a missing file, an unknown format, a missing column,
            a column or value of the wrong type, a null, a NaN label, a
            line that is not JSON, a TSV quote left open, a Parquet file
            that is a pipe, a save_to_disk data file outside its folder, a
            shard missing, or pyarrow absent for a Parquet file or a
            `save_to_disk` folder, naming the file (and line or row).
    """
    path = os.fspath(path)
    columns = _Columns(tuple(text_columns), tuple(label_columns), tuple(optional))
    if is_saved_dataset(path):
        return _checked(_saved_dataset_rows(path, columns), columns)
    if is_file(path):
        return _checked(_file_rows(path, columns), columns)
    shards = hub_shards(path)
    if shards:
        rows = itertools.chain.from_iterable(_file_rows(shard, columns) for shard in shards)
        return _checked(
            ((where, number, row) for number, (where, _, row) in enumerate(rows, 1)), columns
        )
    if tf.io.gfile.isdir(path):
        if is_file(os.path.join(path, "dataset_dict.json")):
            raise TaskDataError(
                f"{path}: a `datasets` DatasetDict folder; name one of its splits "
                f"({os.path.join(path, 'train')}, ...)"
            )
        raise TaskDataError(
            f"{path}: a folder, but not a `datasets` save_to_disk one (no state.json)"
        )
    raise TaskDataError(f"{path}: no such file")


def delimited_rows(path, lines, text_columns, label_columns=(), optional=()):
    """`read_rows` of the CSV or TSV file `path` that its reader has opened
    already: `lines`, the file's lines from its first (a GLUE reader reads
    the header to tell the file's layout, and a pipe is read once)."""
    columns = _Columns(tuple(text_columns), tuple(label_columns), tuple(optional))
    return _checked(_delimited_lines(path, lines, columns), columns)


def _file_rows(path, columns):
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
    return readers[extension](path, columns)


def _checked(rows, columns):
    """`rows`, each refused where a text is not a string or a label is not
    a string, an integer or a number, or either is null or NaN."""
    for where, number, row in rows:
        for name in columns.text:
            value = row[name]
            if value is None:
                raise TaskDataError(f"{where}: no text in column {name!r} (null)")
            if not isinstance(value, str):
                raise TaskDataError(f"{where}: column {name!r} holds {_kind(value)}, not text")
        for name in columns.labels:
            value = row[name]
            if value is None:
                raise TaskDataError(f"{where}: no label in column {name!r} (null)")
            if not isinstance(value, (str, int, float)):
                raise TaskDataError(
                    f"{where}: column {name!r} holds {_kind(value)}, not a label (a string, "
                    "an integer or a number)"
                )
            if value != value:  # pandas writes a missing value as NaN.
                raise TaskDataError(f"{where}: no label in column {name!r} (NaN, a missing value)")
        yield where, number, row


def _kind(value):
    return JSON_TYPES.get(type(value), type(value).__name__)


def _delimited_rows(path, columns):
    with open_text(path, TaskDataError, newline="") as f:
        yield from _delimited_lines(path, f, columns)


def _delimited_lines(path, lines, columns):
    tsv = path.lower().endswith(".tsv")
    columns = columns.required
    with text_file_errors(path):
        reader = csv.DictReader(lines, delimiter="\t" if tsv else ",")
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


def _json_lines_rows(path, columns):
    columns = columns.required
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


def _json_rows(path, columns):
    """A `.json` file: JSON Lines (what `Dataset.to_json` writes), an array
    of records, or `{"data": [records]}`, told apart by its first line."""
    columns = columns.required
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


def _parquet_rows(path, columns):
    pyarrow = _pyarrow(path, "a Parquet file")
    with _open_binary(path) as f, _arrow_errors(path, "Parquet"):
        if not f.seekable():
            raise TaskDataError(
                f"{path}: not a regular file (a pipe?); Parquet is read from its end, so "
                "save it to a file first"
            )
        parquet = pyarrow.parquet.ParquetFile(f)
        wanted = _present_columns(path, parquet.schema_arrow, columns)
        batches = parquet.iter_batches(batch_size=BATCH_ROWS, columns=wanted)
        yield from _batch_rows(path, batches, 0)


def _saved_dataset_rows(path, columns):
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
    for name, file_path in zip(files, paths):
        # A state.json from elsewhere must not make the folder a way to read
        # any file the user can (`../../secret`, `/etc/...`, a link out).
        if not _inside(path, file_path):
            raise TaskDataError(
                f"{state_path}: data file {name!r} lies outside {path}; a save_to_disk "
                "folder's files are inside it"
            )
        if not is_file(file_path):
            raise TaskDataError(f"{file_path}: no such file (listed in {state_path})")
    yield from _batch_rows(path, _stream_batches(pyarrow, path, paths, columns), 0)


def _inside(folder, path):
    """Whether `path` lies inside `folder`, links followed (object stores,
    `gs://`, have none)."""
    resolve = posixpath.normpath if "://" in folder else os.path.realpath
    root, resolved = resolve(folder), resolve(path)
    return resolved != root and os.path.commonpath([root, resolved]) == root


def _stream_batches(pyarrow, path, paths, columns):
    """The record batches of `save_to_disk`'s Arrow IPC stream files, in order."""
    for file_path in paths:
        with _open_binary(file_path) as f, _arrow_errors(file_path, "Arrow stream"):
            stream = pyarrow.ipc.open_stream(f)
            wanted = _present_columns(path, stream.schema, columns, file_path)
            for batch in stream:
                yield batch.select(wanted)


def _batch_rows(path, batches, number):
    for batch in batches:
        for row in batch.to_pylist():
            number += 1
            yield f"{path}: row {number}", number, row


def _present_columns(path, schema, columns, file_path=None):
    """The columns to read of a file with Arrow `schema` (in `path`, at
    `file_path`), its text and label columns checked by type."""
    import pyarrow

    missing = [c for c in columns.required if c not in schema.names]
    if missing:
        raise TaskDataError(f"{path}: no column(s) {missing}; found {schema.names}")
    types = pyarrow.types
    for name in columns.text + columns.labels:
        kind = schema.field(name).type
        value_kind = kind.value_type if types.is_dictionary(kind) else kind  # pandas' category.
        text = types.is_string(value_kind) or types.is_large_string(value_kind)
        if name in columns.text and not text:
            raise TaskDataError(f"{file_path or path}: column {name!r} holds {kind}, not text")
        number = types.is_integer(value_kind) or types.is_floating(value_kind)
        if not (text or number or types.is_boolean(value_kind)):
            raise TaskDataError(
                f"{file_path or path}: column {name!r} holds {kind}, not labels (strings, "
                "integers or numbers)"
            )
    return list(
        dict.fromkeys(columns.required + [c for c in columns.optional if c in schema.names])
    )


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
