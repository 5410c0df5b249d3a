"""TensorBoard scalars, throughput and an optional profiler window."""

import os
import time

import keras

from keras_bert.pretraining.time_budget import clock_time


class TrainingMonitor(keras.callbacks.Callback):
    """One TensorBoard point and one console line per logging window.

    Scalars under `<log_dir>/train`, keyed on the optimizer step so curves
    continue across phases and resumed runs: the objective's `logged`
    losses and metrics (means over the window; masked LM: loss, mlm_loss,
    nsp_loss, mlm_accuracy, nsp_accuracy), learning_rate,
    examples_per_second, tokens_per_second (padded sequence slots) and
    phase. Held-out metrics that `fit` evaluated in the window (`val_*`)
    go to `<log_dir>/eval` as `<metric>_seq<T>`. The console line reads
    `step 120/300  phase 0 (seq 128)  loss ...  ... seq/s  <elapsed>
    elapsed, ~<left> left  | held-out mlm_accuracy ...`: the time left is
    the remaining updates at the window's speed (in a budgeted run, the
    budget's).
    A run without phases (fine-tuning) starts its one phase as None: no
    phase in the line or the scalars, and no tokens_per_second when its
    batches have no one length (`start_phase`).
    Works on every backend (summaries go through `tf.summary`).

    Args:
        log_dir: str. TensorBoard log directory.
        state: `TrainingState` (read only).
        logged: tuple of str, or None. The `fit` log keys to write
            (`PretrainingObjective.logged`); those ending in `accuracy`
            are printed too. None: every training key `fit` logs.
        learning_rate_fn: callable step -> float.
        total_steps: int or None. Optimizer updates of the whole run;
            None in a budgeted run (its length is its time).
        seconds_left_fn: callable or None. The time left, for a budgeted
            run; None: the remaining updates at the window's speed.
        profile_steps: `(first, last)` optimizer steps to trace, or None.
            TensorFlow and JAX backends; the trace lands in `log_dir`.
        enabled: bool. False on non-chief workers (nothing written).
        verbose: bool. Print the console line.
        clock: callable returning seconds.
        started: float or None. The `clock` reading elapsed time counts
            from (the time budget's start); None: when the monitor is made.
    """

    def __init__(
        self,
        log_dir,
        state,
        logged,
        learning_rate_fn,
        total_steps,
        seconds_left_fn=None,
        profile_steps=None,
        enabled=True,
        verbose=True,
        clock=time.monotonic,
        started=None,
    ):
        super().__init__()
        self.log_dir = log_dir
        self.state = state
        self.logged = logged
        self.learning_rate_fn = learning_rate_fn
        self.total_steps = total_steps
        self.seconds_left_fn = seconds_left_fn
        self.profile_steps = profile_steps
        self.enabled = enabled
        self.verbose = verbose
        self.clock = clock
        self.started = clock() if started is None else started
        self.phase = None
        self.batch_size = None
        self.seq_len = None
        self._writers = {}
        self._profiling = False

    def writer(self, name):
        import tensorflow as tf

        if name not in self._writers:
            self._writers[name] = tf.summary.create_file_writer(os.path.join(self.log_dir, name))
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
        self._window_start = (time.perf_counter(), self.state.micro_step, self.state.step)

    def on_epoch_end(self, epoch, logs=None):
        # Up to the window's last batch: held-out evaluation is not training.
        start_time, start_micro, start_step = self._window_start
        seconds = self._last_batch_end - start_time
        batches = self.state.micro_step - start_micro
        examples_per_second = batches * self.batch_size / max(seconds, 1e-9)
        logs = logs or {}
        logged = self.logged or [k for k in logs if not k.startswith("val_")]
        scalars = {k: logs[k] for k in logged if k in logs}
        scalars.update(
            learning_rate=self.learning_rate_fn(self.state.step),
            examples_per_second=examples_per_second,
        )
        if self.seq_len is not None:
            scalars.update(tokens_per_second=examples_per_second * self.seq_len)
        if self.phase is not None:
            scalars.update(phase=self.phase)
        self.write_scalars("train", scalars, self.state.step)
        held_out = {k[len("val_") :]: logs[k] for k in logs if k.startswith("val_")}
        if held_out:
            self.write_scalars(
                "eval", {f"{k}_seq{self.seq_len}": v for k, v in held_out.items()}, self.state.step
            )
        if self.enabled and self.verbose:
            if self.seconds_left_fn:
                left = self.seconds_left_fn()
            else:
                seconds_per_update = seconds / max(self.state.step - start_step, 1)
                left = (self.total_steps - self.state.step) * seconds_per_update
            print(
                self.console_line(scalars, held_out, self.clock() - self.started, left),
                flush=True,
            )

    def console_line(self, scalars, held_out, elapsed_seconds, left_seconds):
        line = (
            f"step {self.state.step}"
            + (f"/{self.total_steps}" if self.total_steps else "")
            + "  "
            + (f"phase {self.phase} (seq {self.seq_len})  " if self.phase is not None else "")
            + f"loss {scalars.get('loss', float('nan')):.3f}  "
            + self._accuracies(scalars)
            + f"lr {scalars['learning_rate']:.2e}  "
            f"{scalars['examples_per_second']:.0f} seq/s  "
            f"{clock_time(elapsed_seconds)} elapsed, ~{clock_time(left_seconds)} left"
        )
        if held_out:
            line += "  | held-out " + self._accuracies(held_out).rstrip()
        return line

    def _accuracies(self, values):
        return "".join(
            f"{k} {values[k]:.3f}  "
            for k in self.logged or values
            if k.endswith("accuracy") and k in values
        )

    def on_train_batch_begin(self, batch, logs=None):
        if (
            self.enabled
            and self.profile_steps
            and not self._profiling
            and self.state.step == self.profile_steps[0]
        ):
            self._profiling = _start_profiler(os.path.join(self.log_dir, "train"))

    def on_train_batch_end(self, batch, logs=None):
        self._last_batch_end = time.perf_counter()
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
