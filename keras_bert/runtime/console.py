"""TensorFlow's start-up notices, kept off a console that expects no GPU.

Importing TensorFlow 2.21 on a machine without an accelerator prints, from
its two native libraries and so twice, absl's "log messages before
InitializeLog" line, oneDNN and CUDA-driver notices, and at the first device
query "failed call to cuInit: CUDA error". On a CPU-only machine they read as
failures. They come from C++ before `TF_CPP_MIN_LOG_LEVEL` is read, so no
setting hides them: written by hand, `import_tensorflow_quietly` sends file
descriptor 2 to a temporary file while TensorFlow loads and finds its
devices, then writes back every line that is not one of those notices.

One more comes later, in every training run: oneDNN's "supports DT_INT64
only on platforms with AVX-512" (printed once per process, on any CPU, the
first time an integer tensor is transposed; keras-hub's masked-LM head does,
through Keras' `take_along_axis`). A one-element integer transpose during
the quiet import spends that once.

Nothing is hidden when a GPU or TPU is expected (a `/dev/nvidia*` or
`/dev/accel*` device, `CUDA_VISIBLE_DEVICES` or `TPU_NAME` set:
`hardware.accelerator_expected`), with a command's `--verbose` or with
`KERAS_BERT_VERBOSE=1`.
"""

import logging
import os
import re
import sys
import tempfile

from keras_bert.runtime.hardware import accelerator_expected

STARTUP_NOTICES = re.compile(
    r"All log messages before absl::InitializeLog\(\) is called"
    r"|\] oneDNN custom operations are on"
    r"|cudart_stub\.cc:\d+\] Could not find cuda drivers"
    r"|cuda_platform\.cc:\d+\] failed call to cuInit"
    r"|cpu_feature_guard\.cc:\d+\] This TensorFlow binary is optimized"
    r"|util\.cc:\d+\] oneDNN supports DT_\w+ only on platforms with AVX-512"
    r"|^To enable the following instructions: .* rebuild TensorFlow"
)


def verbose_requested():
    """`KERAS_BERT_VERBOSE=1`, which a command's `--verbose` sets through
    `run_command(verbose=True)` (its child processes inherit it)."""
    return os.environ.get("KERAS_BERT_VERBOSE") == "1"


def import_tensorflow_quietly():
    """Imports TensorFlow and lists its devices, dropping the start-up
    notices when no accelerator is expected. A no-op once TensorFlow is
    imported."""
    if "tensorflow" in sys.modules or verbose_requested() or accelerator_expected():
        return
    sys.stderr.flush()
    saved_stderr = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow as tf

            tf.config.list_physical_devices()
            tf.transpose(tf.constant([[0]]))  # oneDNN's one-time notice.
        finally:
            os.dup2(saved_stderr, 2)
            os.close(saved_stderr)
            captured.seek(0)
            lines = captured.read().decode("utf-8", "replace").splitlines(True)
            sys.stderr.writelines(line for line in lines if not STARTUP_NOTICES.search(line))
            sys.stderr.flush()


def add_verbose_argument(parser):
    """`--verbose`, which the command hands to `run_command(verbose=...)`."""
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show TensorFlow's start-up notices (hidden when no GPU or TPU is expected)",
    )


def configure_logging(format="%(message)s"):
    """INFO lines from keras_bert and pipelines; other libraries' (JAX's
    "Unable to initialize backend 'tpu'" on a CPU) from WARNING up, unless
    verbose."""
    logging.basicConfig(
        level=logging.INFO if verbose_requested() else logging.WARNING, format=format
    )
    for name in ("keras_bert", "pipelines"):
        logging.getLogger(name).setLevel(logging.INFO)
