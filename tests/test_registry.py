"""`keras_bert.registry.Registry`: names without imports, classes on lookup."""

import sys

import pytest

from keras_bert.registry import Registry

pytestmark = pytest.mark.backend_independent


def test_names_and_membership_import_nothing_a_lookup_imports_its_class():
    module = "tests.registry_target_not_imported"
    registry = Registry({"target": f"{module}.Target"})
    sys.modules.pop(module, None)
    assert "target" in registry and "other" not in registry
    assert list(registry) == ["target"] and len(registry) == 1
    assert module not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        registry["target"]  # The module does not exist: the lookup imports it.
    with pytest.raises(KeyError):
        registry["other"]


def test_register_adds_a_name_in_one_line_and_never_replaces_one():
    registry = Registry({"ordered": "collections.OrderedDict"})
    registry.register("counter", "collections.Counter")
    assert list(registry) == ["ordered", "counter"]
    assert registry["counter"].__name__ == "Counter"
    registry.register("counter", "collections.Counter")  # The same line again: no change.
    with pytest.raises(ValueError, match="'ordered' is registered already, as collections"):
        registry.register("ordered", "collections.Counter")
    with pytest.raises(ValueError, match="must be a dotted path"):
        registry.register("deque", "deque")
    with pytest.raises(ValueError, match="must be an identifier"):
        registry.register("two words", "collections.deque")
    registry.unregister("counter")
    assert list(registry) == ["ordered"]
