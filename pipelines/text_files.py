"""One decoding for every text file a user gives: tables, corpora,
vocabularies, configs.

They are UTF-8, with or without the byte-order mark that Excel's "CSV
UTF-8" and Windows Notepad write. Bytes that are not UTF-8 (a Latin-1 or
cp1252 export) are an error naming the file, the line and the byte, never
dropped or read as other characters. Files are streamed, and a local one is
read without TensorFlow: the commands read their configs before the
backend is chosen. At the bottom of `pipelines` (nothing else imported
from it), so that `keras_bert`'s readers share it.
"""

import contextlib
import io
import os

_BOM = b"\xef\xbb\xbf"


@contextlib.contextmanager
def open_text(path, error, newline=None):
    """`open(path, encoding="utf-8-sig", newline=newline)` for any path
    TensorFlow reads, as a `with` block in which undecodable bytes raise
    `error` (a `UserError` class): "my.tsv: line 3 is not UTF-8 (byte 0xe9
    at column 7); save the file as UTF-8"."""
    path = os.fspath(path)
    with io.TextIOWrapper(_open_bytes(path), encoding="utf-8-sig", newline=newline) as f:
        try:
            yield f
        except UnicodeDecodeError:
            # The decoder's position counts from its chunk, not the file:
            # a second pass, taken only here, finds the line. A pipe has
            # none: opened again, it would wait for a writer forever.
            if "://" not in path and not os.path.isfile(path):
                raise error(f"{path}: not UTF-8; save the file as UTF-8") from None
            raise error(_not_utf8(path)) from None


def read_text(path, error):
    """The text of a small file (a vocabulary, a config), as `open_text`
    reads it."""
    with open_text(path, error) as f:
        return f.read()


def _open_bytes(path):
    if "://" not in path:
        return open(path, "rb")
    return io.BufferedReader(_GFileReader(path))


def _not_utf8(path):
    """The message naming the first line of `path` that is not UTF-8, its
    lines counted as `open_text` counts them (`\\n`, `\\r\\n` or `\\r`)."""
    number = 0
    with _open_bytes(path) as f:
        for piece in f:  # Ends at b"\n"; `splitlines` splits at b"\r" too.
            for line in piece.splitlines():
                number += 1
                if number == 1 and line.startswith(_BOM):
                    line = line[len(_BOM) :]
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as error:
                    column = len(line[: error.start].decode("utf-8")) + 1
                    return (
                        f"{path}: line {number} is not UTF-8 (byte "
                        f"0x{line[error.start]:02x} at column {column}); save the file as UTF-8"
                    )
    # Every line decodes now: the file changed after the failed read.
    return f"{path}: not UTF-8 when first read; save the file as UTF-8"


class _GFileReader(io.RawIOBase):
    """A `GFile` as the raw byte stream that `io` buffers and decodes."""

    def __init__(self, path):
        super().__init__()
        import tensorflow as tf  # Its file systems: gs://, s3://, ram://.

        self._file = tf.io.gfile.GFile(path, "rb")

    def readable(self):
        return True

    def readinto(self, buffer):
        data = self._file.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self):
        if not self.closed:
            self._file.close()
        super().close()
