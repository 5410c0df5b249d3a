"""BERT's learning-rate schedule: linear warmup, then linear decay to 0."""

import keras
from keras import ops

from keras_bert.optimization.optimizer_config import DECAY_STARTS


@keras.saving.register_keras_serializable(package="keras_bert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to `peak_learning_rate`, then linear decay to 0.

    Paper §A.2: "learning rate warmup over the first 10,000 steps, and
    linear decay of the learning rate" (lr 1e-4, 1M steps). Two shapes,
    chosen by `decay_start`:

    `"warmup_end"`: the decay starts at the peak when warmup ends, so the
    rate is continuous:

        lr(u) = peak * u / warmup_steps                        for u < warmup
        lr(u) = peak * (total_steps - u) / (total_steps - warmup_steps)

    `"step_0"`: the original `optimization.py` (`create_optimizer`), a
    `polynomial_decay(peak, u, total_steps, end=0, power=1)` from step 0
    that warmup overrides for `u < warmup`, so the rate drops from the
    peak to `peak * (1 - warmup/total)` at the end of warmup:

        lr(u) = peak * u / warmup_steps                        for u < warmup
        lr(u) = peak * (1 - u / total_steps)

    Both are 0 from `total_steps` on. `u` counts applied updates. One
    schedule spans all phases because it is keyed on the optimizer's step
    counter, which phases share.

    Args:
        peak_learning_rate: float.
        warmup_steps: int. Updates of linear warmup (may be 0).
        total_steps: int. Updates after which the rate is 0.
        gradient_accumulation_steps: int. Keras calls a schedule with the
            optimizer's raw counter, which advances once per micro-batch
            when gradients are accumulated; the schedule divides by this so
            that `u` counts applied updates. Defaults to 1.
        decay_start: `"warmup_end"` or `"step_0"` (the original's), see
            above. Defaults to `"warmup_end"`.

    Example:
    >>> schedule = WarmupLinearDecay(1e-4, warmup_steps=10, total_steps=110)
    >>> [round(float(schedule(s)), 7) for s in (0, 5, 10, 60, 110)]
    [0.0, 5e-05, 0.0001, 5e-05, 0.0]
    >>> original = WarmupLinearDecay(
    ...     1e-4, warmup_steps=10, total_steps=110, decay_start="step_0")
    >>> [round(float(original(s)), 7) for s in (0, 5, 10, 60, 110)]
    [0.0, 5e-05, 9.09e-05, 4.55e-05, 0.0]
    """

    def __init__(
        self,
        peak_learning_rate,
        warmup_steps,
        total_steps,
        gradient_accumulation_steps=1,
        decay_start="warmup_end",
    ):
        if not 0 <= warmup_steps <= total_steps or total_steps < 1:
            raise ValueError(
                "Need 0 <= warmup_steps <= total_steps and total_steps >= 1. "
                f"Received: warmup_steps={warmup_steps}, "
                f"total_steps={total_steps}"
            )
        if decay_start not in DECAY_STARTS:
            raise ValueError(
                f"`decay_start` must be one of {DECAY_STARTS}. "
                f"Received: decay_start={decay_start!r}"
            )
        self.peak_learning_rate = peak_learning_rate
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.decay_start = decay_start

    def __call__(self, step):
        step = ops.floor_divide(ops.cast(step, "int32"), self.gradient_accumulation_steps)
        step = ops.cast(step, "float32")
        peak = ops.cast(self.peak_learning_rate, "float32")
        warmup = ops.cast(self.warmup_steps, "float32")
        total = ops.cast(self.total_steps, "float32")
        warming = peak * step / ops.maximum(warmup, 1.0)
        if self.decay_start == "step_0":
            decaying = peak * (total - step) / total
        else:
            decaying = peak * (total - step) / ops.maximum(total - warmup, 1.0)
        return ops.where(step < warmup, warming, ops.clip(decaying, 0.0, peak))

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
            "decay_start": self.decay_start,
        }
