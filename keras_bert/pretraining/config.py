"""The pre-training recipe as dataclasses, loaded from `configs/pretrain/`.

One `PretrainingConfig` holds every knob of a run; its sections are small
dataclasses whose field names are the YAML keys. Overrides use dotted keys
(`optimizer.learning_rate=3e-4`, `phases.1.batch_size=16`) and an unknown
key is an error, as in tensorflow/models `official/core/train_utils.py`.
"""

import dataclasses
import glob
import math
import os
import typing

from keras_bert.config_tree import Schema, parse_override
from keras_bert.errors import ConfigError
from keras_bert.model_configs import read_model_config
from keras_bert.model_sizes import check_model_sizes
from keras_bert.optimization.optimizer_config import (
    DECAY_STARTS,
    OPTIMIZERS,
    OptimizerConfig,
    optimizer_keys,
)
from keras_bert.paths import CONFIGS, bundled
from keras_bert.pretraining.objective_registry import (
    DEFAULT_OBJECTIVE,
    OBJECTIVES,
    config_sections,
)
from keras_bert.runs.recipe import read_recipe, resolve_recipe
from pipelines.limits import MIN_SEQ_LEN

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
    accumulated. `mask_rate`: the share of tokens this phase trains to
    predict, None for `data.mask_rate` (the held-out batches mask 15%
    either way).
    """

    seq_len: int = 128
    max_predictions: int = 20
    batch_size: int = 32
    steps: typing.Optional[int] = None
    fraction: typing.Optional[float] = None
    mask_rate: typing.Optional[float] = None

    def training_mask_rate(self, data):
        """The rate this phase's training batches mask with."""
        return data.mask_rate if self.mask_rate is None else self.mask_rate


@dataclasses.dataclass
class DataConfig:
    """Where the corpus is and how `pipelines.pretraining_dataset` reads it.

    `eval_files` None holds out `holdout_fraction` of `train_files`' text
    (by size: whole files, or a stretch of a single file's lines) with
    `pipelines.split_files`. `shuffle: false` reads files,
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
        objective: str. A key of `objective_registry.OBJECTIVES`, by
            default `DEFAULT_OBJECTIVE` (BERT's masked LM and next
            sentence; docs/objectives.md). Each registered objective's
            own section is a top-level key of its name (`<name>:`), in
            every config whichever trains (`objective_sections`).
        model: str. A name in `configs/model/` or a YAML path.
        model_overrides: dict. `BertBackbone` arguments that replace the
            named config's, e.g. `{dropout: 0.0}`.
        data: `DataConfig`.
        phases: list of `PhaseConfig`, run in order with one optimizer and
            one learning-rate schedule.
        train_steps: int. Optimizer updates over all phases; phases given
            by `fraction` share it. With `train_budget_minutes`, the length
            of the schedule that the budget runs on its clock and, with
            `budget_stops_at_train_steps`, the most updates the run makes.
        train_budget_minutes: float or None. None: the run is step-based
            (`train_steps`). A number: the run follows the recipe's
            schedule (learning rate, phases) by the share of this many
            minutes spent, from its start to its last update, and stops at
            its end (`keras_bert.pretraining.time_budget`;
            docs/pretraining.md#a-time-budget).
        budget_stops_at_train_steps: bool. A budgeted run only. False: it
            trains until its deadline, however many updates that makes
            (`train_steps` sets only its schedule's shape), so a fast
            machine spends its whole budget training. True: the share of
            `train_steps` made also moves the schedule, when larger than
            the share of time, and the run stops at `train_steps` updates:
            a recipe measured in updates (a small corpus seen a set number
            of times) runs as written on a fast machine, which ends early.
        sampled_softmax_candidates: int or None. Train the masked LM on a
            sampled softmax over each batch's targets and this many tokens
            drawn from the vocabulary (`sampled_softmax_logits`): at BERT-Tiny
            the full softmax is most of a step. None: the full softmax.
            Held-out evaluation, fill-mask and export use the full softmax
            either way. An objective that does not read it says so when
            the run starts (`PretrainingObjective.check_config`).
        output_bias_init: `"zeros"` (the paper) or `"unigram"`: the masked
            LM's output bias starts at each token's log-frequency among
            the first tokens of the training documents
            (`unigram_log_prior`), so the model predicts word frequencies
            from its first update and its updates go to context
            (docs/objectives.md#a-unigram-output-bias). A resumed run or an
            `init_checkpoint` keeps the bias it loads.
        optimizer: `OptimizerConfig`.
        checkpoint: `CheckpointConfig`.
        precision: `"float32"`, `"mixed_bfloat16"` or `"mixed_float16"`
            (the last with dynamic loss scaling), or `"auto"`:
            `mixed_bfloat16` where it pays (a GPU or TPU; a CPU with bf16
            arithmetic for models >= 768 wide, not under JAX), `float32`
            elsewhere (`keras_bert.runtime.hardware.resolve_precision`;
            BENCHMARKS.md#findings-behind-the-defaults).
        strategy: one of `STRATEGIES`.
        tpu: str or None. TPU name or `grpc://` address for `strategy=tpu`.
        jit_compile: `"auto"`, True or False, passed to `Model.compile`.
        steps_per_loop: int. Updates per Keras epoch: metrics are averaged
            and logged over this window, like Model Garden's
            `steps_per_loop`.
        eval_steps: int. Held-out batches evaluated after each phase (a
            budgeted run: at every phase's length after its last update).
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

    objective: str = DEFAULT_OBJECTIVE
    model: str = "bert_tiny"
    model_overrides: dict = dataclasses.field(default_factory=dict)
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    phases: typing.List[PhaseConfig] = dataclasses.field(
        default_factory=lambda: [
            PhaseConfig(128, 20, 256, fraction=0.9),
            PhaseConfig(512, 80, 256, fraction=0.1),
        ]
    )
    train_steps: int = 1_000_000
    train_budget_minutes: typing.Optional[float] = None
    # True: what a run recorded before this key existed did, so it resumes.
    budget_stops_at_train_steps: bool = True
    sampled_softmax_candidates: typing.Optional[int] = None
    output_bias_init: str = "zeros"
    optimizer: OptimizerConfig = dataclasses.field(default_factory=OptimizerConfig)
    checkpoint: CheckpointConfig = dataclasses.field(default_factory=CheckpointConfig)
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

    def __post_init__(self):
        # Each registered objective's own section is an attribute of its
        # name (`config.<name>`), made here rather than declared as a
        # field: this class names no objective, and one may be registered
        # at run time. `SCHEMA` reads, sets, checks and writes them as it
        # does the sections above (`Schema.owned_sections`).
        sections = config_sections()
        shared = {f.name for f in dataclasses.fields(self)}
        for name, section in sections.items():
            if name in shared or hasattr(type(self), name):
                raise ConfigError(
                    f"Objective {name!r} cannot have a config section: `{name}` is a "
                    "shared key of the pre-training recipe. Register it under another name."
                )
            setattr(self, name, section)
        self._sections = tuple(sections)

    def objective_sections(self):
        """`{objective name: its section}` of the registered objectives
        that have one (`PretrainingObjective.config_section`), in
        registration order. An objective reads its own as
        `config.objective_sections()[config.objective]`."""
        return {name: getattr(self, name) for name in self._sections if name in OBJECTIVES}

    def phase_steps(self):
        """Optimizer updates per phase: fractions are rounded, the last
        fraction-sized phase taking what rounding left. A budgeted run
        follows them on its clock (recipe steps, not updates)."""
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
        """Raises `ConfigError` naming the first bad value: `SCHEMA`'s
        tables (the objectives' sections' included), then what needs more
        than one key, the chosen objective's own checks among them
        (`PretrainingObjective.check_config`)."""
        SCHEMA.check(self)

        def check(ok, message):
            if not ok:
                raise ConfigError(message)

        check(
            self.data.eval_files is not None or 0 < self.data.holdout_fraction < 1,
            "`data.holdout_fraction` (the share of train_files held out for "
            "evaluation when data.eval_files is not given) must be in (0, 1). "
            f"Received: data.holdout_fraction={self.data.holdout_fraction}",
        )
        check(
            self.eval_every_steps % self.steps_per_loop == 0,
            "`eval_every_steps` must be a multiple of `steps_per_loop`. "
            f"Received: eval_every_steps={self.eval_every_steps}, "
            f"steps_per_loop={self.steps_per_loop}",
        )
        check(
            all(isinstance(p, str) and "[MASK]" in p for p in self.fill_mask_probes),
            "Every `fill_mask_probes` entry must be a string with [MASK]. "
            f"Received: {self.fill_mask_probes!r}",
        )
        OBJECTIVES[self.objective].check_config(self)  # Its notes are the run's to print.
        check(
            not self.data.pack_documents or self.data.next_sentence_rate == 0,
            "`data.pack_documents` fills sequences across documents, so it "
            "needs the next-sentence task off (`data.next_sentence_rate: 0`). "
            f"Received: data.next_sentence_rate={self.data.next_sentence_rate!r}",
        )
        check(self.phases, "`phases` must list at least one phase.")
        for i, phase in enumerate(self.phases):
            check(
                phase.seq_len >= MIN_SEQ_LEN,
                f"phases.{i}: `seq_len` must be >= {MIN_SEQ_LEN} ([CLS] A [SEP] B "
                f"[SEP]). Received: seq_len={phase.seq_len}",
            )
            check(
                (phase.steps is None) != (phase.fraction is None),
                f"phases.{i}: give exactly one of `steps` and `fraction`. "
                f"Received: steps={phase.steps}, fraction={phase.fraction}",
            )
            check(
                1 <= phase.max_predictions <= phase.seq_len,
                f"phases.{i}: `max_predictions` must be in [1, seq_len]. "
                f"Received: max_predictions={phase.max_predictions}, "
                f"seq_len={phase.seq_len}",
            )
            check(
                phase.batch_size >= 1,
                f"phases.{i}: `batch_size` must be >= 1. Received: batch_size={phase.batch_size}",
            )
            check(
                phase.mask_rate is None or 0 < phase.mask_rate < 1,
                f"phases.{i}: `mask_rate` must be null (data.mask_rate) or in (0, 1). "
                f"Received: mask_rate={phase.mask_rate}",
            )
        fractions = [p.fraction for p in self.phases if p.fraction is not None]
        check(
            all(0 < f <= 1 for f in fractions)
            and (not fractions or math.isclose(sum(fractions), 1.0)),
            "The phases' `fraction`s share what `steps` phases leave of "
            "train_steps: each in (0, 1], summing to 1. Received: "
            f"fractions={fractions}",
        )
        steps = self.phase_steps()
        check(
            all(s >= 1 for s in steps),
            f"Every phase needs >= 1 step. Received: train_steps="
            f"{self.train_steps}, phase steps={steps}",
        )
        check(
            0 <= self.optimizer.warmup_steps <= self.train_steps,
            "`optimizer.warmup_steps` must be in [0, train_steps]. Received: "
            f"warmup_steps={self.optimizer.warmup_steps}, "
            f"train_steps={self.train_steps}",
        )
        check(
            self.train_budget_minutes is None or self.strategy != "multi_worker",
            "A multi-worker run cannot follow one clock on every worker: use "
            "train_budget_minutes: null (step-based). Received: "
            f"train_budget_minutes={self.train_budget_minutes}",
        )
        if self.profile_steps is not None:
            parts = str(self.profile_steps).split(",")
            check(
                len(parts) == 2
                and all(p.strip().isdigit() for p in parts)
                and int(parts[0]) <= int(parts[1]),
                "`profile_steps` must be 'first,last' step numbers. "
                f"Received: profile_steps={self.profile_steps!r}",
            )
        try:
            # The model file's sizes are checked as it is read; what is out
            # of bounds in the merge is the overrides'.
            model = {**read_model_config(self.model), **self.model_overrides}
            check_model_sizes(model, where="model_overrides: ")
        except ValueError as error:
            raise ConfigError(str(error)) from None

    def to_dict(self):
        """The config as YAML-ready values, as `config.yaml` records it."""
        return SCHEMA.to_tree(self)


def _share(low, high, closed):
    brackets = "[]" if closed else "()"
    return (
        lambda v: low <= v <= high if closed else low < v < high,
        f"in {brackets[0]}{low}, {high}{brackets[1]}",
    )


OUTPUT_BIAS_INITS = ("zeros", "unigram")


# What each key may hold; `validate` adds the checks across keys.
SCHEMA = Schema(
    error=ConfigError,
    backticks=True,
    # Before `optimizer`, where a shipped objective's section has always
    # been written; each one's `config_ranges` checked whichever trains.
    owned_sections=lambda config: config.objective_sections(),
    owned_before="optimizer",
    owned_ranges=lambda name: OBJECTIVES[name].config_ranges,
    keys={"optimizer": optimizer_keys("pretraining")},
    choices={
        "objective": OBJECTIVES,  # Read at each check: a registration counts.
        "output_bias_init": OUTPUT_BIAS_INITS,
        "strategy": STRATEGIES,
        "precision": PRECISIONS,
        "optimizer.name": OPTIMIZERS,
        "optimizer.decay_start": DECAY_STARTS,
        "jit_compile": ("auto", True, False),
    },
    minimums={
        "train_steps": 1,
        "sampled_softmax_candidates": 1,
        "steps_per_loop": 1,
        "eval_steps": 0,
        "eval_every_steps": 0,
        "optimizer.gradient_accumulation_steps": 1,
        "checkpoint.every_steps": 1,
        "checkpoint.keep": 1,
    },
    ranges={
        "data.mask_rate": _share(0, 1, closed=False),
        "data.short_seq_prob": _share(0, 1, closed=True),
        "data.next_sentence_rate": _share(0, 1, closed=True),
        "optimizer.learning_rate": (lambda v: v > 0, "> 0"),
        "train_budget_minutes": (lambda v: v > 0, "> 0 (null: step-based)"),
    },
)


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
    path = resolve_recipe(name_or_path, CONFIG_DIR, "pre-training")
    config = SCHEMA.merge(PretrainingConfig(), read_recipe(path), where=path)
    pairs = overrides.items() if isinstance(overrides, dict) else map(parse_override, overrides)
    for key, value in pairs:
        SCHEMA.set(config, key, value)
    config.validate()
    _find_bundled_data(config.data)
    return config


# The data keys that hold paths: the checkout's own found from any directory
# here, compared by absolute path on a rerun (`run_record`).
DATA_PATH_KEYS = ("train_files", "eval_files", "vocab_file")


def _find_bundled_data(data):
    """The checkout's own corpus and vocabulary (`data/...`) from any
    working directory; a user's relative paths stay relative to it."""
    for name in DATA_PATH_KEYS:
        value = getattr(data, name)
        if isinstance(value, str):
            setattr(data, name, bundled(value))
        elif isinstance(value, list):
            setattr(data, name, [bundled(v) if isinstance(v, str) else v for v in value])


def check_local_paths(config):
    """Raises a `ConfigError` naming the key when a local path the config
    names matches nothing: the corpus patterns, the vocabulary, the
    initial checkpoint. Called before the backend measurement, so the
    standard library only (`glob` matches `*`, `?` and `[...]` as
    TensorFlow does); remote paths are checked where they are read."""
    data = config.data
    for key in ("train_files", "eval_files"):
        patterns = getattr(data, key)
        for pattern in [patterns] if isinstance(patterns, str) else patterns or []:
            if _is_local_path(pattern) and not any(
                os.path.isfile(path) for path in glob.glob(pattern, include_hidden=True)
            ):
                raise ConfigError(f"No corpus file matches {pattern!r}. Received: data.{key}")
    named = {"data.vocab_file": data.vocab_file}
    checkpoints = os.path.join(config.model_dir, "checkpoints")
    if not (_is_local_path(checkpoints) and os.path.isdir(checkpoints) and os.listdir(checkpoints)):
        # A resumed run's checkpoints supersede its initial weights.
        named["init_checkpoint"] = config.init_checkpoint
    for key, path in named.items():
        if _is_local_path(path) and not os.path.exists(path):
            raise ConfigError(f"{key} {path!r} does not exist.")


def _is_local_path(value):
    return isinstance(value, str) and "://" not in value
