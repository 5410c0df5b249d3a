"""AdamW with BERT's linear warmup and linear decay, for fine-tuning.

A minimal stand-in until `keras_bert.training` (pre-training, issue 4)
ships its `WarmupLinearDecay` and `create_optimizer`; the maths is the same
(paper §A.2 / appendix A.3: Adam with decoupled weight decay 0.01 excluding
LayerNorm and biases, β = (0.9, 0.999), ε = 1e-6, warmup over the first 10%
of steps, linear decay to 0, gradient clipping at global norm 1).
"""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class FinetuneLinearSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to `peak_learning_rate` over `warmup_steps`, then
    linear decay to 0 at `total_steps` (and 0 after).

    Example:
    >>> s = FinetuneLinearSchedule(1e-4, warmup_steps=10, total_steps=110)
    >>> [round(float(s(i)), 7) for i in (0, 5, 10, 60, 110, 200)]
    [0.0, 5e-05, 0.0001, 5e-05, 0.0, 0.0]
    """

    def __init__(self, peak_learning_rate, warmup_steps, total_steps):
        if not 0 <= warmup_steps <= total_steps or total_steps < 1:
            raise ValueError(
                "Need 0 <= warmup_steps <= total_steps and total_steps >= 1. "
                f"Received: warmup_steps={warmup_steps}, total_steps={total_steps}"
            )
        self.peak_learning_rate = peak_learning_rate
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps

    def __call__(self, step):
        step = ops.cast(step, "float32")
        peak = ops.cast(self.peak_learning_rate, "float32")
        warmup = float(self.warmup_steps)
        total = float(self.total_steps)
        warming = peak * step / max(warmup, 1.0)
        decaying = peak * (total - step) / max(total - warmup, 1.0)
        return ops.where(step < warmup, warming, ops.clip(decaying, 0.0, peak))

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
        }


def create_finetune_optimizer(config, total_steps):
    """AdamW for an `OptimizerConfig` of `keras_bert.finetuning.config`."""
    schedule = FinetuneLinearSchedule(
        config.learning_rate,
        warmup_steps=int(round(config.warmup_fraction * total_steps)),
        total_steps=max(total_steps, 1),
    )
    optimizer = keras.optimizers.AdamW(
        learning_rate=schedule,
        weight_decay=config.weight_decay,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=config.epsilon,
        global_clipnorm=config.global_clipnorm,
    )
    # Keras LayerNorm weights are `gamma`/`beta`; Dense/embedding biases `bias`.
    optimizer.exclude_from_weight_decay(var_names=["gamma", "beta", "bias"])
    return optimizer
