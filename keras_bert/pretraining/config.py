"""The pre-training recipe as dataclasses, loaded from `configs/pretrain/`.

One `PretrainingConfig` holds every knob of a run; its sections are small
dataclasses whose field names are the YAML keys. Overrides use dotted keys
(`optimizer.learning_rate=3e-4`, `phases.1.batch_size=16`) and an unknown
key is an error, as in tensorflow/models `official/core/train_utils.py`.
"""

import dataclasses
import json
import math
import os
import typing
from pathlib import Path

import tensorflow as tf
import yaml

from keras_bert.paths import CONFIGS
from keras_bert.file_io import is_file, write_atomically
from keras_bert.errors import ConfigError
from keras_bert.optimization.optimizer_config import OPTIMIZERS, OptimizerConfig
from keras_bert.optimization.warmup_linear_decay import DECAY_STARTS

CONFIG_DIR = CONFIGS / "pretrain"
STRATEGIES = ("auto", "cpu", "gpu", "mirrored", "multi_worker", "tpu")
PRECISIONS = ("auto", "float32", "mixed_bfloat16", "mixed_float16")
@dataclasses.dataclass
class PhaseConfig:
    """One pre-training phase: a sequence length and its batch shape.

    BERT trains 90% of the steps at 128 tokens and 10% at 512 (paper §A.2);
    `steps` fixes a phase's length, `fraction` takes a share of
    `train_steps` (exactly one of the two). `batch_size` is global: summed
    over replicas and workers, counted per micro-batch when gradients are
    accumulated.
    """

    seq_len: int = 128
    max_predictions: int = 20
    batch_size: int = 32
    steps: typing.Optional[int] = None
    fraction: typing.Optional[float] = None


@dataclasses.dataclass
class DataConfig:
    """Where the corpus is and how `pipelines.pretraining_dataset` reads it.

    `eval_files` None holds out `holdout_fraction` of `train_files` (by
    file) with `pipelines.split_files`. `shuffle: false` reads files,
    documents and pairs in order (quick start-up for tests and debugging).
    `seed` also seeds the initial weights and dropout: a rerun of a
    config repeats it.
    """

    train_files: typing.Union[str, list] = "data/corpus/*/*.txt"
    eval_files: typing.Union[str, list, None] = None
    holdout_fraction: float = 0.05
    vocab_file: str = "data/vocab/bert_uncased_vocab.txt"
    corpus_format: str = "text"
    lower_case: bool = True
    mask_rate: float = 0.15
    short_seq_prob: float = 0.1
    whole_word_masking: bool = False
    # Share of NotNext pairs: 0.5 in BERT; 0.0 feeds contiguous text and
    # leaves the next-sentence head nothing to learn (RoBERTa, Liu et al.
    # 2019, found next-sentence prediction does not help).
    next_sentence_rate: float = 0.5
    # Fill each sequence with consecutive documents, each ended by [SEP]
    # (RoBERTa's FULL-SENTENCES): for short documents, `corpus_format: lines`.
    # Needs next_sentence_rate 0.
    pack_documents: bool = False
    shuffle: bool = True
    seed: int = 0


@dataclasses.dataclass
class CheckpointConfig:
    """Checkpoint every `every_steps` optimizer updates, keep the last `keep`."""

    every_steps: int = 1000
    keep: int = 3


@dataclasses.dataclass
class PretrainingConfig:
    """Everything one pre-training run needs.

    Args:
        model: str. A name in `configs/model/` or a YAML path.
        model_overrides: dict. `BertBackbone` arguments that replace the
            named config's, e.g. `{dropout: 0.0}`.
        data: `DataConfig`.
        phases: list of `PhaseConfig`, run in order with one optimizer and
            one learning-rate schedule.
        train_steps: int. Optimizer updates over all phases; phases given
            by `fraction` share it.
        optimizer: `OptimizerConfig`.
        checkpoint: `CheckpointConfig`.
        precision: `"float32"`, `"mixed_bfloat16"` or `"mixed_float16"`
            (the last with dynamic loss scaling), or `"auto"`:
            `mixed_bfloat16` where it measured faster (a GPU or TPU; a CPU
            with bf16 arithmetic for models >= 768 wide, not under JAX),
            `float32` elsewhere (`pretraining.resolve_precision`).
        strategy: one of `STRATEGIES`.
        tpu: str or None. TPU name or `grpc://` address for `strategy=tpu`.
        jit_compile: `"auto"`, True or False, passed to `Model.compile`.
        steps_per_loop: int. Updates per Keras epoch: metrics are averaged
            and logged over this window, like Model Garden's
            `steps_per_loop`.
        eval_steps: int. Held-out batches evaluated after each phase.
        eval_every_steps: int. Also evaluate held-out data every this many
            updates (a multiple of `steps_per_loop`); 0: after phases only.
        fill_mask_probes: list of str. Sentences with `[MASK]`s whose top-5
            fillers the run prints at the end, next to a freshly
            initialised model's: does the model use context?
        profile_steps: str or None. `"first,last"` optimizer steps traced
            by the profiler into the TensorBoard log directory.
        init_checkpoint: str or None. Weights only (no optimizer, no step)
            from a `.keras` backbone or pretrainer or a checkpoint directory.
        model_dir: str. Checkpoints, logs, resolved config and exports.
    """

    model: str = "bert_tiny"
    model_overrides: dict = dataclasses.field(default_factory=dict)
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    phases: list = dataclasses.field(
        default_factory=lambda: [
            PhaseConfig(128, 20, 256, fraction=0.9),
            PhaseConfig(512, 80, 256, fraction=0.1),
        ]
    )
    train_steps: int = 1_000_000
    optimizer: OptimizerConfig = dataclasses.field(
        default_factory=OptimizerConfig
    )
    checkpoint: CheckpointConfig = dataclasses.field(
        default_factory=CheckpointConfig
    )
    precision: str = "float32"
    strategy: str = "auto"
    tpu: typing.Optional[str] = None
    jit_compile: typing.Union[str, bool] = "auto"
    steps_per_loop: int = 100
    eval_steps: int = 20
    eval_every_steps: int = 0
    fill_mask_probes: list = dataclasses.field(default_factory=list)
    profile_steps: typing.Optional[str] = None
    init_checkpoint: typing.Optional[str] = None
    model_dir: str = "runs/pretrain_default"

    def phase_steps(self):
        """Optimizer updates per phase; fractions are rounded, the last
        fraction-sized phase takes what rounding left."""
        fixed = sum(p.steps for p in self.phases if p.steps is not None)
        shared = self.train_steps - fixed
        steps, given = [], 0
        flexible = [i for i, p in enumerate(self.phases) if p.steps is None]
        for i, phase in enumerate(self.phases):
            if phase.steps is not None:
                steps.append(phase.steps)
            elif i == flexible[-1]:
                steps.append(shared - given)
            else:
                steps.append(int(round(phase.fraction * shared)))
                given += steps[-1]
        return steps

    def validate(self):
        """Raises `ConfigError` naming the first bad value."""

        def check(ok, message):
            if not ok:
                raise ConfigError(message)

        check(self.strategy in STRATEGIES,
              f"`strategy` must be one of {STRATEGIES}. "
              f"Received: strategy={self.strategy!r}")
        check(self.precision in PRECISIONS,
              f"`precision` must be one of {PRECISIONS}. "
              f"Received: precision={self.precision!r}")
        check(self.data.eval_files is not None
              or 0 < self.data.holdout_fraction < 1,
              "`data.holdout_fraction` (the share of train_files held out for "
              "evaluation when data.eval_files is not given) must be in (0, 1). "
              f"Received: data.holdout_fraction={self.data.holdout_fraction}")
        check(self.optimizer.name in OPTIMIZERS,
              f"`optimizer.name` must be one of {OPTIMIZERS}. "
              f"Received: optimizer.name={self.optimizer.name!r}")
        check(self.optimizer.decay_start in DECAY_STARTS,
              f"`optimizer.decay_start` must be one of {DECAY_STARTS}. "
              f"Received: optimizer.decay_start={self.optimizer.decay_start!r}")
        check(self.jit_compile in ("auto", True, False),
              "`jit_compile` must be auto, true or false. "
              f"Received: jit_compile={self.jit_compile!r}")
        for name in ("train_steps", "steps_per_loop", "eval_steps",
                     "eval_every_steps"):
            value = getattr(self, name)
            positive = name in ("train_steps", "steps_per_loop")
            check(isinstance(value, int) and value >= positive,
                  f"`{name}` must be a {'positive' if positive else 'non-negative'}"
                  f" int. Received: {name}={value!r}")
        check(self.eval_every_steps % self.steps_per_loop == 0,
              "`eval_every_steps` must be a multiple of `steps_per_loop`. "
              f"Received: eval_every_steps={self.eval_every_steps}, "
              f"steps_per_loop={self.steps_per_loop}")
        check(all(isinstance(p, str) and "[MASK]" in p
                  for p in self.fill_mask_probes),
              "Every `fill_mask_probes` entry must be a string with [MASK]. "
              f"Received: {self.fill_mask_probes!r}")
        check(0.0 < self.data.mask_rate < 1.0,
              "`data.mask_rate` must be in (0, 1). "
              f"Received: data.mask_rate={self.data.mask_rate!r}")
        for name in ("short_seq_prob", "next_sentence_rate"):
            value = getattr(self.data, name)
            check(0.0 <= value <= 1.0, f"`data.{name}` must be in [0, 1]. "
                  f"Received: data.{name}={value!r}")
        check(not self.data.pack_documents or self.data.next_sentence_rate == 0,
              "`data.pack_documents` fills sequences across documents, so it "
              "needs the next-sentence task off (`data.next_sentence_rate: 0`). "
              f"Received: data.next_sentence_rate={self.data.next_sentence_rate!r}")
        # Imported here, like every pipeline use in keras_bert.pretraining: the
        # package must import where tensorflow-text is absent.
        from pipelines.tasks.features import MIN_SEQ_LEN

        check(self.phases, "`phases` must list at least one phase.")
        for i, phase in enumerate(self.phases):
            check(phase.seq_len >= MIN_SEQ_LEN,
                  f"phases.{i}: `seq_len` must be >= {MIN_SEQ_LEN} ([CLS] A [SEP] B "
                  f"[SEP]). Received: seq_len={phase.seq_len}")
            check((phase.steps is None) != (phase.fraction is None),
                  f"phases.{i}: give exactly one of `steps` and `fraction`. "
                  f"Received: steps={phase.steps}, fraction={phase.fraction}")
            check(1 <= phase.max_predictions <= phase.seq_len,
                  f"phases.{i}: `max_predictions` must be in [1, seq_len]. "
                  f"Received: max_predictions={phase.max_predictions}, "
                  f"seq_len={phase.seq_len}")
            check(phase.batch_size >= 1,
                  f"phases.{i}: `batch_size` must be >= 1. "
                  f"Received: batch_size={phase.batch_size}")
        fractions = [p.fraction for p in self.phases if p.fraction is not None]
        check(all(0 < f <= 1 for f in fractions)
              and (not fractions or math.isclose(sum(fractions), 1.0)),
              "The phases' `fraction`s share what `steps` phases leave of "
              "train_steps: each in (0, 1], summing to 1. Received: "
              f"fractions={fractions}")
        steps = self.phase_steps()
        check(all(s >= 1 for s in steps),
              f"Every phase needs >= 1 step. Received: train_steps="
              f"{self.train_steps}, phase steps={steps}")
        optimizer = self.optimizer
        check(0 <= optimizer.warmup_steps <= self.train_steps,
              "`optimizer.warmup_steps` must be in [0, train_steps]. Received: "
              f"warmup_steps={optimizer.warmup_steps}, "
              f"train_steps={self.train_steps}")
        check(optimizer.learning_rate > 0,
              "`optimizer.learning_rate` must be > 0. "
              f"Received: learning_rate={optimizer.learning_rate}")
        check(optimizer.gradient_accumulation_steps >= 1,
              "`optimizer.gradient_accumulation_steps` must be >= 1. Received: "
              f"gradient_accumulation_steps="
              f"{optimizer.gradient_accumulation_steps}")
        check(self.checkpoint.every_steps >= 1 and self.checkpoint.keep >= 1,
              "`checkpoint.every_steps` and `checkpoint.keep` must be >= 1. "
              f"Received: every_steps={self.checkpoint.every_steps}, "
              f"keep={self.checkpoint.keep}")
        if self.profile_steps is not None:
            parts = str(self.profile_steps).split(",")
            check(len(parts) == 2 and all(p.strip().isdigit() for p in parts)
                  and int(parts[0]) <= int(parts[1]),
                  "`profile_steps` must be 'first,last' step numbers. "
                  f"Received: profile_steps={self.profile_steps!r}")

    def to_dict(self):
        return dataclasses.asdict(self)


def _from_dict(cls, values, prefix=""):
    """Builds dataclass `cls` from a mapping, rejecting unknown keys."""
    if not isinstance(values, dict):
        raise ConfigError(
            f"`{prefix.rstrip('.') or 'config'}` must be a mapping. "
            f"Received: {values!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ConfigError(
            f"Unknown config key(s) {[prefix + k for k in unknown]}. "
            f"Allowed under {prefix.rstrip('.') or 'the top level'}: "
            f"{sorted(fields)}")
    kwargs = {}
    for name, value in values.items():
        field_type = fields[name].type
        if dataclasses.is_dataclass(field_type):
            value = _from_dict(field_type, value, f"{prefix}{name}.")
        elif name == "phases":
            if not isinstance(value, list):
                raise ConfigError(f"`phases` must be a list. Received: {value!r}")
            value = [
                _from_dict(PhaseConfig, phase, f"phases.{i}.")
                for i, phase in enumerate(value)
            ]
        else:
            value = _check_type(field_type, value, prefix + name)
        kwargs[name] = value
    return cls(**kwargs)


def _check_type(field_type, value, key):
    allowed = typing.get_args(field_type) or (field_type,)
    allowed = tuple(typing.get_origin(t) or t for t in allowed)
    if value is None and type(None) in allowed:
        return value
    if float in allowed and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and float in allowed:
        try:  # YAML 1.1 reads `1e-4` (no dot) as a string.
            return float(value)
        except ValueError:
            pass
    ok = any(
        isinstance(value, t) and not (t is int and isinstance(value, bool))
        for t in allowed
    )
    if not ok:
        names = [getattr(t, "__name__", str(t)) for t in allowed]
        raise ConfigError(
            f"`{key}` must be of type {' or '.join(names)}. "
            f"Received: {key}={value!r}")
    return value


def _set_dotted(tree, key, value):
    """Sets `a.b.0.c` in nested dicts/lists; refuses paths that don't exist
    (except new keys under a free-form dict such as `model_overrides`)."""
    parts = key.split(".")
    node = tree
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(
                    f"Unknown config key {key!r}: "
                    f"{'.'.join(parts[:depth]) or 'list'} has {len(node)} "
                    "entries.")
            part = int(part)
        elif not isinstance(node, dict) or (
            part not in node and parts[0] != "model_overrides"
        ):
            raise ConfigError(
                f"Unknown config key {key!r}. Top-level keys: "
                f"{sorted(tree)}")
        if last:
            node[part] = value
        else:
            node = node[part]


def parse_override(text):
    """`"a.b=value"` -> `("a.b", value)`, the value read as YAML."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(
            f"An override must look like key=value. Received: {text!r}")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as error:
        raise ConfigError(f"Cannot read the value of {text!r}: {error}") from None
    return key.strip(), value


def resolve_config_path(name_or_path):
    """A YAML path (local or remote), or a name in `configs/pretrain/`
    (`bert_base`)."""
    path = os.fspath(name_or_path)
    if not path.endswith((".yaml", ".yml")):
        path = str(CONFIG_DIR / f"{name_or_path}.yaml")
    if not is_file(path):
        shipped = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml"))
        raise ConfigError(
            f"No pre-training config {str(name_or_path)!r} (looked for "
            f"{path}). Shipped: {', '.join(shipped)}")
    return path


def load_pretraining_config(name_or_path="default", overrides=()):
    """Reads a pre-training YAML and applies `key=value` overrides.

    Args:
        name_or_path: str. A file in `configs/pretrain/` (without `.yaml`)
            or a YAML path. Defaults to the bundled small run.
        overrides: iterable of `"dotted.key=value"` strings or a dict of
            dotted keys to values. An unknown key is a `ConfigError`.

    Returns:
        A validated `PretrainingConfig`.

    Example:
    >>> config = load_pretraining_config(
    ...     "default", ["optimizer.learning_rate=3e-4", "phases.0.batch_size=16"])
    >>> config.optimizer.learning_rate
    0.0003
    """
    path = resolve_config_path(name_or_path)
    try:
        with tf.io.gfile.GFile(path) as f:
            values = yaml.safe_load(f.read()) or {}
    except yaml.YAMLError as error:
        raise ConfigError(f"{path} is not valid YAML: {error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path} is not UTF-8 text: {error}") from None
    base = _from_dict(PretrainingConfig, values).to_dict()
    pairs = overrides.items() if isinstance(overrides, dict) else map(
        parse_override, overrides)
    for key, value in pairs:
        _set_dotted(base, key, value)
    config = _from_dict(PretrainingConfig, base)
    config.validate()
    return config


def config_from_dict(values):
    """A validated `PretrainingConfig` from a plain dict (e.g. saved JSON)."""
    config = _from_dict(PretrainingConfig, values)
    config.validate()
    return config


# What a rerun on an existing `model_dir` may change: how the run is
# watched, saved and placed, not what it learns. (`init_checkpoint` is
# read only before the first checkpoint; reruns are checked after it.)
RERUN_MAY_CHANGE = (
    "checkpoint.every_steps", "checkpoint.keep", "eval_every_steps",
    "eval_steps", "fill_mask_probes", "init_checkpoint", "jit_compile",
    "model_dir", "profile_steps", "steps_per_loop", "strategy", "tpu",
)


def _flatten(values, prefix=""):
    """`{"a": {"b": [{"c": 1}]}}` -> `{"a.b.0.c": 1}`."""
    if isinstance(values, dict):
        items = values.items()
    elif isinstance(values, list) and all(isinstance(v, dict) for v in values):
        items = enumerate(values)
    else:
        return {prefix[:-1]: values}
    flat = {}
    for key, value in items:
        flat.update(_flatten(value, f"{prefix}{key}."))
    return flat


def check_rerun_config(config, path, allow_longer_train_steps=False):
    """Raises `ConfigError` if `config` differs from the one recorded at
    `path` in a key outside `RERUN_MAY_CHANGE`: resuming checkpoints
    under another model, data, schedule or phase plan would train a mix
    that no config describes.

    With `allow_longer_train_steps`, a larger `train_steps` is accepted
    if only the last phase grows (the steps already trained keep their
    phases). Returns True when it does: `train_steps` was extended."""
    try:
        with tf.io.gfile.GFile(path) as f:
            recorded = _from_dict(PretrainingConfig,
                                  yaml.safe_load(f.read()) or {})
    except (ConfigError, yaml.YAMLError, UnicodeDecodeError) as error:
        raise ConfigError(f"Cannot read {path}: {error}") from None
    before = _flatten(json.loads(json.dumps(recorded.to_dict())))
    now = _flatten(json.loads(json.dumps(config.to_dict())))
    extended = (allow_longer_train_steps
                and config.train_steps > recorded.train_steps)
    if extended:
        if config.phase_steps()[:-1] != recorded.phase_steps()[:-1]:
            raise ConfigError(
                "Only the last phase may grow when train_steps is extended. "
                f"Received: train_steps={config.train_steps} gives phase "
                f"steps {config.phase_steps()}; {path} has "
                f"{recorded.phase_steps()}")
        # Phase lengths were compared above as steps: a phase given by
        # `fraction` may be rewritten as the same number of `steps`.
        for key in [k for k in {*before, *now} if k == "train_steps"
                    or k.startswith("phases.")
                    and k.endswith((".steps", ".fraction"))]:
            before.pop(key, None)
            now.pop(key, None)
    changed = [
        f"{key}: {before.get(key)!r} -> {now.get(key)!r}"
        for key in sorted(set(before) | set(now))
        if before.get(key) != now.get(key) and not any(
            key == k or key.startswith(k + ".") for k in RERUN_MAY_CHANGE)]
    if changed:
        raise ConfigError(
            f"{config.model_dir} holds checkpoints of another config "
            f"({path}); this run changes {'; '.join(changed)}. Use a new "
            "model_dir, or the recorded values. A rerun may change only "
            f"{', '.join(RERUN_MAY_CHANGE)}, and raise train_steps with "
            "--allow_longer_train_steps.")
    return extended


def write_config(config, path):
    """Writes the resolved config as YAML (sorted keys, one file), whole
    or not at all, into an existing folder."""
    text = yaml.safe_dump(json.loads(json.dumps(config.to_dict())),
                          sort_keys=False)
    write_atomically(path, lambda f: f.write(text))
