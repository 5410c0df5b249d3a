"""keras_bert: BERT pre-training and fine-tuning for Keras 3."""

from keras_bert.models import (
    BertBackbone,
    BertClassifier,
    BertMultipleChoice,
    BertPretrainer,
    BertRegressor,
    BertSpanLabeler,
    BertTokenClassifier,
)

# Saved task and pre-training models carry their optimizer, whose learning
# rate is this schedule: importing it registers it, so that
# `keras.saving.load_model` needs nothing beyond `import keras_bert`.
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
