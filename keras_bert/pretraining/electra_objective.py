"""ELECTRA's objective: replaced-token detection with a jointly trained
generator (Clark et al. 2020, https://arxiv.org/abs/2003.10555).

Keras is imported inside the methods that build and compile: the recipe
reads this class's section, ranges and checks before the backend is chosen
(`objective.PretrainingObjective`).

Shape legend: B batch, T sequence length, P masked positions.
"""

import warnings

from keras_bert.errors import ConfigError
from keras_bert.pretraining.electra_config import ElectraConfig
from keras_bert.pretraining.masked_lm_objective import masked_lm_losses


class ElectraObjective:
    """`objective: electra`: an `ElectraPretrainer` (generator of
    `electra.generator_size`, the backbone the discriminator) trained on
    the generator's masked-LM loss plus `electra.discriminator_weight`
    (50 in the paper) times the discriminator's loss
    (`ReplacedTokenDetectionLoss`).

    Logged: `mlm_accuracy` (the generator's), `rtd_accuracy` (every real
    token) and `rtd_replaced_accuracy` (the replaced ones). The masked LM
    keeps the full softmax, which the generator samples from. Exports the
    backbone (`.keras`, SavedModel) and the whole `electra_pretrainer.keras`.
    """

    config_ranges = {
        "generator_size": (lambda v: 0 < v <= 1, "in (0, 1]"),
        "discriminator_weight": (lambda v: v > 0, "> 0"),
        "sampling_temperature": (lambda v: v > 0, "> 0"),
    }
    export_stems = ("backbone", "electra_pretrainer")
    logged = (
        "loss",
        "mlm_loss",
        "rtd_loss",
        "mlm_accuracy",
        "rtd_accuracy",
        "rtd_replaced_accuracy",
    )
    fill_mask_note = "the generator's"

    @classmethod
    def config_section(cls):
        return ElectraConfig()

    @classmethod
    def check_config(cls, config):
        if config.data.next_sentence_rate != 0:
            raise ConfigError(
                f"objective={config.objective} has no next-sentence task: set "
                "`data.next_sentence_rate: 0`. Received: "
                f"data.next_sentence_rate={config.data.next_sentence_rate!r}"
            )
        if config.sampled_softmax_candidates is not None:
            # The generator samples its replacements from its full softmax.
            return [
                "sampled_softmax_candidates is for objective masked_lm; "
                f"{config.objective} trains its masked LM on the full softmax."
            ]
        return []

    def __init__(self, config):
        electra = config.objective_sections()[config.objective]
        self.generator_size = electra.generator_size
        self.discriminator_weight = electra.discriminator_weight
        self.sampling_temperature = electra.sampling_temperature

    def build_model(self, backbone):
        from keras_bert.models import ElectraPretrainer

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
        import keras

        from keras_bert.pretraining.replaced_token_accuracy import ReplacedTokenAccuracy
        from keras_bert.pretraining.replaced_token_detection_loss import (
            ReplacedTokenDetectionLoss,
        )

        return {
            "loss": {"mlm": masked_lm_losses()["mlm"], "rtd": ReplacedTokenDetectionLoss()},
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

    def output_bias(self, model):
        return model.masked_lm_output_bias  # The generator's.

    def fill_mask_inputs(self, inputs):
        """The probes with no original tokens and nothing replaced: the
        generator answers them as it reads a training batch."""
        import numpy as np

        return {
            **inputs,
            "masked_lm_ids": np.zeros_like(inputs["mask_positions"]),  # (B, P)
            "masked_lm_weights": np.zeros(np.shape(inputs["mask_positions"]), "float32"),
        }

    def exports(self, model):
        # The whole model has no serving signature (`serving/`): the
        # discriminator is what a user fine-tunes and serves.
        return dict(zip(self.export_stems, [(model.backbone, True), (model, False)], strict=True))

    def report(self, metrics):
        return " ".join(
            f"{key}={metrics[key]:.4f}"
            for key in ("mlm_accuracy", "rtd_accuracy", "rtd_replaced_accuracy")
            if key in metrics
        )
