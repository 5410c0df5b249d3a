"""The fine-tuning recipe as dataclasses, loaded from `configs/finetune/`.

Field names are the YAML keys; `--set section.key=value` overrides one, and
an unknown key is an error. Defaults are the paper's (appendix A.3): batch
32, 3 epochs, learning rate from {5e-5, 3e-5, 2e-5}, 10% warmup, dropout
0.1 in the encoder and on the task head (`training.dropout`).
"""

import dataclasses
import math
import os
import typing
from pathlib import Path

import tensorflow as tf
import yaml

from keras_bert.paths import CONFIGS
from keras_bert.errors import FinetuneConfigError
from keras_bert.file_io import is_file
from keras_bert.optimization.optimizer_config import OPTIMIZERS
from keras_bert.optimization.warmup_linear_decay import DECAY_STARTS
from pipelines.tasks.features import MIN_SEQ_LEN

CONFIG_DIR = CONFIGS / "finetune"


@dataclasses.dataclass
class DataConfig:
    """Files, columns and sequence shapes.

    `train_file`/`dev_file` are relative to `--data_dir` (None: the task's
    usual names). `split_train_from_dev` > 0 trains on that fraction of the
    dev file's articles/examples and evaluates on the rest (SQuAD without a
    train set). `train_limit`/`eval_limit` cap the example counts (CPU
    benchmarks); `lower_case` None infers it from the vocabulary.
    """

    max_seq_length: int = 128
    train_file: typing.Optional[str] = None
    dev_file: typing.Optional[str] = None
    text_column: str = "text"
    text_b_column: typing.Optional[str] = None
    label_column: str = "label"
    label_names: typing.Optional[list] = None
    lower_case: typing.Optional[bool] = None
    split_train_from_dev: float = 0.0
    train_limit: typing.Optional[int] = None
    eval_limit: typing.Optional[int] = None
    doc_stride: int = 128
    max_query_length: int = 64


@dataclasses.dataclass
class OptimizerConfig:
    """`name` and `decay_start` as in pre-training (`adamw`,
    `adam_weight_decay` or `lamb`; `warmup_end` or `step_0`); the warmup is
    a fraction of the run."""

    name: str = "adamw"
    decay_start: str = "warmup_end"
    learning_rate: float = 2e-5
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    epsilon: float = 1e-6
    global_clipnorm: typing.Optional[float] = 1.0


@dataclasses.dataclass
class TrainingConfig:
    batch_size: int = 32
    eval_batch_size: int = 64
    epochs: float = 3.0
    dropout: float = 0.1
    seed: int = 0
    verbose: int = 2
    # Batches of similar length: faster (about half the padded positions on
    # SST-2), but off by default: the original draws random batches, and on
    # tasks whose labels go with length (STS-B) grouped batches score worse.
    group_by_length: bool = False


@dataclasses.dataclass
class SquadConfig:
    n_best_size: int = 20
    max_answer_length: int = 30
    null_score_diff_threshold: float = 0.0


@dataclasses.dataclass
class ExportConfig:
    enabled: bool = True
    seq_len: typing.Optional[int] = None  # None: data.max_seq_length.


@dataclasses.dataclass
class FinetuneConfig:
    task: str = "sst2"
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    optimizer: OptimizerConfig = dataclasses.field(default_factory=OptimizerConfig)
    training: TrainingConfig = dataclasses.field(default_factory=TrainingConfig)
    squad: SquadConfig = dataclasses.field(default_factory=SquadConfig)
    export: ExportConfig = dataclasses.field(default_factory=ExportConfig)

    def to_dict(self):
        return dataclasses.asdict(self)


def _apply(obj, key_path, value, where):
    parts = key_path.split(".")
    target = obj
    for part in parts[:-1]:
        if not dataclasses.is_dataclass(target) or not hasattr(target, part):
            raise FinetuneConfigError(f"{where}: unknown config key {key_path!r}")
        target = getattr(target, part)
    leaf = parts[-1]
    fields = {f.name: f for f in dataclasses.fields(target)} if dataclasses.is_dataclass(target) else {}
    if leaf not in fields or dataclasses.is_dataclass(getattr(target, leaf)):
        known = ", ".join(sorted(fields))
        raise FinetuneConfigError(
            f"{where}: unknown config key {key_path!r} (known here: {known})"
        )
    setattr(target, leaf, _coerce(value, fields[leaf].type, getattr(target, leaf), key_path, where))


def _coerce(value, annotation, current, key, where):
    if isinstance(value, str):
        try:
            parsed = yaml.safe_load(value) if value != "" else None
        except yaml.YAMLError:
            raise FinetuneConfigError(
                f"{where}: {key} is not a YAML value. Received: {value!r}"
            ) from None
    else:
        parsed = value
    if parsed is None:
        return None
    kinds = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    kind = kinds[0]
    if kind is float and isinstance(parsed, str):
        try:  # YAML 1.1 reads "5e-5" (no dot) as a string.
            return float(parsed)
        except ValueError:
            pass
    if kind is float and isinstance(parsed, (int, float)) and not isinstance(parsed, bool):
        return float(parsed)
    if kind is int and isinstance(parsed, int) and not isinstance(parsed, bool):
        return parsed
    if kind is bool and isinstance(parsed, bool):
        return parsed
    if kind is str:
        return str(parsed)
    if kind is list and isinstance(parsed, list):
        return parsed
    raise FinetuneConfigError(
        f"{where}: {key} must be {getattr(kind, '__name__', kind)}. Received: {value!r}"
    )


def _flatten(tree, prefix=""):
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def load_finetune_config(task, config_file=None, overrides=()):
    """Defaults ← `configs/finetune/<task kind>.yaml` (or `config_file`)
    ← `overrides` (`"section.key=value"` strings)."""
    config = FinetuneConfig(task=task)
    if config_file:
        for key, value in _flatten(_read_tree(config_file)):
            if key == "task":
                continue
            _apply(config, key, value, str(config_file))
    for item in overrides:
        if "=" not in item:
            raise FinetuneConfigError(f"--set {item!r}: expected key=value")
        key, value = item.split("=", 1)
        _apply(config, key.strip(), value, "--set")
    _check_values(config)
    return config


def load_saved_config(model_dir):
    """`(task, config)` of the fine-tuning run whose `config.yaml` (written
    by the runner: the resolved config, the task, where the data and the
    checkpoint came from) is in `model_dir`."""
    path = os.path.join(model_dir, "config.yaml")
    tree = _read_tree(path)
    task = tree.get("task")
    if not isinstance(task, str) or "phases" in tree:
        raise FinetuneConfigError(f"{path}: not a fine-tuning run's config")
    config = FinetuneConfig(task=task)
    for key, value in _flatten(tree):
        if key not in ("task", "init_checkpoint", "data_dir"):
            _apply(config, key, value, path)
    _check_values(config)
    return task, config


def _read_tree(path):
    path = os.fspath(path)
    if not is_file(path):
        raise FinetuneConfigError(f"{path}: no such config file")
    try:
        with tf.io.gfile.GFile(path) as f:
            tree = yaml.safe_load(f.read()) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        first = str(error).strip().splitlines()[0]
        raise FinetuneConfigError(f"{path}: not a YAML file: {first}") from None
    if not isinstance(tree, dict):
        raise FinetuneConfigError(f"{path}: expected a mapping of sections")
    return tree


# Lower bounds the dataclass types cannot express, checked once every
# override is in.
_MINIMUMS = {
    "data.max_seq_length": MIN_SEQ_LEN,  # [CLS] A [SEP] B [SEP]
    "data.doc_stride": 1,
    "data.max_query_length": 1,
    "training.batch_size": 1,
    "training.eval_batch_size": 1,
    "squad.n_best_size": 1,
    "squad.max_answer_length": 1,
    "export.seq_len": MIN_SEQ_LEN,
}


# Keys whose value must be one of a few words.
_CHOICES = {
    "optimizer.name": OPTIMIZERS,
    "optimizer.decay_start": DECAY_STARTS,
}


# Ranges of the float keys (NaN fails every comparison, so it is refused).
_RANGES = {
    "optimizer.learning_rate": (lambda v: 0 < v < math.inf, "finite and > 0"),
    "optimizer.weight_decay": (lambda v: 0 <= v < math.inf, "finite and >= 0"),
    "optimizer.warmup_fraction": (lambda v: 0 <= v <= 1, "between 0 and 1"),
    "optimizer.epsilon": (lambda v: 0 < v < math.inf, "finite and > 0"),
    "optimizer.global_clipnorm": (lambda v: 0 < v < math.inf,
                                  "finite and > 0 (or null: no clipping)"),
    "training.epochs": (lambda v: 0 < v < math.inf, "finite and > 0"),
    "training.dropout": (lambda v: 0 <= v < 1, ">= 0 and < 1"),
}
_NONE_ALLOWED = {"optimizer.global_clipnorm"}


def _check_values(config):
    for key, choices in _CHOICES.items():
        section, name = key.split(".")
        value = getattr(getattr(config, section), name)
        if value not in choices:
            raise FinetuneConfigError(
                f"{key} must be one of {', '.join(choices)}. "
                f"Received: {key}={value!r}"
            )
    for key, minimum in _MINIMUMS.items():
        section, name = key.split(".")
        value = getattr(getattr(config, section), name)
        if key == "export.seq_len" and value is None:
            continue  # data.max_seq_length's.
        if value is None or value < minimum:
            raise FinetuneConfigError(
                f"{key} must be >= {minimum}. Received: {key}={value}"
            )
    for key, (in_range, wanted) in _RANGES.items():
        section, name = key.split(".")
        value = getattr(getattr(config, section), name)
        if value is None and key in _NONE_ALLOWED:
            continue
        if value is None or not in_range(value):
            raise FinetuneConfigError(
                f"{key} must be {wanted}. Received: {key}={value}"
            )
