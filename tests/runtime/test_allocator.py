"""glibc's allocator kept from unmapping freed blocks under JAX: measured by
the page faults a process takes to allocate and free a large array again
and again (every page faults anew when each block is a fresh `mmap`)."""

import os
import platform
import subprocess
import sys

import pytest

pytestmark = [
    pytest.mark.backend_independent,
    pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt"),
]

# 64 MiB blocks, over glibc's largest mmap threshold (32 MiB), allocated and
# freed 10 times after a first one; prints whether the setting was made and
# the minor page faults of those 10.
ALLOCATE_AND_FREE = """
import resource
import numpy as np
from keras_bert.runtime.allocator import keep_freed_memory_for_jax
kept = keep_freed_memory_for_jax()
np.ones(2**23).sum()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    np.ones(2**23).sum()
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


BLOCK = 2**26
# numpy asks for huge pages on large arrays: a fault may fill 2 MiB.
HUGE_PAGE = 2**21


def page_faults(backend):
    done = subprocess.run(
        [sys.executable, "-c", ALLOCATE_AND_FREE],
        env={**os.environ, "KERAS_BACKEND": backend},
        capture_output=True,
        text=True,
        check=True,
    )
    kept, faults = done.stdout.split()
    return kept == "True", int(faults)


def test_under_jax_a_freed_block_is_reused_without_faulting_its_pages_again():
    kept, faults = page_faults("jax")
    assert kept
    assert faults < BLOCK // HUGE_PAGE  # Less than one block, even in huge pages.


def test_other_backends_keep_glibcs_defaults():
    kept, faults = page_faults("tensorflow")
    assert not kept
    assert faults >= 10 * BLOCK // HUGE_PAGE  # Every block faulted in anew.
