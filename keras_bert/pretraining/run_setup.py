"""The pre-training task as plain Keras objects: compiled model + datasets.

`build_pretraining(config)` is the Python (and Colab) entry point: it
returns the objective's compiled model (a `BertPretrainer` for the masked
LM) and, per phase, a function that builds that phase's dataset, so
`model.fit` can drive training directly.
`run_pretraining` (in `runner.py`) adds checkpoints, resume,
logging and export on top of the same objects.
"""

import dataclasses
import functools
import inspect
import math
import os
import zipfile

import keras
import numpy as np
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.file_io import FILE_ERRORS, archive_problem, error_reason
from keras_bert.model_configs import load_model_config
from keras_bert.models import BertBackbone
from keras_bert.optimization.optimizers import create_optimizer, create_schedule
from keras_bert.pretraining.objective_registry import OBJECTIVES
from keras_bert.pretraining.training_distribution import create_distribution
from keras_bert.runs.checkpoints import WEIGHTS_FILE, CheckpointManager
from keras_bert.runtime.hardware import (
    accelerator,
    resolve_jit_compile,
    resolve_precision,
)
from pipelines.text_files import read_text

# The held-out evaluation masks as the paper does (15%, then 80/10/10),
# whatever a recipe trains with, so held-out accuracy compares across
# recipes (`data.mask_rate` and a phase's `mask_rate` are training levers).
EVAL_MASK_RATE = 0.15


@dataclasses.dataclass
class PretrainingPhase:
    """One phase, resolved: its config, length and first optimizer step.

    Attributes:
        index: int. Position in `config.phases`.
        config: `PhaseConfig` (seq_len, max_predictions, global batch_size).
        steps: int. Optimizer updates in this phase (the recipe steps it
            spans, for the clock of a budgeted run).
        micro_steps: int. Batches in this phase (`steps` × accumulation).
        first_step: int. Optimizer step at which the phase starts.
        dataset: callable `(skip_batches=0) -> dataset` for `fit`, already
            adapted to Keras and distributed.
    """

    index: int
    config: object
    steps: int
    micro_steps: int
    first_step: int
    dataset: object = None

    def fit_kwargs(self, steps_per_loop, done_micro_steps=0):
        """`steps_per_epoch`/`epochs` covering the rest of the phase in
        logging windows; stop exactly at its end with a callback
        (`TrainingCheckpoint`) when the last window is partial."""
        remaining = self.micro_steps - done_micro_steps
        return {
            "steps_per_epoch": steps_per_loop,
            "epochs": max(1, math.ceil(remaining / steps_per_loop)),
        }


@dataclasses.dataclass
class Pretraining:
    """What `build_pretraining` returns.

    Attributes:
        config: the `PretrainingConfig`.
        distribution: `TrainingDistribution`.
        objective: the `PretrainingObjective` of `config.objective`.
        backbone: `BertBackbone`, with `.vocabulary` set from the vocab file.
        model: the objective's compiled model (`BertPretrainer`: loss =
            mlm + nsp; `ElectraPretrainer`: mlm + 50 × rtd).
        schedule: the `WarmupLinearDecay` over the recipe's steps: the
            optimizer's learning rate, or, in a budgeted run, what its
            `BudgetClock` reads at the recipe step the clock has reached.
        phases: list of `PretrainingPhase`.
        train_files, eval_files: lists of corpus files.
    """

    config: object
    distribution: object
    objective: object
    backbone: object
    model: object
    schedule: object
    phases: list
    train_files: list
    eval_files: list

    def eval_dataset(self, phase_index=-1):
        """Held-out batches shaped like phase `phase_index`'s in the
        recipe (its batch even where a time budget trains at a smaller
        one, so every plan is scored on the same sequences), same masks
        every call (fixed seed, no shuffling), masked at the paper's
        `EVAL_MASK_RATE` whatever rate the phase trains with."""
        phase = self.config.phases[phase_index]
        if phase.training_mask_rate(self.config.data) != EVAL_MASK_RATE:
            # The slots that 15% fills (a recipe at 15% has them already).
            phase = dataclasses.replace(
                phase, max_predictions=math.ceil(EVAL_MASK_RATE * phase.seq_len)
            )
        return _distributed_dataset(
            self.config,
            self.objective,
            phase,
            self.eval_files,
            self.distribution,
            shuffle=False,
            seed=self.config.data.seed + 1,
            training=False,
            mask_rate=EVAL_MASK_RATE,
        )


def _read_vocabulary(path):
    try:
        return read_text(path, ConfigError).splitlines()
    except FILE_ERRORS as error:
        raise ConfigError(f"Cannot read data.vocab_file {path!r}: {error_reason(error)}") from None


def build_backbone(config):
    """The `BertBackbone` of `config.model` + `config.model_overrides`, in
    `config.precision`, with one embedding row per token of
    `data.vocab_file`; position embeddings are sized for the longest phase
    from the start (BERT's 512)."""
    kwargs = load_model_config(config.model)
    # `BertBackbone` would pass an unknown keyword on to `keras.Model`,
    # which ignores it: a typo must not go unnoticed.
    known = set(inspect.signature(BertBackbone).parameters) - {"dtype", "kwargs"}
    unknown = sorted(set(config.model_overrides) - known)
    if unknown:
        raise ConfigError(
            f"model_overrides: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})."
        )
    kwargs.update(config.model_overrides)
    longest = max(phase.seq_len for phase in config.phases)
    if kwargs.get("max_sequence_length", 512) < longest:
        raise ConfigError(
            f"The model's max_sequence_length={kwargs['max_sequence_length']}"
            f" is shorter than the longest phase, seq_len={longest}."
        )
    vocabulary = _read_vocabulary(config.data.vocab_file)
    # Export and fine-tuning need exactly one row per token, so a custom
    # vocabulary sizes the model unless an override says otherwise.
    requested = config.model_overrides.get("vocabulary_size", len(vocabulary))
    if requested != len(vocabulary):
        raise ConfigError(
            f"data.vocab_file has {len(vocabulary)} tokens but "
            f"model_overrides.vocabulary_size is {requested}; drop the "
            "override (the model takes its size from the vocabulary)."
        )
    kwargs["vocabulary_size"] = len(vocabulary)
    try:
        backbone = BertBackbone(
            **kwargs, dtype=resolve_precision(config.precision, kwargs.get("hidden_dim"))
        )
    except (TypeError, ValueError) as error:
        raise ConfigError(f"model_overrides: {error}") from None
    backbone.vocabulary = vocabulary
    return backbone


def _dataset(
    config,
    objective,
    phase,
    files,
    batch_size,
    input_context,
    *,
    shuffle=None,
    seed=None,
    skip_batches=0,
    training=True,
    mask_rate=None,
):
    dataset = _pipeline_dataset(
        config, phase, files, batch_size, input_context, shuffle, seed, mask_rate
    )
    if skip_batches:
        # The data position on resume: the seeded stream, minus what the
        # interrupted run consumed.
        dataset = dataset.skip(skip_batches)
    return dataset.map(functools.partial(objective.to_keras_batch, training=training))


def _pipeline_dataset(
    config, phase, files, batch_size, input_context, shuffle=None, seed=None, mask_rate=None
):
    """`pipelines.pretraining_dataset` of a config's data and one phase
    (`mask_rate`: None for the phase's training rate)."""
    import pipelines

    data = config.data
    return pipelines.pretraining_dataset(
        files,
        data.vocab_file,
        seq_len=phase.seq_len,
        max_predictions=phase.max_predictions,
        batch_size=batch_size,
        corpus_format=data.corpus_format,
        lower_case=data.lower_case,
        mask_rate=phase.training_mask_rate(data) if mask_rate is None else mask_rate,
        short_seq_prob=data.short_seq_prob,
        whole_word_masking=data.whole_word_masking,
        next_sentence_rate=data.next_sentence_rate,
        pack_documents=data.pack_documents,
        seed=data.seed if seed is None else seed,
        shuffle=data.shuffle if shuffle is None else shuffle,
        repeat=True,
        input_context=input_context,
    )


# Training tokens counted for `output_bias_init: unigram`: 2**20 (about
# 4 MB of text, read in a second or two) see each of the frequent tokens,
# which hold most of the softmax's mass while the model predicts word
# frequencies, thousands of times.
PRIOR_TOKENS = 2**20

# Added to every token's count: the tokens never seen among the counted
# ones (most of the vocabulary) then share a few percent of the mass,
# about what the rare tokens hold in English text.
PRIOR_SMOOTHING = 0.1


def unigram_log_prior(config, train_files):
    """float32 (V,): each token's log-frequency among the first
    `PRIOR_TOKENS` tokens of the training documents (in the order the
    run's seed reads them), smoothed by `PRIOR_SMOOTHING`. The masked LM's
    targets are drawn alike from every token of the text, so this is their
    frequency, counted without waiting for the pipeline's shuffle buffer
    (seconds of a budgeted run's clock)."""
    import pipelines

    data = config.data
    counts = pipelines.corpus_token_counts(
        train_files,
        data.vocab_file,
        max_tokens=PRIOR_TOKENS,
        corpus_format=data.corpus_format,
        lower_case=data.lower_case,
        seed=data.seed,
        shuffle=data.shuffle,
    )
    counts += PRIOR_SMOOTHING
    return np.log(counts / counts.sum()).astype("float32")


def _distributed_dataset(config, objective, phase, files, distribution, **kwargs):
    return distribution.distribute_datasets(
        lambda batch_size, context: _dataset(
            config, objective, phase, files, batch_size, context, **kwargs
        ),
        phase.batch_size,
    )


def split_corpus(data):
    """`(train_files, eval_files)` from a `DataConfig`."""
    import pipelines

    if data.eval_files is not None:
        return (
            pipelines.list_files(data.train_files, data.corpus_format),
            pipelines.list_files(data.eval_files, data.corpus_format),
        )
    return pipelines.split_files(
        data.train_files, data.holdout_fraction, seed=data.seed, corpus_format=data.corpus_format
    )


def plan_phases(config):
    """`PretrainingPhase`s (without datasets) for `config.phases`."""
    accumulation = config.optimizer.gradient_accumulation_steps
    phases, first = [], 0
    for index, (phase, steps) in enumerate(zip(config.phases, config.phase_steps())):
        phases.append(PretrainingPhase(index, phase, steps, steps * accumulation, first))
        first += steps
    return phases


def build_pretraining(config, distribution=None, corpus_split=None):
    """Builds the compiled model and per-phase datasets of a config.

    Args:
        config: `PretrainingConfig` (see `load_pretraining_config`).
        distribution: `TrainingDistribution` or None to create one from
            `config.strategy` / `config.tpu`.
        corpus_split: `(train_files, eval_files)` already made by
            `split_corpus(config.data)`, or None to make it.

    Returns:
        `Pretraining`. `phases[i].dataset(skip_batches=0)` builds phase i's
        input (global batch `phases[i].config.batch_size`, split over
        replicas; sharded by worker).

    Example (the whole recipe with `fit`, as in Colab; minutes, so not a
    doctest):

        pretraining = build_pretraining(load_pretraining_config("default"))
        for phase in pretraining.phases:
            pretraining.model.fit(
                phase.dataset(), steps_per_epoch=phase.micro_steps, epochs=1
            )
    """
    config.validate()
    # One seed for the initial weights, the dropout masks and the data
    # order (`pipelines` folds TensorFlow's global seed into its own): a
    # rerun of a config repeats it.
    keras.utils.set_random_seed(config.data.seed)
    if distribution is None:
        distribution = create_distribution(config.strategy, config.tpu)
    if config.precision == "mixed_float16" and accelerator() != "gpu":
        raise ConfigError(
            "precision=mixed_float16 needs a GPU (CPUs and TPUs have no fast "
            "float16 matmul, and XLA's CPU code has none at all); use "
            "mixed_bfloat16 or float32."
        )
    train_files, eval_files = corpus_split or split_corpus(config.data)
    phases = plan_phases(config)
    total_steps = sum(phase.steps for phase in phases)
    schedule = create_schedule(config.optimizer, total_steps)
    objective = OBJECTIVES[config.objective](config)
    with distribution.scope():
        model = compiled_model(config, objective, total_steps, schedule)
        if config.output_bias_init == "unigram":
            objective.output_bias(model).assign(unigram_log_prior(config, train_files))
    for phase in phases:
        phase.dataset = functools.partial(
            lambda phase_config, skip_batches=0: _distributed_dataset(
                config,
                objective,
                phase_config,
                train_files,
                distribution,
                skip_batches=skip_batches,
            ),
            phase.config,
        )
    return Pretraining(
        config,
        distribution,
        objective,
        model.backbone,
        model,
        schedule,
        phases,
        train_files,
        eval_files,
    )


def compiled_model(config, objective, total_steps, schedule):
    """`objective`'s model on `build_backbone(config)`, compiled with the
    config's optimizer as a run trains it: at `schedule`'s learning rate
    or, under a time budget, at the one its `BudgetClock` sets at each
    step from the time spent (into the optimizer's learning-rate variable).

    The backend probe (`step_probe`) builds its model here too, from the
    default run's config: under JAX it then compiles the very programs
    the default run compiles, and the run loads them from the compilation
    cache (`keras_bert.runtime.compilation_cache`) instead of compiling
    them on its clock."""
    model = objective.build_model(build_backbone(config))
    budgeted = config.train_budget_minutes is not None
    model.compile(
        optimizer=create_optimizer(config.optimizer, total_steps, 0.0 if budgeted else schedule),
        **objective.compile_args(),
        jit_compile=resolve_jit_compile(config.jit_compile),
    )
    return model


def load_initial_weights(pretraining, path):
    """`--init_checkpoint`: copy weights (only) from a `.keras` backbone or
    pretrainer, a `.weights.h5` file or a checkpoint directory. A
    pretrainer of another objective gives its backbone."""
    try:
        if tf.io.gfile.isdir(path):
            latest = CheckpointManager(os.path.join(path, "checkpoints"), is_chief=False).latest()
            path = os.path.join(latest or path, WEIGHTS_FILE)
        exists = tf.io.gfile.exists(path)
    except FILE_ERRORS as error:
        # An unreachable `gs://`, a scheme without its file system plugin.
        reason = error_reason(error)
        raise ConfigError(f"init_checkpoint {path!r} cannot be read: {reason}") from None
    if not exists:
        raise ConfigError(f"init_checkpoint {path!r} does not exist.")
    # Keras reports a corrupt archive as "File not found".
    problem = path.endswith(".keras") and archive_problem(path)
    if problem:
        raise ConfigError(f"init_checkpoint {path!r} cannot be loaded: {problem}")
    try:
        if path.endswith(".keras"):
            source = keras.saving.load_model(path, compile=False)
            target = pretraining.model
            if type(source) is not type(target):
                source = getattr(source, "backbone", source)
                target = pretraining.backbone
            target.set_weights(source.get_weights())
            return
        # A training checkpoint also holds optimizer variables: load it into
        # an uncompiled twin, which has no optimizer to restore, then copy.
        twin = pretraining.objective.build_model(build_backbone(pretraining.config))
        twin.load_weights(path)
        pretraining.model.set_weights(twin.get_weights())
    except (zipfile.BadZipFile, *FILE_ERRORS, EOFError, KeyError, ValueError) as error:
        # A copy cut short or corrupted on the way (bad CRC), or weights of
        # another architecture.
        raise ConfigError(
            f"init_checkpoint {path!r} cannot be loaded: {type(error).__name__}: {error}"
        ) from None
