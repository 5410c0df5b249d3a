"""The error raised for bad user input to a training run."""


class ConfigError(ValueError):
    """A config key, value, file or device the user asked for is unusable.

    `python -m keras_bert.pretrain` prints its message on one line and exits
    with status 2; from Python it is an ordinary `ValueError`.
    """
