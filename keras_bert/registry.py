"""`Registry`: the name → class tables the commands offer as choices
(`finetuning.task_registry.TASKS`, `pretraining.objective_registry.OBJECTIVES`).

Each class is named by its dotted path and imported on first lookup, so a
command's `--help` lists the names without loading TensorFlow or Keras.
"""

import collections.abc
import importlib


class Registry(collections.abc.Mapping):
    """A mapping name → class, each class imported when looked up.

    The table a module ships is its own sibling files; `register` adds one
    more at run time (a user's class, a test's), in one line.

    Example:
    >>> registry = Registry({"ordered": "collections.OrderedDict"})
    >>> registry.register("counter", "collections.Counter")
    >>> sorted(registry), registry["ordered"].__name__
    (['counter', 'ordered'], 'OrderedDict')
    """

    def __init__(self, paths):
        self._paths = dict(paths)  # name -> "package.module.Class"

    def register(self, name, path):
        """Adds `name` → the class at dotted `path` (`"my_package.module.Class"`),
        imported on first lookup. A name already taken by another class is
        refused: a registration never replaces a shipped class."""
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"A registered name must be an identifier. Received: name={name!r}")
        module, _, attribute = str(path).rpartition(".")
        if not module or not attribute:
            raise ValueError(
                f"`path` must be a dotted path, package.module.Class. Received: path={path!r}"
            )
        if self._paths.get(name, path) != path:
            raise ValueError(
                f"{name!r} is registered already, as {self._paths[name]}. Received: path={path!r}"
            )
        self._paths[name] = path

    def unregister(self, name):
        """Removes `name` (a test's registration, when it is done)."""
        del self._paths[name]

    def __getitem__(self, name):
        module, _, attribute = self._paths[name].rpartition(".")
        return getattr(importlib.import_module(module), attribute)

    def __contains__(self, name):  # Mapping's default would import the class.
        return name in self._paths

    def __iter__(self):
        return iter(self._paths)

    def __len__(self):
        return len(self._paths)
