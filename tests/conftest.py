"""Shared pytest setup: quiet TensorFlow logs, deterministic seeds, and the
split of the suite by Keras backend.

`make test` runs the whole suite under TensorFlow, then only the
backend-dependent tests under JAX and PyTorch (`--backend-dependent-only`).
The rule: a test is `backend_independent` (a module-level `pytestmark` or a
mark on the test) when nothing it checks goes through the Keras backend's
numerics: configs, file handling and run folders, command-line errors, the
console and the backend choice, the tf.data pipelines and task readers,
metrics in numpy, conversion name maps, the README and the notebook. A test
that builds, trains, saves, loads, predicts with or evaluates a model for
what it checks is backend-dependent and stays unmarked, so it runs under all
three. A test that trains only on the way to what it checks (an error after
training, a rerun, a resume after a signal, a full disk, a remote file
system, a time-budget plan, the console's lines) is marked where the same
training path is trained, saved, resumed and reloaded by dependent tests
(the pre-training runner's full run and its seeded repeat-and-resume run,
the fine-tuning end-to-end and evaluate tests). Unmarked is the safe
default.
"""

import os
import subprocess
import uuid

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import pytest  # noqa: E402

from keras_bert.runtime import compilation_cache  # noqa: E402


def pytest_addoption(parser):
    parser.addoption(
        "--backend-dependent-only",
        action="store_true",
        help="deselect the tests marked backend_independent (make test's JAX and PyTorch runs)",
    )


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--backend-dependent-only"):
        return
    independent = [item for item in items if item.get_closest_marker("backend_independent")]
    if independent:
        config.hook.pytest_deselected(items=independent)
        items[:] = [item for item in items if not item.get_closest_marker("backend_independent")]


def session_folder(tmp_path_factory, name):
    """`<base>/<name>`, made if missing, where `<base>` is the folder every
    pytest-xdist worker of this session sees (the workers' common base
    temporary folder), or this process's own base folder without xdist: for
    what one worker makes and the others take up."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session", autouse=True)
def jax_compilation_cache(tmp_path_factory):
    """Under JAX, one persistent compilation cache for the session's test
    processes, empty when the session starts, as the commands have one
    (`runtime.compilation_cache`): a program compiled once, by any test in
    any worker, is loaded wherever it comes again (the tiny models are
    built, fitted and saved by dozens of tests), where JAX on a CPU spends
    most of a test compiling. JAX keys a program by its computation, the
    compiler's options and versions and the platform, so what runs is what
    compiling would give. Set in this process only: the subprocesses a test
    starts keep what they set themselves."""
    if keras.backend.backend() != "jax":
        return
    import jax

    folder = session_folder(tmp_path_factory, "jax_compilations")
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)


@pytest.fixture(autouse=True)
def keep_jax_cache_settings():
    """A command run in-process (`run_command`) turns JAX's compilation
    cache on in its process's environment (`runtime.compilation_cache`);
    put back after each test, so the subprocesses of later tests, which
    name their own cache folder, do not write to the user's."""
    before = {name: os.environ.get(name) for name in compilation_cache.SETTINGS}
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


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
