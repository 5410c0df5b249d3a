"""keras-hub `BertBackbone` files: `.keras`, `.weights.h5`, preset folders.

The weights are only loaded once the file's layout is known to match: a
fresh keras-hub `BertBackbone` built from the config writes its own
`.weights.h5`, and every path and shape in the source must match it (keras'
`load_weights` only warns about some mismatches). The config comes from the
archive's `config.json`, a preset folder's `config.json`, or, for a bare
`.weights.h5`, from the shapes in the file. keras-hub's BERT always uses the
tanh GELU, so the converted model does too.
"""

import json
import os
import tempfile
import zipfile

from keras_bert.conversion.bert_checkpoint import BertCheckpoint
from keras_bert.conversion.bert_name_map import keras_hub_backbone_weight_map
from keras_bert.conversion.vocabulary import read_vocabulary
from keras_bert.errors import CheckpointError
from keras_bert.model_sizes import check_model_sizes

_KERAS_HUB_CONFIG_KEYS = (
    "vocabulary_size",
    "num_layers",
    "num_heads",
    "hidden_dim",
    "intermediate_dim",
    "dropout",
    "max_sequence_length",
    "num_segments",
)


def keras_archive_class(path):
    """(`registered_name`, config) of a `.keras` archive's model.

    E.g. `"keras_hub>BertBackbone"` or `"keras_bert>BertPretrainer"`.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
    except (
        zipfile.BadZipFile,
        KeyError,
        json.JSONDecodeError,
        OSError,
    ) as error:
        raise CheckpointError(f"{path}: not a readable .keras archive: {error}") from None
    return config.get("registered_name") or config.get("class_name"), config


def _h5_layout(path):
    import h5py

    layout = {}

    def visit(name, item):
        if isinstance(item, h5py.Dataset):
            layout[name] = tuple(item.shape)

    try:
        with h5py.File(path, "r") as f:
            f.visititems(visit)
    except OSError as error:
        raise CheckpointError(
            f"{path}: unreadable HDF5 weights file (corrupt or truncated?): {error}"
        ) from None
    return layout


def _infer_config(layout, path):
    """keras-hub config from the shapes in a bare `.weights.h5`."""
    try:
        vocabulary_size, hidden_dim = layout["layers/reversible_embedding/vars/0"]
        max_sequence_length, _ = layout["layers/position_embedding/vars/0"]
        num_segments, _ = layout["layers/embedding/vars/0"]
        blocks = {p.split("/")[1] for p in layout if p.startswith("layers/transformer_encoder")}
        block = "layers/transformer_encoder"
        _, num_heads, _ = layout[f"{block}/_self_attention_layer/query_dense/vars/0"]
        _, intermediate_dim = layout[f"{block}/_feedforward_intermediate_dense/vars/0"]
    except (KeyError, ValueError) as error:
        raise CheckpointError(
            f"{path}: not a keras-hub BertBackbone weights file (no "
            f"{error}); put its config.json beside it."
        ) from None
    return {
        "vocabulary_size": vocabulary_size,
        "num_layers": len(blocks),
        "num_heads": num_heads,
        "hidden_dim": hidden_dim,
        "intermediate_dim": intermediate_dim,
        "max_sequence_length": max_sequence_length,
        "num_segments": num_segments,
    }


def _read(weights_path, config, source, vocab_path):
    import keras_hub

    config = {k: config[k] for k in _KERAS_HUB_CONFIG_KEYS if k in config}
    try:
        check_model_sizes(config)  # keras-hub's class would allocate any size.
        backbone = keras_hub.models.BertBackbone(**config)
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{source}: bad keras-hub config: {error}") from None
    layout = _h5_layout(weights_path)
    with tempfile.TemporaryDirectory() as tmp:
        reference_path = os.path.join(tmp, "reference.weights.h5")
        backbone.save_weights(reference_path)
        expected = _h5_layout(reference_path)
    problems = []
    for label, paths in (
        ("missing", set(expected) - set(layout)),
        ("unexpected", set(layout) - set(expected)),
    ):
        if paths:
            problems.append(f"{len(paths)} {label}: {', '.join(sorted(paths)[:8])}")
    misshaped = [
        f"{p} {layout[p]} vs {expected[p]}"
        for p in sorted(set(layout) & set(expected))
        if layout[p] != expected[p]
    ]
    if misshaped:
        problems.append(f"{len(misshaped)} mis-shaped: {', '.join(misshaped[:8])}")
    if problems:
        raise CheckpointError(
            f"{source}: weights do not match a keras-hub BertBackbone with "
            f"config {config}: " + "; ".join(problems) + "."
        )
    backbone.load_weights(weights_path)
    mappings = keras_hub_backbone_weight_map(backbone)
    vocabulary, vocab_note = read_vocabulary(vocab_path)
    return BertCheckpoint(
        config={
            "vocabulary_size": backbone.vocabulary_size,
            "num_layers": backbone.num_layers,
            "num_heads": backbone.num_heads,
            "hidden_dim": backbone.hidden_dim,
            "intermediate_dim": backbone.intermediate_dim,
            "dropout": backbone.dropout,
            "max_sequence_length": backbone.max_sequence_length,
            "num_segments": backbone.num_segments,
            # Fixed inside keras-hub's BertBackbone.
            "hidden_activation": "gelu_approximate",
            "layer_norm_epsilon": 1e-12,
        },
        weights={m.name: m.from_keras() for m in mappings},
        vocabulary=vocabulary,
        source=source,
        notes=[vocab_note],
    )


def _backbone_config(config_json, source):
    name = config_json.get("registered_name") or config_json.get("class_name")
    if name not in ("keras_hub>BertBackbone", "BertBackbone"):
        raise CheckpointError(f"{source}: expected a keras-hub BertBackbone. Received: {name}")
    return config_json["config"]


def read_keras_hub(path, vocab_path=None):
    """`BertCheckpoint` from a keras-hub `BertBackbone`.

    Args:
        path: a `.keras` archive, a `.weights.h5` file (a `config.json`
            beside it is used if present), or a keras-hub preset folder
            (`config.json`, `model.weights.h5`,
            `assets/tokenizer/vocabulary.txt`).
        vocab_path: `vocab.txt` to carry along. Defaults to the one beside
            the file (or the preset's tokenizer vocabulary).
    """
    path = os.fspath(path)
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    if vocab_path is None:
        vocab_path = os.path.join(folder, "vocab.txt")
        preset_vocab = os.path.join(folder, "assets", "tokenizer", "vocabulary.txt")
        if os.path.isdir(path) and os.path.isfile(preset_vocab):
            vocab_path = preset_vocab
    if path.endswith(".keras"):
        source = f"keras-hub archive {path}"
        _, config_json = keras_archive_class(path)
        config = _backbone_config(config_json, source)
        with tempfile.TemporaryDirectory() as tmp:
            try:
                with zipfile.ZipFile(path) as archive:
                    archive.extract("model.weights.h5", tmp)
            except (KeyError, zipfile.BadZipFile) as error:
                raise CheckpointError(f"{source}: {error}") from None
            return _read(
                os.path.join(tmp, "model.weights.h5"),
                config,
                source,
                vocab_path,
            )
    if os.path.isdir(path):
        weights_path = os.path.join(path, "model.weights.h5")
        source = f"keras-hub preset {path}"
    else:
        weights_path = path
        source = f"keras-hub weights {path}"
    config_path = os.path.join(folder, "config.json")
    if os.path.isfile(config_path):
        with open(config_path) as f:
            config = _backbone_config(json.load(f), config_path)
    else:
        config = _infer_config(_h5_layout(weights_path), weights_path)
    return _read(weights_path, config, source, vocab_path)
