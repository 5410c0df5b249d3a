"""Reading the WordPiece vocabulary that travels with a checkpoint: a
`vocab.txt`, or the `tokenizer.json` that transformers 5 saves instead."""

import json
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


def read_folder_vocabulary(folder):
    """(tokens or None, report line) for a Hugging Face folder: its
    `vocab.txt`, else the WordPiece vocabulary of its `tokenizer.json`
    (what `save_pretrained` of a transformers 5 tokenizer writes)."""
    tokens, note = read_vocabulary(os.path.join(folder, "vocab.txt"))
    path = os.path.join(os.fspath(folder), "tokenizer.json")
    if tokens is not None or not os.path.isfile(path):
        return tokens, note
    try:
        model = json.loads(read_text(path, CheckpointError)).get("model") or {}
    except (json.JSONDecodeError, AttributeError) as error:
        raise CheckpointError(f"{path}: not a tokenizer.json: {error}") from None
    if model.get("type") != "WordPiece" or not isinstance(model.get("vocab"), dict):
        return None, f"vocab: none (vocab.txt not found; {path} is no WordPiece tokenizer)"
    # {token: id} in the file; the ids must number the rows 0..n-1.
    by_id = sorted(model["vocab"].items(), key=lambda item: item[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        raise CheckpointError(f"{path}: the vocabulary's ids are not 0..{len(by_id) - 1}.")
    return [token for token, _ in by_id], f"vocab: {len(by_id)} tokens from {path}"
