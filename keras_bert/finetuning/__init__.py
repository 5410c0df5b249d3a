"""Fine-tuning: task registry, official metrics, SQuAD post-processing and
the training loop behind `python -m keras_bert.finetune`.

Public API (each loaded on first use, like `keras_bert`'s own names, so that
importing one module of this package loads no other):

* `run_finetune` (`runner.py`): fine-tune, score, save and export one task.
* `run_evaluation`, `run_prediction` (`inference.py`): score a labelled
  file, or write predictions for an unlabelled one, with a saved run.
* `load_finetune_config` (`config.py`): a task's YAML config with overrides.
* `TASKS` (`task_registry.py`): task name -> (handler class, config file).
* `FinetuningTask` (`task.py`): the contract every handler class provides.
"""

import importlib

_PUBLIC = {
    "FinetuningTask": "keras_bert.finetuning.task",
    "TASKS": "keras_bert.finetuning.task_registry",
    "load_finetune_config": "keras_bert.finetuning.config",
    "run_evaluation": "keras_bert.finetuning.inference",
    "run_finetune": "keras_bert.finetuning.runner",
    "run_prediction": "keras_bert.finetuning.inference",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'keras_bert.finetuning' has no attribute {name!r}")
