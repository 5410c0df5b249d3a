"""keras_bert: BERT pre-training and fine-tuning for Keras 3."""

from keras_bert.console import import_tensorflow_quietly
from keras_bert.fastest_backend import use_fastest_backend_for_main_command

# Before Keras, which reads KERAS_BACKEND once and imports TensorFlow.
use_fastest_backend_for_main_command()
import_tensorflow_quietly()

from keras_bert.models import (  # noqa: E402
    BertBackbone,
    BertClassifier,
    BertMultipleChoice,
    BertPretrainer,
    BertRegressor,
    BertSpanLabeler,
    BertTokenClassifier,
)

# Saved task and pre-training models carry their optimizer and its learning
# rate schedule: importing them registers them, so that
# `keras.saving.load_model` needs nothing beyond `import keras_bert`.
from keras_bert.training.adam_weight_decay import AdamWeightDecay  # noqa: F401
from keras_bert.training.warmup_linear_decay import WarmupLinearDecay  # noqa: F401

__all__ = [
    "BertBackbone",
    "BertClassifier",
    "BertMultipleChoice",
    "BertPretrainer",
    "BertRegressor",
    "BertSpanLabeler",
    "BertTokenClassifier",
]
__version__ = "0.1.0"
