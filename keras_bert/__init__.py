"""keras_bert: BERT pre-training and fine-tuning for Keras 3.

`import keras_bert` registers the models, the optimizer and its schedule
with Keras, so that `keras.saving.load_model` needs nothing more. It does
nothing else: no backend measurement, no change to the console.

The commands (`python -m keras_bert.pretrain`, ...) choose the Keras
backend and quiet TensorFlow's start-up before Keras loads, after parsing
their arguments. Python imports this package before it runs the command's
module, and while it does, `sys.argv[0]` is "-m" (the documented behaviour
of `python -m`): then the package leaves Keras unloaded and its public
names load on first use.
"""

import importlib
import sys

_PUBLIC = {
    "BertBackbone": "keras_bert.models",
    "BertClassifier": "keras_bert.models",
    "BertMultipleChoice": "keras_bert.models",
    "BertPretrainer": "keras_bert.models",
    "BertRegressor": "keras_bert.models",
    "BertSpanLabeler": "keras_bert.models",
    "BertTokenClassifier": "keras_bert.models",
    "ElectraPretrainer": "keras_bert.models",
    "AdamWeightDecay": "keras_bert.optimization",
    "WarmupLinearDecay": "keras_bert.optimization",
}
__all__ = sorted(_PUBLIC)
__version__ = "0.1.0"


def __getattr__(name):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'keras_bert' has no attribute {name!r}")


def register_serializables():
    """Imports the modules whose classes a saved `.keras` names (models,
    optimizer, schedule); importing them registers them with Keras."""
    importlib.import_module("keras_bert.models")
    importlib.import_module("keras_bert.optimization")


if sys.argv[:1] != ["-m"]:
    register_serializables()
