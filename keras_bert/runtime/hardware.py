"""What this machine computes on, and the precision and compilation that pay
on it.

Two questions, asked at two moments:

- Before Keras loads (the console and the backend choice): is a GPU or TPU
  here, or named by the environment? `accelerator_devices` and
  `accelerator_expected` read device files and environment variables only.
- Once Keras runs (building a model): what does the backend compute on
  (`accelerator`), and so which `precision` and `jit_compile` an `"auto"`
  setting means (`resolve_precision`, `resolve_jit_compile`).

Standard library only at import: Keras, TensorFlow, JAX and PyTorch are
imported inside the functions that ask them.
"""

import glob
import os

# On a CPU, bfloat16 pays only with bf16 arithmetic, a model at least 768
# wide and not under JAX, whose XLA CPU code is slower in bfloat16 at every
# size (BENCHMARKS.md#findings-behind-the-defaults).
BFLOAT16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")
BFLOAT16_CPU_MIN_HIDDEN_DIM = 768


def accelerator_devices():
    """The GPU and TPU device files of this machine, sorted."""
    return sorted(glob.glob("/dev/nvidia[0-9]*") + glob.glob("/dev/accel*"))


def accelerator_expected():
    """Whether this machine shows a GPU or TPU, or the environment names one."""
    return bool(
        accelerator_devices()
        or os.environ.get("CUDA_VISIBLE_DEVICES")
        or os.environ.get("TPU_NAME")
    )


def keras_backend():
    """The Keras backend's name; imports Keras, which fixes it."""
    import keras

    return keras.backend.backend()


def accelerator():
    """ "gpu", "tpu" or None: what the Keras backend computes on."""
    backend = keras_backend()
    if backend == "jax":
        import jax

        platform = jax.devices()[0].platform
        return platform if platform in ("gpu", "tpu") else None
    if backend == "torch":
        import torch

        return "gpu" if torch.cuda.is_available() else None
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        return "gpu"
    # Physical on a TPU VM; logical once a remote TPU is connected.
    tpu = tf.config.list_physical_devices("TPU") or tf.config.list_logical_devices("TPU")
    return "tpu" if tpu else None


def cpu_has_bfloat16_arithmetic():
    """Whether /proc/cpuinfo lists a bf16 arithmetic extension."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next(
                (line.split(":", 1)[1].split() for line in f if line.startswith("flags")), []
            )
    except OSError:  # Not Linux: no such file to read.
        return False
    return any(flag in flags for flag in BFLOAT16_CPU_FLAGS)


def resolve_precision(precision, hidden_dim):
    """`"auto"`: bfloat16 matmuls with float32 weights (`mixed_bfloat16`)
    where they pay: on a GPU or TPU, and on a CPU with bf16 arithmetic for
    models of `hidden_dim` >= 768 under TensorFlow or PyTorch; float32
    elsewhere (BENCHMARKS.md#findings-behind-the-defaults)."""
    if precision != "auto":
        return precision
    if accelerator():
        return "mixed_bfloat16"
    wide = isinstance(hidden_dim, int) and hidden_dim >= BFLOAT16_CPU_MIN_HIDDEN_DIM
    if wide and keras_backend() != "jax" and cpu_has_bfloat16_arithmetic():
        return "mixed_bfloat16"
    return "float32"


def resolve_jit_compile(jit_compile):
    """`"auto"` is Keras' choice (XLA where the model supports it) except on
    TensorFlow with no accelerator: there XLA's CPU code is never faster
    than TensorFlow's kernels for this model, and slower in bfloat16
    (BENCHMARKS.md#findings-behind-the-defaults)."""
    if jit_compile != "auto" or keras_backend() != "tensorflow":
        return jit_compile
    return "auto" if accelerator() else False
