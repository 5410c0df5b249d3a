"""The error every fine-tuning reader raises for bad input files."""

from pipelines.errors import PipelineInputError


class TaskDataError(PipelineInputError):
    """A task data file is missing or has a malformed row.

    The message names the file and, for a bad row, its 1-based line number.
    """
