"""`.keras` archives written atomically."""

import os
import uuid


def save_keras_atomically(model, path):
    """`model.save(path)` through a hidden sibling renamed into place, so
    `path` only ever holds a complete archive; the sibling is removed
    whatever happens."""
    folder = os.path.dirname(os.path.abspath(path))
    # Named, not created, here: `mkstemp` would create it 0600, and
    # `model.save` creating it honours the umask like any other file.
    tmp = os.path.join(
        folder, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp.keras")
    try:
        model.save(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
