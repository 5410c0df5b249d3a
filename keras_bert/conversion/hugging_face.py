"""Hugging Face BERT folders: `config.json`, `model.safetensors`, `vocab.txt`.

Tensors are read and written with the `safetensors` package's numpy API, so
neither torch nor transformers is needed. Pickle-based weight files
(`pytorch_model.bin`) are refused: unpickling runs code from the file.
Names go through `bert_name_map`'s rename, dense kernels are transposed
((out, in) in PyTorch, (in, out) in the original).
"""

import json
import os

import numpy as np

from keras_bert.conversion.bert_checkpoint import BertCheckpoint
from keras_bert.conversion.bert_name_map import (
    hf_to_original_name,
    original_to_hf_name,
)
from keras_bert.conversion.config_json import (
    backbone_config_from_json,
    json_from_backbone_config,
)
from keras_bert.conversion.vocabulary import read_folder_vocabulary
from keras_bert.errors import CheckpointError

SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
# Everything `write_hugging_face` writes: all that overwrite may replace.
HUGGING_FACE_FILES = ("config.json", SAFETENSORS, "vocab.txt")
# The tokenizer's settings (`do_lower_case`), written with a fine-tuned model.
TOKENIZER_CONFIG = "tokenizer_config.json"
# Non-trainable buffers that some transformers versions save; rebuilt by
# transformers on load and not part of the model.
_BUFFERS = ("embeddings.position_ids",)
# Hugging Face ties the masked-LM decoder to the word embeddings and its
# bias to `cls.predictions.bias`; files may carry the tied copies.
_TIED = {
    "cls.predictions.decoder.weight": "bert/embeddings/word_embeddings",
    "cls.predictions.decoder.bias": "cls/predictions/output_bias",
}
_PICKLE_FILES = ("pytorch_model.bin", "pytorch_model.bin.index.json")


def is_hugging_face_folder(path):
    """True for a folder with `config.json` and a Hugging Face weight file."""
    return os.path.isfile(os.path.join(path, "config.json")) and any(
        os.path.isfile(os.path.join(path, f))
        for f in (SAFETENSORS, SAFETENSORS_INDEX) + _PICKLE_FILES
    )


def _weight_files(folder):
    index_path = os.path.join(folder, SAFETENSORS_INDEX)
    if os.path.isfile(os.path.join(folder, SAFETENSORS)):
        return [os.path.join(folder, SAFETENSORS)]
    if os.path.isfile(index_path):
        with open(index_path) as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        return [os.path.join(folder, shard) for shard in shards]
    if any(os.path.isfile(os.path.join(folder, f)) for f in _PICKLE_FILES):
        raise CheckpointError(
            f"{folder}: only pytorch_model.bin found. It is a pickle, which "
            "runs code while loading, so keras_bert does not open it. "
            "Re-save it as safetensors (transformers: "
            "`BertModel.from_pretrained(folder).save_pretrained(out)`) and "
            "convert that."
        )
    raise CheckpointError(f"{folder}: no {SAFETENSORS} found.")


def _read_tensors(files):
    from safetensors import safe_open

    tensors = {}
    for path in files:
        try:
            with safe_open(path, framework="numpy") as f:
                for name in f.keys():
                    tensors[name] = f.get_tensor(name)
        except Exception as error:  # safetensors raises its own types.
            message = str(error).strip().splitlines()[0]
            raise CheckpointError(
                f"{path}: unreadable safetensors file (corrupt, truncated or "
                f"an unsupported dtype?): {message}"
            ) from None
    return tensors


def read_hugging_face(folder):
    """`BertCheckpoint` from a Hugging Face BERT folder.

    Encoder names may carry the `bert.` prefix or not; `cls.predictions.*`
    and `cls.seq_relationship.*` heads are read when present. Any other
    tensor (a task head such as `classifier.weight`) is kept under its own
    name, for `BertCheckpoint.to_model` to list as unexpected unless the
    caller takes it out first (`finetuning.transformers_runs`, for task heads).
    """
    folder = os.fspath(folder)
    config_path = os.path.join(folder, "config.json")
    try:
        with open(config_path) as f:
            config = backbone_config_from_json(json.load(f), config_path)
    except (OSError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{config_path}: {error}") from None
    tensors = _read_tensors(_weight_files(folder))

    weights, source_names, ignored, tied, dtypes = {}, {}, [], {}, set()
    for hf_name, value in tensors.items():
        if hf_name.split(".", 1)[-1] in _BUFFERS or hf_name in _BUFFERS:
            ignored.append(hf_name)
            continue
        if hf_name in _TIED:
            tied[hf_name] = value
            continue
        mapped = hf_to_original_name(hf_name)
        # Unknown names are kept under their own name: `to_model` lists them
        # as unexpected instead of dropping them here.
        name, transpose = mapped if mapped else (hf_name, False)
        if name in weights:
            raise CheckpointError(
                f"{folder}: `{hf_name}` and `{source_names[name]}` are the "
                "same variable (mixed `bert.` prefixes?)."
            )
        dtypes.add(str(value.dtype))
        value = np.asarray(value, "float32")
        weights[name] = value.T if transpose and value.ndim == 2 else value
        source_names[name] = hf_name

    for hf_name, value in tied.items():
        name = _TIED[hf_name]
        if name not in weights and hf_name.endswith(".bias"):
            weights[name] = np.asarray(value, "float32")
            source_names[name] = hf_name
        elif name not in weights or not np.array_equal(value, weights[name]):
            raise CheckpointError(
                f"{folder}: `{hf_name}` is not tied to "
                f"`{source_names.get(name, name)}`; keras_bert's masked-LM "
                "decoder always shares the word embeddings and output bias."
            )

    notes = []
    if ignored:
        notes.append(f"ignored buffers: {', '.join(sorted(ignored))}")
    if tied:
        notes.append(f"tied copies checked: {', '.join(sorted(tied))}")
    if dtypes - {"float32"}:
        notes.append(f"cast {', '.join(sorted(dtypes))} to float32")
    vocabulary, vocab_note = read_folder_vocabulary(folder)
    notes.append(vocab_note)
    prefixed = any(n.startswith("bert.") for n in tensors)
    return BertCheckpoint(
        config=config,
        weights=weights,
        vocabulary=vocabulary,
        source=f"Hugging Face folder {folder}" + (" (`bert.` prefix)" if prefixed else ""),
        source_names=source_names,
        notes=notes,
    )


def write_hugging_face(checkpoint, folder):
    """Writes `checkpoint` as a Hugging Face folder that transformers loads.

    Without heads: `BertModel` names (no prefix). With heads: the
    `BertForPreTraining` layout (`bert.` prefix, `cls.*`); the tied decoder
    is left out, as `save_pretrained` does. `folder` must exist and be
    empty (the converter writes into a temporary folder and renames it).
    Returns the transformers class named in `config.json`.
    """
    heads = checkpoint.has_heads()
    architecture = "BertForPreTraining" if heads else "BertModel"
    write_hugging_face_files(
        folder,
        hugging_face_tensors(checkpoint, "bert." if heads else ""),
        json_from_backbone_config(checkpoint.config, architecture),
        checkpoint.vocabulary,
    )
    return architecture


def hugging_face_tensors(checkpoint, prefix):
    """{transformers name: float32 array in transformers' layout} for the
    weights of `checkpoint` (original names), `prefix` (`""` or `"bert."`)
    before the encoder's names."""
    tensors = {}
    for name, value in checkpoint.weights.items():
        hf_name, transpose = original_to_hf_name(name, prefix)
        value = np.asarray(value, "float32")
        tensors[hf_name] = np.ascontiguousarray(value.T if transpose else value)
    return tensors


def write_hugging_face_files(folder, tensors, config, vocabulary, tokenizer_config=None):
    """`model.safetensors`, `config.json`, `vocab.txt` (when `vocabulary`)
    and `tokenizer_config.json` (when `tokenizer_config`) into `folder`."""
    from safetensors.numpy import save_file

    save_file(tensors, os.path.join(folder, SAFETENSORS), metadata={"format": "pt"})
    files = {"config.json": config, TOKENIZER_CONFIG: tokenizer_config}
    for name, content in files.items():
        if content is not None:
            with open(os.path.join(folder, name), "w") as f:
                json.dump(content, f, indent=2)
                f.write("\n")
    if vocabulary is not None:
        with open(os.path.join(folder, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("".join(token + "\n" for token in vocabulary))
