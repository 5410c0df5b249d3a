"""Named model sizes: the YAML files in `configs/model/`.

Each file's keys are `BertBackbone`'s constructor arguments. The compact
models of Turc et al. (2019) are named `bert_L{layers}_H{hidden}`; five have
the usual short names (tiny, mini, small, medium, base) and are stored under
those, with the grid name accepted as an alias.
"""

import inspect
import numbers
import os

import yaml

from keras_bert.config_tree import config_file_exists, read_yaml
from keras_bert.paths import CONFIGS

CONFIG_DIR = CONFIGS / "model"
ALIASES = {
    "bert_L2_H128": "bert_tiny",
    "bert_L4_H256": "bert_mini",
    "bert_L4_H512": "bert_small",
    "bert_L8_H512": "bert_medium",
    "bert_L12_H768": "bert_base",
}
# Bounds on every `BertBackbone` argument that sizes the model, checked
# wherever a model config is formed (a file here, `model_overrides`,
# `random:NAME`, a checkpoint's JSON, the constructor itself), so a typo is
# one line naming the key instead of an out-of-memory error after the
# start-up. Each is far above any published BERT-style encoder's (BERT-Large:
# 24 layers, 16 heads, width 1,024, feed-forward 4,096, 512 positions, 2
# segments; XLM-R's vocabulary: 250,002 tokens).
SIZE_LIMITS = {
    "vocabulary_size": 2**20,
    "num_layers": 1024,
    "num_heads": 1024,
    "hidden_dim": 2**16,
    "intermediate_dim": 2**18,
    "max_sequence_length": 2**20,
    "num_segments": 1024,
}
# Sizes each within bounds can still multiply into a model no device holds:
# training takes 16 bytes a parameter (weights, gradients, two Adam moments)
# on every replica, so 10 billion is 160 GB; the largest BERT-style encoders
# published have 1.5 (DeBERTa-v2-xxlarge) to 3.9 billion (Megatron-BERT).
MAX_PARAMETERS = 10**10


def available_model_configs():
    """Sorted names of the shipped model configs (aliases included)."""
    names = {path.stem for path in CONFIG_DIR.glob("*.yaml")}
    return sorted(names | set(ALIASES))


def model_config_path(name_or_path):
    """The YAML file of a config name or path (checked without TensorFlow
    or Keras when local); a `ValueError` naming the shipped configs when
    there is none."""
    path = os.fspath(name_or_path)
    if not path.endswith((".yaml", ".yml")):
        path = str(CONFIG_DIR / f"{ALIASES.get(path, path)}.yaml")
    if not config_file_exists(path):
        raise ValueError(
            f"Unknown model config {os.fspath(name_or_path)!r}: no file {path}. "
            f"Shipped configs: {', '.join(available_model_configs())}"
        )
    return path


def check_model_sizes(config, where=""):
    """Raises `ValueError` (`where` + one line naming the key and echoing
    its value) for a size in `BertBackbone` arguments `config` that is not
    an integer within `SIZE_LIMITS`, or sizes that make more than
    `MAX_PARAMETERS` parameters; keys `config` lacks are not checked."""
    for key, limit in SIZE_LIMITS.items():
        if key not in config:
            continue
        value = config[key]
        whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        if not (whole and 1 <= value <= limit):
            raise ValueError(
                f"{where}`{key}` must be an integer in [1, {limit:,}]. Received: {key}={value!r}"
            )
    if {"vocabulary_size", "num_layers", "hidden_dim", "intermediate_dim"} <= set(config):
        count = parameter_count(config)
        if count > MAX_PARAMETERS:
            sizes = ", ".join(f"{key}={config[key]}" for key in SIZE_LIMITS if key in config)
            raise ValueError(
                f"{where}BertBackbone sizes must make at most {MAX_PARAMETERS:,} parameters. "
                f"Received: {sizes} (about {count:,})"
            )


def parameter_count(config):
    """`BertBackbone`'s parameter count, near enough to bound it: the
    embedding tables, per block the attention's four H×H projections and the
    feed-forward's two (gated: three) H×I ones, the pooler; biases and
    LayerNorms left out, a missing optional size counted as 0."""
    h, i = config["hidden_dim"], config["intermediate_dim"]
    rows = config["vocabulary_size"] + config.get("max_sequence_length", 0)
    rows += config.get("num_segments", 0)
    feedforward = (3 if config.get("gated_feedforward") else 2) * h * i
    return rows * h + config["num_layers"] * (4 * h * h + feedforward) + h * h


def read_model_config(name_or_path):
    """Backbone constructor arguments from a config name or a YAML path
    (local or remote), sizes checked (`check_model_sizes`), without Keras:
    the commands check a config before the backend is chosen."""
    path = model_config_path(name_or_path)
    try:
        config = read_yaml(path)
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: not valid YAML: {' '.join(str(error).split())}") from None
    if not isinstance(config, dict):
        raise ValueError(f"{path}: expected a mapping of BertBackbone arguments")
    check_model_sizes(config, where=f"{path}: ")
    return config


def load_model_config(name_or_path):
    """Backbone constructor arguments from a config name or a YAML path
    (local or remote), sizes and names checked.

    Example: `BertBackbone(**load_model_config("bert_base"))`.
    """
    from keras_bert.models import BertBackbone

    path = model_config_path(name_or_path)
    config = read_model_config(path)
    known = set(inspect.signature(BertBackbone.__init__).parameters) - {
        "self",
        "kwargs",
    }
    unknown = sorted(set(config) - known)
    if unknown:
        raise ValueError(
            f"{path}: unknown BertBackbone argument(s) {unknown}. Allowed: {sorted(known)}"
        )
    return config
