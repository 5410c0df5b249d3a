"""The BERT optimizer: AdamW, the original AdamWeightDecay or LAMB, with
the paper's schedule and clipping."""

import keras

from keras_bert.optimization.adam_weight_decay import AdamWeightDecay
from keras_bert.optimization.optimizer_config import OPTIMIZERS
from keras_bert.optimization.warmup_linear_decay import WarmupLinearDecay


def warmup_steps(config, total_steps):
    """`config.warmup_steps`, or `warmup_fraction` of `total_steps` when
    set: fine-tuning's 10% (BERT paper appendix A.3)."""
    if config.warmup_fraction is None:
        return config.warmup_steps
    return int(round(config.warmup_fraction * max(int(total_steps), 1)))


def create_schedule(config, total_steps):
    """The `WarmupLinearDecay` of an `OptimizerConfig` over `total_steps`."""
    return WarmupLinearDecay(
        config.learning_rate,
        warmup_steps=warmup_steps(config, total_steps),
        total_steps=total_steps,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        decay_start=config.decay_start,
    )


def create_optimizer(config, total_steps, schedule=None):
    """Builds the optimizer described by an `OptimizerConfig`.

    `config.name` picks the update, all with decoupled weight decay 0.01,
    β = (0.9, 0.999), ε = 1e-6:
    `"adamw"`: Keras' AdamW, bias-corrected Adam;
    `"adam_weight_decay"`: `AdamWeightDecay`, the original
    `AdamWeightDecayOptimizer` of google-research/bert (paper §A.2), Adam
    without bias correction;
    `"lamb"`: LAMB (You et al., 2019, https://arxiv.org/abs/1904.00962),
    the large-batch alternative.
    LayerNorm and bias variables are excluded from weight decay by their
    leaf names (`config.exclude_from_weight_decay`). Gradients are clipped
    by global norm (1.0, as in the original `optimization.py`).

    Args:
        config: `OptimizerConfig`.
        total_steps: int. Optimizer updates of the whole run (all phases);
            the learning rate reaches 0 there.
        schedule: the learning rate, or None for `create_schedule(config,
            total_steps)`.

    Returns:
        A `keras.optimizers.AdamW`, `AdamWeightDecay` or
        `keras.optimizers.Lamb`, not built.
    """
    if schedule is None:
        schedule = create_schedule(config, total_steps)
    common = dict(
        learning_rate=schedule,
        beta_1=config.beta_1,
        beta_2=config.beta_2,
        epsilon=config.epsilon,
        global_clipnorm=config.global_clipnorm,
        gradient_accumulation_steps=(
            config.gradient_accumulation_steps if config.gradient_accumulation_steps > 1 else None
        ),
    )
    if config.name == "adam_weight_decay":
        optimizer = AdamWeightDecay(weight_decay_rate=config.weight_decay, **common)
    elif config.name == "lamb":
        optimizer = keras.optimizers.Lamb(weight_decay=config.weight_decay, **common)
    elif config.name == "adamw":
        optimizer = keras.optimizers.AdamW(weight_decay=config.weight_decay, **common)
    else:
        raise ValueError(
            f"`optimizer.name` must be one of {OPTIMIZERS}. "
            f"Received: optimizer.name={config.name!r}"
        )
    optimizer.exclude_from_weight_decay(var_names=list(config.exclude_from_weight_decay))
    return optimizer
