"""`.keras` archives written atomically."""

import os
import tempfile


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
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
