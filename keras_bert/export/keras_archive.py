"""`.keras` archives written atomically."""

import os
import stat
import uuid
import zipfile

import tensorflow as tf

from keras_bert.file_io import is_file, remove


def chmod_as_created(path):
    """Gives `path` the mode a plain `open`/`mkdir` would under the umask:
    `mkstemp`/`mkdtemp` make private 0600 files and 0700 folders, which a
    rename into place would otherwise publish."""
    umask = os.umask(0)
    os.umask(umask)
    full = 0o777 if stat.S_ISDIR(os.stat(path).st_mode) else 0o666
    os.chmod(path, full & ~umask)


def save_keras_atomically(model, path):
    """`model.save(path)` through a hidden sibling renamed into place, so
    `path` only ever holds a complete archive (on an object store too: see
    `keras_bert.file_io`); the sibling is removed whatever happens."""
    folder, name = os.path.split(os.fspath(path))
    # Named, not created, here: `mkstemp` would create it 0600, and
    # `model.save` creating it honours the umask like any other file.
    tmp = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.tmp.keras")
    try:
        model.save(tmp)
        tf.io.gfile.rename(tmp, path, overwrite=True)
    finally:
        remove(tmp)


def archive_problem(path):
    """Why `path` is no readable `.keras` zip (None when it is one).

    Keras reports a truncated archive as "File not found" and a damaged one
    as a bare BadZipFile; this names the real problem.
    """
    if not is_file(path):
        return "no such file"
    with tf.io.gfile.GFile(path, "rb") as f:
        if not zipfile.is_zipfile(f):
            return "not a .keras archive (truncated or corrupt zip file)"
        try:
            with zipfile.ZipFile(f) as archive:
                damaged = archive.testzip()
        except Exception as error:  # zlib, zipfile and OS errors alike.
            return f"corrupt .keras archive ({error})"
    return f"corrupt .keras archive (CRC check failed for {damaged})" if damaged else None
