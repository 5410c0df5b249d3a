"""The error every fine-tuning reader raises for bad input files."""

import contextlib
import csv

from pipelines.errors import PipelineInputError


class TaskDataError(PipelineInputError):
    """A task data file is missing or has a malformed row.

    The message names the file and, for a bad row, its 1-based line number.
    """


@contextlib.contextmanager
def text_file_errors(path):
    """A file `csv` cannot parse (a NUL byte: a binary file) as a
    `TaskDataError` naming it. (Bytes that are not UTF-8 are
    `pipelines.text_files.open_text`'s.)"""
    try:
        yield
    except csv.Error as error:
        raise TaskDataError(f"{path}: not a text table: {error}") from None
