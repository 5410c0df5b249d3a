"""The optimizer's settings, as YAML `optimizer:` keys of both recipes."""

import dataclasses
import typing

OPTIMIZERS = ("adamw", "adam_weight_decay", "lamb")
# `WarmupLinearDecay`'s choices, here so that the configs read them
# without Keras.
DECAY_STARTS = ("warmup_end", "step_0")


@dataclasses.dataclass
class OptimizerConfig:
    """The optimizer, its warmup + linear decay, clipping, accumulation (§A.2).

    `name`: `adamw` (Keras' AdamW, bias-corrected), `adam_weight_decay`
    (the original BERT update, no bias correction) or `lamb`.
    `decay_start`: `warmup_end` (decay from the peak when warmup ends) or
    `step_0` (the original schedule: decay from step 0, overridden by
    warmup). See `AdamWeightDecay` and `WarmupLinearDecay`.

    Pre-training gives the warmup in steps (`warmup_steps`), fine-tuning as
    a share of the run (`warmup_fraction`, turned into steps by
    `create_schedule` once the run's length is known). Each recipe takes
    the keys `optimizer_keys` gives it; an unknown one is an error there.
    """

    name: str = "adamw"
    learning_rate: float = 1e-4
    warmup_steps: int = 10_000
    decay_start: str = "warmup_end"
    weight_decay: float = 0.01
    # Leaf variable names: LayerNorm's `gamma`/`beta` and every `bias`
    # (`output_bias` of the masked-LM head included) are not decayed.
    exclude_from_weight_decay: list = dataclasses.field(
        default_factory=lambda: ["gamma", "beta", "bias"]
    )
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-6
    global_clipnorm: typing.Optional[float] = 1.0
    gradient_accumulation_steps: int = 1
    # Set: the warmup is this share of the run's steps, not `warmup_steps`.
    warmup_fraction: typing.Optional[float] = None


# What each recipe leaves out: pre-training gives its warmup in steps;
# fine-tuning gives it as a share of the run and accumulates no gradients
# (its run length is counted in batches).
_NOT_TAKEN = {
    "pretraining": ("warmup_fraction",),
    "finetuning": ("warmup_steps", "gradient_accumulation_steps"),
}


def optimizer_keys(recipe):
    """The `optimizer:` keys `recipe` (`"pretraining"` or `"finetuning"`)
    takes, in `OptimizerConfig`'s order."""
    return tuple(
        f.name for f in dataclasses.fields(OptimizerConfig) if f.name not in _NOT_TAKEN[recipe]
    )
