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
