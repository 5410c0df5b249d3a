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
    """Undecodable or binary files as a `TaskDataError` naming the file."""
    try:
        yield
    except UnicodeDecodeError as error:
        # `error.start` counts from the decoder's chunk, not the file.
        raise TaskDataError(
            f"{path}: not UTF-8 text ({error.reason} 0x{error.object[error.start]:02x})"
        ) from None
    except csv.Error as error:
        raise TaskDataError(f"{path}: not a text table: {error}") from None
