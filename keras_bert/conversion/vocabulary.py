"""Reading the WordPiece `vocab.txt` that travels with a checkpoint."""

import os

from keras_bert.errors import CheckpointError
from pipelines.text_files import read_text


def read_vocabulary(path):
    """(tokens or None, report line) for a one-token-per-line `vocab.txt`."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        return None, f"vocab: none ({os.path.basename(path)} not found)"
    tokens = read_text(path, CheckpointError).splitlines()
    if not tokens or len(set(tokens)) != len(tokens):
        raise CheckpointError(f"{path}: a vocabulary needs distinct tokens, one per line.")
    return tokens, f"vocab: {len(tokens)} tokens from {path}"
