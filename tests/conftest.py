"""Shared pytest setup: quiet TensorFlow logs, deterministic seeds."""

import os
import subprocess
import uuid

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


@pytest.fixture
def small_disk(tmp_path):
    """`mount(size)`: a tmpfs of `size` (for example "64k") under tmp_path,
    to fill up; the test is skipped without root. Unmounted afterwards."""
    mounted = []

    def mount(size):
        mount_point = tmp_path / f"small_disk_{len(mounted)}"
        mount_point.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)],
            capture_output=True,
        )
        if done.returncode:
            pytest.skip("mounting a small tmpfs needs root")
        mounted.append(mount_point)
        return mount_point

    yield mount
    for mount_point in mounted:
        subprocess.run(["umount", str(mount_point)], check=True)


@pytest.fixture
def ram_dir():
    """A fresh folder in TensorFlow's in-memory file system (`ram://`), a
    stand-in for `gs://`: paths with a scheme, no directory rename.
    Removed afterwards."""
    import tensorflow as tf

    path = f"ram://{uuid.uuid4().hex}"
    tf.io.gfile.makedirs(path)
    yield path
    tf.io.gfile.rmtree(path)
