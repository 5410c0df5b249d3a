"""`.keras` archives written atomically."""

import os
import stat
import tempfile


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
    `path` only ever holds a complete archive; the sibling is removed
    whatever happens."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, tmp = tempfile.mkstemp(
        prefix=f".{os.path.basename(path)}.", suffix=".tmp.keras", dir=folder
    )
    os.close(handle)
    try:
        model.save(tmp)
        chmod_as_created(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
