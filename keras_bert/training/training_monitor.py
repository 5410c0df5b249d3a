"""TensorBoard scalars, throughput and an optional profiler window."""

import os
import time

import keras

# Keras' per-output names for the pre-training losses and metrics.
LOGGED = ("loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy")


class TrainingMonitor(keras.callbacks.Callback):
    """Writes one TensorBoard point per logging window (Keras epoch).

    Scalars under `<log_dir>/train`, keyed on the optimizer step so curves
    continue across phases and resumed runs: loss, mlm_loss, nsp_loss,
    mlm_accuracy, nsp_accuracy (means over the window), learning_rate,
    examples_per_second, tokens_per_second (padded sequence slots) and
    phase. Works on every backend (summaries go through `tf.summary`).

    Args:
        log_dir: str. TensorBoard log directory.
        state: `TrainingState` (read only).
        learning_rate_fn: callable step -> float.
        profile_steps: `(first, last)` optimizer steps to trace, or None.
            TensorFlow and JAX backends; the trace lands in `log_dir`.
        enabled: bool. False on non-chief workers (nothing written).
    """

    def __init__(self, log_dir, state, learning_rate_fn, profile_steps=None,
                 enabled=True):
        super().__init__()
        self.log_dir = log_dir
        self.state = state
        self.learning_rate_fn = learning_rate_fn
        self.profile_steps = profile_steps
        self.enabled = enabled
        self.batch_size = None
        self.seq_len = None
        self._writers = {}
        self._profiling = False

    def writer(self, name):
        import tensorflow as tf

        if name not in self._writers:
            self._writers[name] = tf.summary.create_file_writer(
                os.path.join(self.log_dir, name))
        return self._writers[name]

    def write_scalars(self, name, scalars, step):
        """Writes `{tag: value}` to the `name` run (train or eval)."""
        if not self.enabled:
            return
        import tensorflow as tf

        with self.writer(name).as_default(step=step):
            for tag, value in scalars.items():
                tf.summary.scalar(tag, float(value))
        self.writer(name).flush()

    def start_phase(self, phase_index, batch_size, seq_len):
        self.phase = phase_index
        self.batch_size = batch_size
        self.seq_len = seq_len

    def on_epoch_begin(self, epoch, logs=None):
        self._window_start = (time.perf_counter(), self.state.micro_step)

    def on_epoch_end(self, epoch, logs=None):
        start_time, start_micro = self._window_start
        seconds = time.perf_counter() - start_time
        batches = self.state.micro_step - start_micro
        examples_per_second = batches * self.batch_size / max(seconds, 1e-9)
        scalars = {k: logs[k] for k in LOGGED if logs and k in logs}
        scalars.update(
            learning_rate=self.learning_rate_fn(self.state.step),
            examples_per_second=examples_per_second,
            tokens_per_second=examples_per_second * self.seq_len,
            phase=self.phase,
        )
        self.write_scalars("train", scalars, self.state.step)

    def on_train_batch_begin(self, batch, logs=None):
        if (self.enabled and self.profile_steps and not self._profiling
                and self.state.step == self.profile_steps[0]):
            self._profiling = _start_profiler(
                os.path.join(self.log_dir, "train"))

    def on_train_batch_end(self, batch, logs=None):
        if self._profiling and self.state.step >= self.profile_steps[1]:
            _stop_profiler()
            self._profiling = False

    def on_train_end(self, logs=None):
        if self._profiling:
            _stop_profiler()
            self._profiling = False


def _start_profiler(log_dir):
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        tf.profiler.experimental.start(log_dir)
        return True
    if backend == "jax":
        import jax

        jax.profiler.start_trace(log_dir)
        return True
    print(f"profile_steps: no profiler on the {backend} backend; skipped.")
    return False


def _stop_profiler():
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tf.profiler.experimental.stop()
    else:
        import jax

        jax.profiler.stop_trace()
