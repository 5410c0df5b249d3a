"""Named model sizes: the YAML files in `configs/model/`.

Each file's keys are `BertBackbone`'s constructor arguments. The compact
models of Turc et al. (2019) are named `bert_L{layers}_H{hidden}`; five have
the usual short names (tiny, mini, small, medium, base) and are stored under
those, with the grid name accepted as an alias.
"""

import inspect
import os

import yaml

from keras_bert.config_tree import config_file_exists, read_yaml
from keras_bert.errors import ConfigError
from keras_bert.model_sizes import check_model_sizes
from keras_bert.paths import CONFIGS

CONFIG_DIR = CONFIGS / "model"
ALIASES = {
    "bert_L2_H128": "bert_tiny",
    "bert_L4_H256": "bert_mini",
    "bert_L4_H512": "bert_small",
    "bert_L8_H512": "bert_medium",
    "bert_L12_H768": "bert_base",
}


def available_model_configs():
    """Sorted names of the shipped model configs (aliases included)."""
    names = {path.stem for path in CONFIG_DIR.glob("*.yaml")}
    return sorted(names | set(ALIASES))


def model_config_path(name_or_path):
    """The YAML file of a config name or path (checked without TensorFlow
    or Keras when local); a `ConfigError` naming the shipped configs when
    there is none."""
    path = os.fspath(name_or_path)
    if not path.endswith((".yaml", ".yml")):
        path = str(CONFIG_DIR / f"{ALIASES.get(path, path)}.yaml")
    if not config_file_exists(path):
        raise ConfigError(
            f"Unknown model config {os.fspath(name_or_path)!r}: no file {path}. "
            f"Shipped configs: {', '.join(available_model_configs())}"
        )
    return path


def read_model_config(name_or_path):
    """Backbone constructor arguments from a config name or a YAML path
    (local or remote), sizes checked (`check_model_sizes`), without Keras:
    the commands check a config before the backend is chosen. What is wrong
    with the file is a `ConfigError`."""
    path = model_config_path(name_or_path)
    try:
        config = read_yaml(path)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(error).split())}") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: expected a mapping of BertBackbone arguments")
    try:
        check_model_sizes(config, where=f"{path}: ")
    except ValueError as error:  # The backbone's own check, a Keras-style `ValueError`.
        raise ConfigError(str(error)) from None
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
        raise ConfigError(
            f"{path}: unknown BertBackbone argument(s) {unknown}. Allowed: {sorted(known)}"
        )
    return config
