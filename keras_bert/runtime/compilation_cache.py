"""JAX's persistent compilation cache, on for every command.

Why: under JAX a budgeted run spends seconds of its clock compiling, each
weight shape's initializer while the model is built, then each phase's
training step (BENCHMARKS.md#the-default-run measures them). JAX can keep
what it compiled on disk and load it when it meets the same program
again. The backend probe builds the default run's model and trains it at
both phases' shapes before the run starts (`pretraining.step_probe`), so
with the cache the default run loads those programs instead of compiling
them on its clock, and a later run of any config loads what an earlier
run compiled.

Neither Keras nor the commands' flags turn it on. JAX reads these
variables when it is imported, so they are set before Keras loads, and
the probes, started as subprocesses, inherit them. A user's own `JAX_*`
setting is kept. The cache sits beside the backend choice
(`runtime.backend.CACHE_FILE`), bounded in size (JAX drops the least
recently used programs), and is left off where that folder cannot be
written (JAX would warn at every program).
"""

import os

from keras_bert.runtime.backend import CACHE_FILE, cache_problem

CACHE_DIR = os.path.join(os.path.dirname(CACHE_FILE), "jax_compilations")
SETTINGS = {
    "JAX_COMPILATION_CACHE_DIR": CACHE_DIR,
    # Every program, however quick to compile: the initializers' take well
    # under JAX's default threshold of a second each, but there are dozens.
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_COMPILATION_CACHE_MAX_SIZE": str(512 * 2**20),
}


def cache_jax_compilations():
    """Turns JAX's persistent compilation cache on for this process and the
    ones it starts, unless the cache folder cannot be written. Returns
    whether it did. Call it before JAX is imported."""
    if cache_problem() is not None:
        return False
    for name, value in SETTINGS.items():
        os.environ.setdefault(name, value)
    return True
