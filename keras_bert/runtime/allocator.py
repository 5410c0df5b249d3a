"""glibc's allocator told to keep freed memory for the next training step,
for the JAX backend.

Why: XLA's CPU client allocates a step's large buffers (the masked-LM
logits over the 30,522-word vocabulary, their softmax and gradient) anew
every step. glibc serves a block over its mmap threshold (at most 32 MiB)
with a fresh `mmap` and hands it back with `munmap`, so each step faults
every page of those buffers in again, and the kernel's share of the
default run's CPU time under JAX is large (measured in
BENCHMARKS.md#findings-behind-the-defaults). With `mmap` off, one arena and the trim
threshold at its largest, a freed block stays in the heap and the next
step reuses it.

Neither JAX nor Keras has a setting for this on a CPU
(`XLA_PYTHON_CLIENT_ALLOCATOR` chooses among GPU allocators), and glibc's
`MALLOC_*_` variables are read once, when the process starts, too early
for a command that picks its backend after parsing its arguments; so this
calls glibc's `mallopt`, which sets the same parameters at run time.
TensorFlow keeps its own pools and is left as it is.
"""

import ctypes
import os
import platform

# <malloc.h>'s parameter numbers.
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
M_ARENA_MAX = -8
KEEP_FREED_MEMORY = (
    (M_MMAP_MAX, 0),  # Never `mmap` a block: every block comes from the heap.
    (M_ARENA_MAX, 1),  # Other arenas' heaps are capped (64 MiB) and mmap'd.
    (M_TRIM_THRESHOLD, 2**31 - 1),  # Give freed heap back to the system (almost) never.
)


def keep_freed_memory_for_jax():
    """Sets glibc's allocator to reuse freed blocks when the Keras backend
    is JAX (`KERAS_BACKEND`) on glibc. Returns whether it did. Call it
    before JAX allocates its first buffers (blocks already mapped are
    unmapped as before)."""
    if os.environ.get("KERAS_BACKEND") != "jax" or platform.libc_ver()[0] != "glibc":
        return False
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return all(mallopt(parameter, value) == 1 for parameter, value in KEEP_FREED_MEMORY)
