"""What a pre-training objective provides: the contract behind `OBJECTIVES`.

The pipeline yields one batch shape for every objective: masked-LM inputs
(80/10/10 applied at `mask_positions`), the original ids there and the
next-sentence labels (`pipelines.pretraining_dataset`). An objective turns
that into a model, its losses and metrics, and says what the run writes
and prints; `build_pretraining`, the runner, the monitor, the fill-mask
report and the backend probe ask it rather than naming a head.

It also owns its part of the recipe: a section of its own under its
registered name (`electra:`), that section's ranges, and the checks across
keys it needs (ELECTRA has no next-sentence task). The config reads these
before the backend is chosen, so an objective's module imports Keras and
TensorFlow inside the methods that use them, never at the top.

A new objective is one file with a class of these members, one line in
`objective_registry.OBJECTIVES` (or `OBJECTIVES.register(name, "pkg.module.Class")`
at run time), as Model Garden's `official/nlp/tasks/` adds one task file;
`tests/pretraining/test_objective.py` checks every registered class against
it, and `tests/pretraining/test_objective_door.py` trains one from `tests/`.

Shapes: B sequences a batch, T tokens a sequence, P masked positions,
V vocabulary.
"""

from __future__ import annotations

import typing

if typing.TYPE_CHECKING:
    import keras


class PretrainingObjective(typing.Protocol):
    """One pre-training objective: its recipe section, model, losses,
    metrics and outputs."""

    # --- The recipe (read without Keras) ---

    @classmethod
    def config_section(cls) -> typing.Optional[object]:
        """A new default instance of the objective's own section, a
        dataclass whose fields are the YAML keys under its registered name
        (`electra: {generator_size: 0.25}`, `--set electra.generator_size=0.5`),
        or None: the objective reads only shared keys. Every registered
        objective's section is in every config (and its `config.yaml`),
        whichever objective trains; `PretrainingConfig.objective_sections()`
        holds them."""

    # `{field of the section: (predicate, "what is wanted")}`, checked with
    # the recipe's own tables whichever objective trains (the wording of
    # `config_tree.Schema.ranges`: "`electra.generator_size` must be in
    # (0, 1]"); `{}` without a section.
    config_ranges: dict

    @classmethod
    def check_config(cls, config) -> list:
        """Raises `ConfigError` naming the keys when the recipe `config`
        (a `PretrainingConfig`, its tables checked) asks what this
        objective cannot train; called by `PretrainingConfig.validate`
        for the chosen objective. Returns notes, one line each, on shared
        keys it reads otherwise (a run prints them)."""

    # The file stems the run writes, `<model_dir>/<stem>.keras`, in the
    # order `exports` returns them; `backbone` is always among them. Read
    # without a model: the run folder's list of its own files comes from
    # every registered objective's (`objective_registry.exported_file_names`).
    export_stems: tuple

    # --- The model ---

    def __init__(self, config):
        """`config`, the run's `PretrainingConfig` (the objective reads its
        own section, `config.objective_sections()[config.objective]`, and
        the shared keys; `PretrainingConfig.validate` has checked them)."""

    def build_model(self, backbone: keras.Model) -> keras.Model:
        """The model trained around `backbone` (a `BertBackbone`), exposing
        it as `.backbone`; its `mlm` output is the masked-LM logits
        (B, P, V) that the held-out accuracy and fill-mask read."""

    def compile_args(self) -> dict:
        """Keyword arguments of `model.compile` besides the optimizer:
        `loss`, `loss_weights` and `weighted_metrics`."""

    def to_keras_batch(self, features, labels, sample_weights, training: bool = True) -> tuple:
        """A pipeline batch `(features, labels, sample_weights)` as
        `Model.fit` takes it for `build_model`'s model (TensorFlow ops; it
        runs inside `Dataset.map`); `training` False for held-out batches."""

    def output_bias(self, model: keras.Model) -> keras.Variable:
        """The per-token output bias (V,) of `build_model`'s `model` whose
        `mlm` logits it raises: `output_bias_init: unigram` starts it at
        the tokens' log-frequencies (`pretraining.unigram_log_prior`)."""

    def fill_mask_inputs(self, inputs: dict) -> dict:
        """The fill-mask probes' batch, NumPy `token_ids`, `segment_ids`,
        `padding_mask` (B, T) and `mask_positions` (B, P), as
        `build_model`'s model takes it for its `mlm` output
        (`fill_mask.fill_mask`)."""

    def exports(self, model: keras.Model) -> dict:
        """`{stem: (model, with_saved_model)}` for each of `export_stems`,
        in order: what the run writes to `<model_dir>/<stem>.keras` and,
        where `with_saved_model`, to `saved_model/<stem>`."""

    # --- What the run prints ---

    # The `fit` log keys the monitor writes to TensorBoard and, those
    # ending in `accuracy`, prints.
    logged: tuple

    def report(self, metrics: dict) -> str:
        """Held-out `metrics` (from `model.evaluate`) as `key=value` words
        for the console, the headline first."""

    # Which model answers the fill-mask probes, for their heading ("" for
    # the trained model itself).
    fill_mask_note: str
