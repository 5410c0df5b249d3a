"""Export for TF Serving: SavedModels whose graphs use core TensorFlow only."""

from keras_bert.export.core_ops_bert_tokenizer import CoreOpsBertTokenizer

__all__ = ["CoreOpsBertTokenizer"]
