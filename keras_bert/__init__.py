"""keras_bert: BERT pre-training and fine-tuning for Keras 3.

`import keras_bert` registers the models, the optimizer and its schedule
with Keras as Keras loads (at once, if it is loaded already), so that
`keras.saving.load_model` needs nothing more. It does the same in every
program and nothing else: it does not load Keras itself, measure backends
or change the console, and its public names load on first use.

It must not load Keras because Python imports this package before a
command's module (`python -m keras_bert.pretrain`), and the commands
choose the Keras backend after parsing their arguments, before Keras
reads `KERAS_BACKEND`. Their harness (`runtime.command.start_up`) registers
the classes once the backend is chosen.
"""

import importlib
import importlib.abc
import importlib.util
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
    optimizer, schedule, and the losses and metrics a pretrainer is saved
    compiled with); importing them registers them with Keras."""
    for module in (
        "models",
        "optimization.adam_weight_decay",
        "optimization.warmup_linear_decay",
        "pretraining.replaced_token_detection_loss",
        "pretraining.replaced_token_accuracy",
    ):
        importlib.import_module(f"keras_bert.{module}")


class _RegisterWhenKerasLoads(importlib.abc.MetaPathFinder):
    """Finds `keras` as Python would, and registers keras_bert's classes
    once the module has run. Python has no post-import hook; this finder
    is the documented way to wrap one module's loading. It removes itself
    at its first use."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "keras":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def run_then_register(module):
            run_module(module)
            register_serializables()

        spec.loader.exec_module = run_then_register
        return spec


if "keras" in sys.modules:
    register_serializables()
else:
    sys.meta_path.insert(0, _RegisterWhenKerasLoads())
