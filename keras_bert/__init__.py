"""keras_bert: BERT pre-training and fine-tuning for Keras 3.

`import keras_bert` registers the models, the optimizer and its schedule
with Keras, so that `keras.saving.load_model` needs nothing more. It does
nothing else: no backend measurement, no change to the console.

The commands (`python -m keras_bert.pretrain`, ...) choose the Keras
backend and quiet TensorFlow's start-up before Keras loads, after parsing
their arguments. Python imports this package before it runs the command's
module: when the interpreter was started as `python -m keras_bert.<command>`
(`sys.orig_argv`), the package leaves Keras unloaded and its public names
load on first use. Any other program, a `python -m` of the user's own
included, gets the classes registered on import.
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
    importlib.import_module("keras_bert.optimization.adam_weight_decay")
    importlib.import_module("keras_bert.optimization.warmup_linear_decay")


def _running_a_command():
    """True when the interpreter runs `python [options] -m keras_bert.X`."""
    args = iter(sys.orig_argv[1:])
    for arg in args:
        if arg in ("-X", "-W"):  # Interpreter options that take a value.
            next(args, None)
        elif arg.startswith("-m"):
            module = arg[2:] or next(args, "")
            return module.startswith("keras_bert.")
        elif arg in ("-c", "-") or not arg.startswith("-"):
            return False  # `-c CODE`, stdin or a script.
    return False


if not _running_a_command():
    register_serializables()
