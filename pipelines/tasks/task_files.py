"""Task data files read through TensorFlow's file system layer, so that a
`data_dir` may be local, on `gs://` or on any file system TensorFlow knows."""

import io

import tensorflow as tf


def is_file(path):
    return tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path)


def open_text(path, newline=None):
    """`open(path, encoding="utf-8-sig", newline=newline)` for any path
    TensorFlow reads: UTF-8 with or without the byte-order mark that
    Excel's "CSV UTF-8" writes, the same line endings, streamed."""
    return io.TextIOWrapper(
        io.BufferedReader(_GFileReader(path)), encoding="utf-8-sig", newline=newline
    )


class _GFileReader(io.RawIOBase):
    """A `GFile` as the raw byte stream that `io` buffers and decodes."""

    def __init__(self, path):
        super().__init__()
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
