"""JAX's persistent compilation cache, turned on for the commands and the
backend probes they start. Whether a run loads the probe's programs:
tests/pretraining/test_step_probe.py."""

import os

import pytest

from keras_bert.runtime import compilation_cache

pytestmark = pytest.mark.backend_independent


@pytest.fixture
def unset(monkeypatch):
    for name in compilation_cache.SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(compilation_cache, "cache_problem", lambda: None)


def test_the_cache_is_on_in_the_backend_cache_folder(unset, monkeypatch):
    assert compilation_cache.cache_jax_compilations()
    assert os.environ["JAX_COMPILATION_CACHE_DIR"] == compilation_cache.CACHE_DIR
    assert os.path.dirname(compilation_cache.CACHE_DIR) == os.path.dirname(
        compilation_cache.CACHE_FILE
    )
    assert os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"
    assert int(os.environ["JAX_COMPILATION_CACHE_MAX_SIZE"]) > 0


def test_the_users_own_settings_are_kept(unset, monkeypatch):
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", "/elsewhere")
    compilation_cache.cache_jax_compilations()
    assert os.environ["JAX_COMPILATION_CACHE_DIR"] == "/elsewhere"


def test_off_where_the_folder_cannot_be_written(unset, monkeypatch):
    monkeypatch.setattr(compilation_cache, "cache_problem", lambda: "Read-only file system")
    assert not compilation_cache.cache_jax_compilations()
    assert not any(name in os.environ for name in compilation_cache.SETTINGS)
