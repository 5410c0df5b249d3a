"""Export for TF Serving: SavedModels whose graphs use core TensorFlow only.

from keras_bert.serving import export_for_serving
export_for_serving(model, "/models/my_model")  # -> "/models/my_model/1"
"""

from keras_bert.serving.core_ops_bert_tokenizer import CoreOpsBertTokenizer
from keras_bert.serving.serving_export import (
    export_for_serving,
    find_model_file,
)

__all__ = ["CoreOpsBertTokenizer", "export_for_serving", "find_model_file"]
