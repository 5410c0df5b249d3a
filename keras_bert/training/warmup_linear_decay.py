"""BERT's learning-rate schedule: linear warmup, then linear decay to 0."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to `peak_learning_rate`, then linear decay to 0.

    Paper §A.2: "learning rate warmup over the first 10,000 steps, and
    linear decay of the learning rate" (lr 1e-4, 1M steps). Unlike the
    original `optimization.py`, which decays from step 0 and lets warmup
    override the start (a small jump at the end of warmup), the decay here
    starts at the peak when warmup ends, so the schedule is continuous:

        lr(u) = peak * u / warmup_steps                        for u < warmup
        lr(u) = peak * (total_steps - u) / (total_steps - warmup_steps)
        lr(u) = 0                                              for u >= total

    where `u` counts applied updates. One schedule spans all phases because
    it is keyed on the optimizer's step counter, which phases share.

    Args:
        peak_learning_rate: float.
        warmup_steps: int. Updates of linear warmup (may be 0).
        total_steps: int. Updates after which the rate is 0.
        gradient_accumulation_steps: int. Keras calls a schedule with the
            optimizer's raw counter, which advances once per micro-batch
            when gradients are accumulated; the schedule divides by this so
            that `u` counts applied updates. Defaults to 1.

    Example:
    >>> schedule = WarmupLinearDecay(1e-4, warmup_steps=10, total_steps=110)
    >>> [round(float(schedule(s)), 7) for s in (0, 5, 10, 60, 110)]
    [0.0, 5e-05, 0.0001, 5e-05, 0.0]
    """

    def __init__(
        self,
        peak_learning_rate,
        warmup_steps,
        total_steps,
        gradient_accumulation_steps=1,
    ):
        if not 0 <= warmup_steps <= total_steps or total_steps < 1:
            raise ValueError(
                "Need 0 <= warmup_steps <= total_steps and total_steps >= 1. "
                f"Received: warmup_steps={warmup_steps}, "
                f"total_steps={total_steps}"
            )
        self.peak_learning_rate = peak_learning_rate
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.gradient_accumulation_steps = gradient_accumulation_steps

    def __call__(self, step):
        step = ops.floor_divide(
            ops.cast(step, "int32"), self.gradient_accumulation_steps
        )
        step = ops.cast(step, "float32")
        peak = ops.cast(self.peak_learning_rate, "float32")
        warmup = ops.cast(self.warmup_steps, "float32")
        total = ops.cast(self.total_steps, "float32")
        warming = peak * step / ops.maximum(warmup, 1.0)
        decaying = peak * (total - step) / ops.maximum(total - warmup, 1.0)
        return ops.where(
            step < warmup, warming, ops.clip(decaying, 0.0, peak)
        )

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
        }
