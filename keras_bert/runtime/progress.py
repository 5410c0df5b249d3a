"""Progress bars on stderr: a command's stdout holds only its result (the
JSON that `evaluate` and `predict` print for scripts to parse),
as `tqdm` does by default. Keras' `Progbar` writes to stdout and has no
stream argument, hence this subclass."""

import contextlib
import sys

import keras


class StderrProgbar(keras.utils.Progbar):
    """`keras.utils.Progbar`, drawn on stderr."""

    def __init__(self, *args, **kwargs):
        # The bar redraws in place when the stream it writes to is a terminal.
        with contextlib.redirect_stdout(sys.stderr):
            super().__init__(*args, **kwargs)

    def update(self, *args, **kwargs):
        with contextlib.redirect_stdout(sys.stderr):
            super().update(*args, **kwargs)


def progress_callback(unit_name, unit=1):
    """A `progress(done, total)` callback for the pipelines' long loops,
    drawing a `StderrProgbar` that counts `unit_name`s of `unit` (e.g. "MB"
    of 1e6 bytes)."""
    bar = None

    def progress(done, total):
        nonlocal bar
        if bar is None:
            bar = StderrProgbar(max(1, round(total / unit)), unit_name=unit_name)
        # Whole units, and the whole bar at the end however `total` rounds.
        bar.update(bar.target if done >= total else min(round(done / unit), bar.target - 1))

    return progress
