"""The errors a user can fix, one family for every command.

Every class here is a `UserError` (a `ValueError`): the message is one
line that names the file, key or value and says what is wrong, and
every command prints it without a traceback and exits with status 2
(`keras_bert.runtime.command`). From Python they are ordinary
`ValueError`s.
"""

from pipelines.errors import UserError

__all__ = [
    "CheckpointError",
    "ConfigError",
    "ExportError",
    "FinetuneConfigError",
    "FinetuneError",
    "RunFolderError",
    "UserError",
]


class ConfigError(UserError):
    """A recipe (pre-training or fine-tuning) key, value or file, or a
    device, the user asked for is unusable.

    The commands print its message on one line and exit with status 2; from
    Python it is an ordinary `ValueError`.
    """


# The fine-tuning recipe's error before both recipes shared one loader
# (`keras_bert.runs.recipe`); kept as a name for code that catches it.
FinetuneConfigError = ConfigError


class FinetuneError(UserError):
    """Bad command-line input (checkpoint, vocabulary, task), or a run that
    cannot give trustworthy results (a NaN loss, non-finite predictions).

    The message is one line, printed without a traceback (exit status 2).
    """


class RunFolderError(ConfigError, FinetuneError):
    """What a run folder refuses, for every kind of run
    (`runs.run_folder.RunFolder`): a run of another kind or task
    there, the user's own files where the run would write, a lock that
    another run holds, a rerun that has not finished. Both a `ConfigError`
    and a `FinetuneError`, which pre-training and fine-tuning raised for
    these before, so code that catches either still does.
    """


class CheckpointError(UserError):
    """A checkpoint that cannot be converted: a user error, not a bug.

    The message is one line that names the file and says what is wrong
    (missing, unexpected or mis-shaped variables are listed by name), so
    the command line can print it without a traceback.
    """


class ExportError(UserError):
    """A bad `export` argument, or a model file or vocabulary it cannot
    export (`keras_bert.serving`). A `ValueError`, as Keras' own checks."""
