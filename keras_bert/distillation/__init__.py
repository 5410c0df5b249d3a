"""Task distillation: a fine-tuned teacher labels a transfer set once, a
small student learns its outputs (`python -m keras_bert.distill`,
docs/distillation.md).

Public API (each loaded on first use, as `keras_bert.finetuning`'s):

* `run_distillation` (`runner.py`): one distillation run into a fine-tuning
  run folder.
* `load_distill_config` (`config.py`): the recipe with its `distillation:`
  section.
* `StudentLoss` (`student_loss.py`): the soft-target loss, blended with
  the labels.
"""

import importlib

_PUBLIC = {
    "StudentLoss": "keras_bert.distillation.student_loss",
    "load_distill_config": "keras_bert.distillation.config",
    "run_distillation": "keras_bert.distillation.runner",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'keras_bert.distillation' has no attribute {name!r}")
