"""ELECTRA's discriminator loss (Clark et al. 2020,
https://arxiv.org/abs/2003.10555), read by `ElectraObjective`.

Shape legend: B batch, T sequence length.
"""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class ReplacedTokenDetectionLoss(keras.losses.Loss):
    """Sigmoid cross-entropy of the discriminator at every real token, its
    mean over them (`sample_weight`: the padding mask).

    `y_pred` is `ElectraPretrainer`'s `rtd` output (B, T, 2): the logit and
    the label drawn with it; `y_true` is not read (the pipeline cannot know
    what the generator will sample).
    """

    def __init__(self, name="rtd", reduction="mean_with_sample_weight", **kwargs):
        super().__init__(name=name, reduction=reduction, **kwargs)

    def call(self, y_true, y_pred):
        logits, replaced = y_pred[..., 0], y_pred[..., 1]  # (B, T) each
        return ops.binary_crossentropy(replaced, logits, from_logits=True)
