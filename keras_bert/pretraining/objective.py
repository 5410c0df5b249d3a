"""What a pre-training objective provides: the contract behind `OBJECTIVES`.

The pipeline yields one batch shape for every objective: masked-LM inputs
(80/10/10 applied at `mask_positions`), the original ids there and the
next-sentence labels (`pipelines.pretraining_dataset`). An objective turns
that into a model, its losses and metrics, and says what the run writes
and prints; `build_pretraining`, the runner, the monitor, the fill-mask
report and the backend probe ask it rather than naming a head. A new
objective is a class with these members, listed in
`objective_registry.OBJECTIVES`, as Model Garden's `official/nlp/tasks/`
adds one task file; `tests/pretraining/test_objective.py` checks every
registered class against it.

Shapes: B sequences a batch, T tokens a sequence, P masked positions.
"""

from __future__ import annotations

import typing

if typing.TYPE_CHECKING:
    import keras


class PretrainingObjective(typing.Protocol):
    """One pre-training objective: its model, losses, metrics and outputs."""

    def __init__(self, config):
        """`config`, the run's `PretrainingConfig` (the objective reads its
        own keys; `PretrainingConfig.validate` has checked them)."""

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

    def exports(self, model: keras.Model) -> dict:
        """`{file stem: (model, with_saved_model)}`: what the run writes to
        `<model_dir>/<stem>.keras` and, where `with_saved_model`, to
        `saved_model/<stem>`. `backbone` is always among them."""

    # The `fit` log keys the monitor writes to TensorBoard and, those
    # ending in `accuracy`, prints.
    logged: tuple

    def report(self, metrics: dict) -> str:
        """Held-out `metrics` (from `model.evaluate`) as `key=value` words
        for the console, the headline first."""

    # Which model answers the fill-mask probes, for their heading ("" for
    # the trained model itself).
    fill_mask_note: str
