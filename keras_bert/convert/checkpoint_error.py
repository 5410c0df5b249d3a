"""The one exception every converter raises for a bad source or destination."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be converted: a user error, not a bug.

    The message is one line that names the file and says what is wrong
    (missing, unexpected or mis-shaped variables are listed by name), so
    the command line can print it without a traceback.
    """
