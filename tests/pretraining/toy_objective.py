"""A pre-training objective that lives outside `keras_bert` (issue 68): the
masked LM alone, no next-sentence head trained, its loss scaled by a knob
of its own section. `test_objective_door.py` registers it in one line and
trains, resumes and exports it through `run_pretraining`.

Like the shipped objectives, it imports Keras inside the methods that use
it: the recipe reads its section, ranges and checks first.
"""

import dataclasses

from keras_bert.errors import ConfigError
from keras_bert.pretraining.masked_lm_objective import masked_lm_losses, to_keras_batch


@dataclasses.dataclass
class ToyConfig:
    """`toy:` in a recipe. `mlm_weight`: the masked-LM loss's weight."""

    mlm_weight: float = 1.0


class ToyObjective:
    """A `BertPretrainer` trained on its masked-LM loss only (the
    next-sentence loss weighted 0), exported as `toy_pretrainer.keras`."""

    config_ranges = {"mlm_weight": (lambda v: v > 0, "> 0")}
    export_stems = ("backbone", "toy_pretrainer")
    logged = ("loss", "mlm_loss", "mlm_accuracy")
    fill_mask_note = ""

    @classmethod
    def config_section(cls):
        return ToyConfig()

    @classmethod
    def check_config(cls, config):
        if config.data.next_sentence_rate != 0:
            raise ConfigError(
                f"objective={config.objective} trains no next-sentence head. "
                f"Received: data.next_sentence_rate={config.data.next_sentence_rate}"
            )
        if config.sampled_softmax_candidates is not None:
            return [f"objective={config.objective} trains on the full softmax."]
        return []

    def __init__(self, config):
        self.mlm_weight = config.objective_sections()[config.objective].mlm_weight

    def build_model(self, backbone):
        from keras_bert.models import BertPretrainer

        return BertPretrainer(backbone, name="toy_pretrainer")

    def compile_args(self):
        import keras

        return {
            "loss": masked_lm_losses(),
            "loss_weights": {"mlm": self.mlm_weight, "nsp": 0.0},
            "weighted_metrics": {"mlm": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]},
        }

    def to_keras_batch(self, features, labels, sample_weights, training=True):
        return to_keras_batch(features, labels, sample_weights)

    def output_bias(self, model):
        return model.masked_lm_output_bias

    def fill_mask_inputs(self, inputs):
        return inputs

    def exports(self, model):
        # No SavedModels: the shipped objectives' tests write theirs.
        return dict(zip(self.export_stems, [(model.backbone, False), (model, False)], strict=True))

    def report(self, metrics):
        return f"mlm_accuracy={metrics['mlm_accuracy']:.4f}" if "mlm_accuracy" in metrics else ""
