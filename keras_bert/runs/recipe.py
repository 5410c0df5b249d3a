"""Reading a recipe: a bundled name or a YAML path, read into a mapping of
sections, every problem one `ConfigError` line in one wording. Pre-training
(`pretraining/config.py`) and fine-tuning (`finetuning/config.py`) merge
the mapping into their dataclasses.

Standard library and PyYAML only: the commands read and check their recipe
before the backend is chosen and Keras loads.
"""

import os

import yaml

from keras_bert.config_tree import config_file_exists, read_yaml
from keras_bert.errors import ConfigError

# `config.yaml`'s record of what the run trained under (the Keras backend,
# the precision `auto` resolved to): not a setting, so a recipe read from a
# run's `config.yaml` ignores it (`run_record`).
TRAINED_UNDER = "trained_under"


def resolve_recipe(name_or_path, config_dir, kind):
    """The path of recipe `name_or_path`: a YAML path (local or remote) as
    given, or a name of a file in `config_dir` (`bert_base`). `kind` names
    the recipe in the error (`"pre-training"`)."""
    path = os.fspath(name_or_path)
    if path.endswith((".yaml", ".yml")):
        return path
    bundled = config_dir / f"{path}.yaml"
    if not bundled.is_file():
        shipped = sorted(p.stem for p in config_dir.glob("*.yaml"))
        raise ConfigError(
            f"No {kind} config {path!r} (a YAML path, or one of: {', '.join(shipped)})"
        )
    return str(bundled)


def read_recipe(path):
    """The mapping of sections in the YAML file `path`, without the run's
    `TRAINED_UNDER` record."""
    path = os.fspath(path)
    if not config_file_exists(path):
        raise ConfigError(f"{path}: no such config file")
    try:
        tree = read_yaml(path)
    except yaml.YAMLError as error:
        first = str(error).strip().splitlines()[0]
        raise ConfigError(f"{path}: not valid YAML: {first}") from None
    if not isinstance(tree, dict):
        raise ConfigError(f"{path}: expected a mapping of sections. Received: {tree!r}")
    tree.pop(TRAINED_UNDER, None)
    return tree
