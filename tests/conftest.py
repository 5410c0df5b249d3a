"""Shared pytest setup: quiet TensorFlow logs, deterministic seeds."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def reset_keras_state():
    """Each test starts from float32 and a fixed seed."""
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")
