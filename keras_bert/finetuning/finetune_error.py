"""The error a fine-tuning run raises for bad input or a diverged model."""


class FinetuneError(ValueError):
    """Bad command-line input (checkpoint, vocabulary, task), or a run that
    cannot give trustworthy results (a NaN loss, non-finite predictions).

    The message is one line, printed without a traceback (exit status 2).
    """
