"""`Registry`: the name → class tables the commands offer as choices
(`finetuning.task_registry.TASKS`, `pretraining.objective_registry.OBJECTIVES`).

Each class is named by its dotted path and imported on first lookup, so a
command's `--help` lists the names without loading TensorFlow or Keras.
"""

import collections.abc
import importlib


class Registry(collections.abc.Mapping):
    """A read-only mapping name → class, each class imported when looked up.

    Example:
    >>> registry = Registry({"ordered": "collections.OrderedDict"})
    >>> sorted(registry), registry["ordered"].__name__
    (['ordered'], 'OrderedDict')
    """

    def __init__(self, paths):
        self._paths = dict(paths)  # name -> "package.module.Class"

    def __getitem__(self, name):
        module, _, attribute = self._paths[name].rpartition(".")
        return getattr(importlib.import_module(module), attribute)

    def __contains__(self, name):  # Mapping's default would import the class.
        return name in self._paths

    def __iter__(self):
        return iter(self._paths)

    def __len__(self):
        return len(self._paths)
