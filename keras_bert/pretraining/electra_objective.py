"""ELECTRA's objective: replaced-token detection with a jointly trained
generator (Clark et al. 2020, https://arxiv.org/abs/2003.10555).

Shape legend: B batch, T sequence length, P masked positions.
"""

import warnings

import keras
from keras import ops

from keras_bert.models import ElectraPretrainer
from keras_bert.pretraining.masked_lm_objective import pretraining_losses


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


class ReplacedTokenAccuracy(keras.metrics.Metric):
    """The discriminator's accuracy (logit > 0 means "replaced") over real
    tokens or, with `replaced_only`, over the replaced ones (its recall of
    the generator's replacements). Reads `rtd` as the loss does."""

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


class ElectraObjective:
    """`objective: electra`: an `ElectraPretrainer` (generator of
    `electra.generator_size`, the backbone the discriminator) trained on
    the generator's masked-LM loss plus `electra.discriminator_weight`
    (50 in the paper) times the discriminator's loss.

    Logged: `mlm_accuracy` (the generator's), `rtd_accuracy` (every real
    token) and `rtd_replaced_accuracy` (the replaced ones). The masked LM
    keeps the full softmax, which the generator samples from. Exports the
    backbone (`.keras`, SavedModel) and the whole `electra_pretrainer.keras`.
    """

    logged = (
        "loss",
        "mlm_loss",
        "rtd_loss",
        "mlm_accuracy",
        "rtd_accuracy",
        "rtd_replaced_accuracy",
    )
    fill_mask_note = "the generator's"

    def __init__(self, config):
        self.generator_size = config.electra.generator_size
        self.discriminator_weight = config.electra.discriminator_weight
        self.sampling_temperature = config.electra.sampling_temperature

    def build_model(self, backbone):
        # The discriminator reads the sequence output only: the backbone's
        # pooler, kept for fine-tuning, gets no gradient (as in ELECTRA's
        # own code), and the optimizer would warn of it at every run.
        warnings.filterwarnings(
            "ignore",
            message=r"Gradients do not exist for variables \['[^']*pooler_dense/kernel', "
            r"'[^']*pooler_dense/bias'\]",
            category=UserWarning,
        )
        return ElectraPretrainer(
            backbone,
            generator_size=self.generator_size,
            sampling_temperature=self.sampling_temperature,
            name="electra_pretrainer",
        )

    def compile_args(self):
        return {
            "loss": {"mlm": pretraining_losses()["mlm"], "rtd": ReplacedTokenDetectionLoss()},
            "loss_weights": {"mlm": 1.0, "rtd": self.discriminator_weight},
            "weighted_metrics": {
                "mlm": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                "rtd": [
                    ReplacedTokenAccuracy(name="accuracy"),
                    ReplacedTokenAccuracy(replaced_only=True, name="replaced_accuracy"),
                ],
            },
        }

    def to_keras_batch(self, features, labels, sample_weights, training=True):
        """The original ids and weights at the masked positions become
        inputs (the model builds the discriminator's labels from them); the
        `rtd` weights are the padding mask; no next-sentence output."""
        import tensorflow as tf

        features = dict(features)
        padding_mask = tf.cast(features["padding_mask"], tf.int32)
        features["padding_mask"] = padding_mask
        features["masked_lm_ids"] = tf.cast(labels["mlm"], tf.int32)
        features["masked_lm_weights"] = tf.cast(sample_weights["mlm"], tf.float32)
        return (
            features,
            {"mlm": labels["mlm"], "rtd": tf.zeros_like(padding_mask)},
            {"mlm": sample_weights["mlm"], "rtd": tf.cast(padding_mask, tf.float32)},
        )

    def exports(self, model):
        # The whole model has no serving signature (`serving/`): the
        # discriminator is what a user fine-tunes and serves.
        return {"backbone": (model.backbone, True), "electra_pretrainer": (model, False)}

    def report(self, metrics):
        return " ".join(
            f"{key}={metrics[key]:.4f}"
            for key in ("mlm_accuracy", "rtd_accuracy", "rtd_replaced_accuracy")
            if key in metrics
        )
