"""keras_bert: BERT pre-training and fine-tuning for Keras 3."""

from keras_bert.models import BertBackbone, BertPretrainer

__all__ = ["BertBackbone", "BertPretrainer"]
__version__ = "0.1.0"
