"""ELECTRA's discriminator accuracy, logged by `ElectraObjective`.

Shape legend: B batch, T sequence length.
"""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class ReplacedTokenAccuracy(keras.metrics.Metric):
    """The discriminator's accuracy (logit > 0 means "replaced") over real
    tokens or, with `replaced_only`, over the replaced ones (its recall of
    the generator's replacements). Reads `rtd` as
    `ReplacedTokenDetectionLoss` does."""

    def __init__(self, replaced_only=False, name="accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.replaced_only = replaced_only
        self.correct = self.add_variable((), initializer="zeros", name="correct")
        self.count = self.add_variable((), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        logits, replaced = y_pred[..., 0], y_pred[..., 1]  # (B, T) each
        weight = ops.ones_like(replaced) if sample_weight is None else sample_weight
        weight = ops.cast(weight, "float32")
        if self.replaced_only:
            weight = weight * replaced
        hit = ops.cast(ops.equal(ops.cast(logits > 0, "float32"), replaced), "float32")
        self.correct.assign_add(ops.sum(hit * weight))
        self.count.assign_add(ops.sum(weight))

    def result(self):
        return ops.divide_no_nan(self.correct, self.count)

    def get_config(self):
        return {**super().get_config(), "replaced_only": self.replaced_only}
