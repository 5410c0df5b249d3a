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
