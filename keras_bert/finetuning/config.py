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

from keras_bert.config_tree import Schema, parse_override
from keras_bert.errors import ConfigError, FinetuneError
from keras_bert.finetuning.task_registry import (
    CONFIG_DIR,
    TASK_SECTIONS,
    TASKS,
    default_config_file,
    own_sections,
)
from keras_bert.model_configs import read_model_config
from keras_bert.optimization.optimizer_config import (
    DECAY_STARTS,
    OPTIMIZERS,
    OptimizerConfig,
    optimizer_keys,
)
from keras_bert.paths import refuse_overlap
from keras_bert.runs.recipe import read_recipe, resolve_recipe
from pipelines import limits
from pipelines.labels import canonical_label
from pipelines.limits import MIN_SEQ_LEN


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
    doc_stride: int = limits.SQUAD_DOC_STRIDE
    max_query_length: int = limits.SQUAD_MAX_QUERY_LENGTH


@dataclasses.dataclass
class TrainingConfig:
    batch_size: int = 32
    eval_batch_size: int = 64
    epochs: float = 3.0
    dropout: float = 0.1
    seed: int = 0
    # 0: silent; else a line each `log_every_steps` updates (loss, learning
    # rate, sentences/s, time left), the TensorBoard scalars' window.
    verbose: int = 2
    log_every_steps: int = 100
    # Batches of similar length: fewer padded positions, so faster, but off
    # by default: the original draws random batches, and on tasks whose
    # labels go with length (STS-B) grouped batches score worse
    # (BENCHMARKS.md#findings-behind-the-defaults).
    group_by_length: bool = False


@dataclasses.dataclass
class CheckpointConfig:
    """The training state (weights, optimizer, data position, dropout
    seeds) saved every `every_steps` updates, the last `keep` kept, so that
    a stopped or killed run resumes when the same command runs again
    (`finetuning.resume`); removed once the run has finished."""

    every_steps: int = 500
    keep: int = 2


@dataclasses.dataclass
class ExportConfig:
    enabled: bool = True
    seq_len: typing.Optional[int] = None  # None: data.max_seq_length.
    # The forward pass compiled by XLA (`export_for_serving`'s jit_compile).
    jit_compile: bool = False


@dataclasses.dataclass
class FinetuneConfig:
    task: str = "sst2"
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    # `name` and `decay_start` as in pre-training (`adamw`,
    # `adam_weight_decay` or `lamb`; `warmup_end` or `step_0`).
    optimizer: OptimizerConfig = dataclasses.field(
        default_factory=lambda: OptimizerConfig(learning_rate=2e-5, warmup_fraction=0.1)
    )
    training: TrainingConfig = dataclasses.field(default_factory=TrainingConfig)
    checkpoint: CheckpointConfig = dataclasses.field(default_factory=CheckpointConfig)
    export: ExportConfig = dataclasses.field(default_factory=ExportConfig)

    def __post_init__(self):
        # Each task's own section (`task_registry.TASK_SECTIONS`: `squad`)
        # is an attribute of its name (`config.squad`), made here rather
        # than declared as a field: the task declares it beside its code,
        # as a pre-training objective does. `SCHEMA` reads, sets, checks
        # and writes them as it does the fields (`Schema.owned_sections`).
        for name in TASK_SECTIONS:
            setattr(self, name, TASK_SECTIONS[name]())

    def task_sections(self):
        """`{section name: section}` of the tasks' own sections, in
        registration order."""
        return {name: getattr(self, name) for name in TASK_SECTIONS}

    def to_dict(self):
        """The config as YAML-ready values, as `config.yaml` records it."""
        return SCHEMA.to_tree(self)


def load_finetune_config(task, config_file=None, overrides=(), config_class=None, schema=None):
    """Defaults ← `config_file` ← `overrides` (`"section.key=value"`
    strings). `config_file`: a YAML path, or a name in `configs/finetune/`
    (`squad`); None: the task's own (`task_registry.TASKS`, e.g.
    `squad.yaml` for `squad_v1`). `config_class` and `schema`: a recipe
    that extends this one (`distillation.config`); None: this one's."""
    config_class, schema = config_class or FinetuneConfig, schema or SCHEMA
    if config_file is None:
        if task not in TASKS:
            raise ConfigError(f"Unknown task {task!r}. Known: {', '.join(sorted(TASKS))}")
        config_file = default_config_file(task)
    config_file = resolve_recipe(config_file, CONFIG_DIR, "fine-tuning")
    config = config_class(task=task)
    tree = read_recipe(config_file)
    tree.pop("task", None)
    schema.merge(config, tree, where=str(config_file))
    _refuse_another_tasks_section(task, tree, config_file)
    for item in overrides:
        key, value = parse_override(item, ConfigError)
        _refuse_another_tasks_section(task, [key.split(".")[0]], "--set")
        schema.set(config, key, value, where="--set")
    schema.check(config)
    return config


def check_local_inputs(init_checkpoint, vocab=None, data_dir=None):
    """Refuses what `finetune` and `distill` would fail on after start-up:
    a local `data_dir`, `init_checkpoint` or `vocab` that names nothing, or
    a `random:` model config that is unknown or out of bounds. Keras-free:
    the commands call it before the backend is measured."""
    if data_dir and "://" not in data_dir and not os.path.isdir(data_dir):
        raise FinetuneError(f"--data_dir {data_dir}: no such directory")
    if init_checkpoint.startswith("random:"):
        try:
            read_model_config(init_checkpoint[len("random:") :])
        except ValueError as error:
            raise FinetuneError(f"--init_checkpoint {init_checkpoint}: {error}") from None
    elif "://" not in init_checkpoint and not any(
        os.path.exists(path) for path in (init_checkpoint, init_checkpoint + ".index")
    ):
        raise FinetuneError(f"{init_checkpoint}: no such checkpoint file or folder")
    if vocab and "://" not in vocab and not os.path.isfile(vocab):
        raise FinetuneError(f"--vocab {vocab}: no such file")


def refuse_run_over_inputs(
    model_dir, data_dir, init_checkpoint, vocab, config_file, teacher=None, text_files=()
):
    """Refuses a `finetune` or `distill` run folder that is, holds or lies
    inside one of the run's inputs, by their flags (`paths.refuse_overlap`;
    `teacher` and `text_files` are `distill`'s). A file it reads from inside
    the folder it replaces (`--init_checkpoint <model_dir>/model.keras`,
    `--vocab`, `--config`) is read from where the rerun sets it aside, so the
    folder may hold those; it may lie inside `--data_dir`. Keras-free: the
    commands call it before start-up, the libraries again for callers from
    Python."""
    refuse_overlap(
        {"--model_dir": model_dir},
        {
            "--teacher": teacher,
            "--data_dir": data_dir,
            "--text": list(text_files),
            "--init_checkpoint": init_checkpoint,
            "--vocab": vocab,
            "--config": config_file,
        },
        # A project folder of task files may hold its runs: the readers
        # take their files by name, never a run's.
        inside={("--model_dir", "--data_dir")},
        holding={("--model_dir", flag) for flag in ("--init_checkpoint", "--vocab", "--config")},
    )


def _refuse_another_tasks_section(task, sections, where):
    """A section only some tasks read (`task_registry.TASK_SECTIONS`:
    `squad`, the SQuAD tasks') is refused to another task (`--config squad`
    for `sst2`): it would be ignored, and the rest of that config is for
    spans."""
    if task not in TASKS:
        return
    unread = sorted(set(sections) & set(TASK_SECTIONS) - set(own_sections(task)))
    if unread:
        raise ConfigError(
            f"{where}: sets `{unread[0]}`, which task {task!r} does not read (it is the SQuAD "
            f"tasks'); use the task's own config, {default_config_file(task).stem!r}, or drop "
            "the section"
        )


# Keys of a run's `config.yaml` that say how the run was made, not how its
# model is used: recorded, not read back (`distillation`: the section a
# distilled student's run adds, `keras_bert.distillation.config`).
RECORD_ONLY = ("task", "init_checkpoint", "data_dir", "distillation")


def load_saved_config(model_dir):
    """`(task, config)` of the fine-tuning run whose `config.yaml` (written
    by the runner: the resolved config, the task, where the data and the
    checkpoint came from, the backend and precision it trained under) is
    in `model_dir`."""
    path = os.path.join(model_dir, "config.yaml")
    tree = read_recipe(path)
    task = tree.get("task")
    if not isinstance(task, str) or "phases" in tree:
        raise ConfigError(f"{path}: not a fine-tuning run's config")
    config = FinetuneConfig(task=task)
    SCHEMA.merge(config, {k: v for k, v in tree.items() if k not in RECORD_ONLY}, where=path)
    SCHEMA.check(config)
    return task, config


def _distinct_classes(names):
    """Whether `names` name each class once, spelt as the files' labels are
    (`canonical_label`): a class named twice would be a head output that
    no example trains."""
    spellings = [canonical_label(name) for name in names]
    return None not in spellings and len(set(spellings)) == len(spellings)


# What each key may hold (NaN fails every comparison, so it is refused).
SCHEMA = Schema(
    error=ConfigError,
    # Before `export`, where `squad` has always been written.
    owned_sections=lambda config: config.task_sections(),
    owned_before="export",
    owned_ranges=lambda name: TASK_SECTIONS[name].config_ranges,
    keys={"optimizer": optimizer_keys("finetuning")},
    choices={
        "optimizer.name": OPTIMIZERS,
        "optimizer.decay_start": DECAY_STARTS,
    },
    minimums={
        "data.max_seq_length": MIN_SEQ_LEN,  # [CLS] A [SEP] B [SEP]
        "data.doc_stride": 1,
        "data.max_query_length": 1,
        "training.batch_size": 1,
        "training.eval_batch_size": 1,
        "training.log_every_steps": 1,
        "checkpoint.every_steps": 1,
        "checkpoint.keep": 1,
        "export.seq_len": MIN_SEQ_LEN,  # None: data.max_seq_length's.
    },
    ranges={
        "optimizer.learning_rate": (lambda v: 0 < v < math.inf, "finite and > 0"),
        "optimizer.weight_decay": (lambda v: 0 <= v < math.inf, "finite and >= 0"),
        "optimizer.warmup_fraction": (lambda v: 0 <= v <= 1, "between 0 and 1"),
        "optimizer.epsilon": (lambda v: 0 < v < math.inf, "finite and > 0"),
        "optimizer.global_clipnorm": (
            lambda v: 0 < v < math.inf,
            "finite and > 0 (or null: no clipping)",
        ),
        "training.epochs": (lambda v: 0 < v < math.inf, "finite and > 0"),
        "training.dropout": (lambda v: 0 <= v < 1, ">= 0 and < 1"),
        "data.label_names": (
            _distinct_classes,
            "distinct, non-blank class names (1, 1.0 and ' 1 ' name one class)",
        ),
    },
)
