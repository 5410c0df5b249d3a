"""The callback that counts steps, checkpoints, ends phases and handles
SIGTERM and Ctrl-C."""

import signal

import keras


class PretrainingCheckpoint(keras.callbacks.Callback):
    """Advances a `TrainingState` per batch and saves through a
    `CheckpointManager` every `every_steps` optimizer updates.

    It also stops `fit` at the exact last batch of a phase (epochs are
    fixed-size logging windows, so the last one may be cut short), and,
    after `install_signal_handlers()`, turns SIGTERM (preemption, `kill`)
    and a first Ctrl-C (SIGINT) into "save a checkpoint at the next batch
    boundary and stop": the runner then returns and the process exits 0;
    running the same command again resumes from that checkpoint. A second
    Ctrl-C stops at once, without saving.

    Args:
        manager: `CheckpointManager`.
        state: `TrainingState`, updated in place.
        every_steps: int. Save when `state.step` is a multiple of it.
        gradient_accumulation_steps: int. Batches per optimizer update.
        after_save: callable or None. Called after each checkpoint is saved.
        before_stop: callable or None. Called before the checkpoint a stop
            saves; it may raise to stop without one (`KeyboardInterrupt`).
    """

    def __init__(
        self,
        manager,
        state,
        every_steps,
        gradient_accumulation_steps=1,
        after_save=None,
        before_stop=None,
    ):
        super().__init__()
        self.after_save = after_save
        self.before_stop = before_stop
        self.manager = manager
        self.state = state
        self.every_steps = every_steps
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.phase_micro_steps = None
        self.preempted = False
        self.last_saved_step = None

    def install_signal_handlers(self):
        """Returns `{signal: previous handler}` for `signal.signal`."""

        def on_signal(signum, frame):
            if signum == signal.SIGINT:
                if self.preempted:  # The second Ctrl-C.
                    raise KeyboardInterrupt
                print(
                    "Ctrl-C: saving a checkpoint at the next step boundary "
                    "(Ctrl-C again stops without saving).",
                    flush=True,
                )
            else:
                print("SIGTERM: saving a checkpoint at the next step boundary.", flush=True)
            self.preempted = True

        return {
            signum: signal.signal(signum, on_signal) for signum in (signal.SIGTERM, signal.SIGINT)
        }

    def start_phase(self, phase_micro_steps):
        """Batches the current phase has in total (the stop point); None:
        another callback ends it (a budgeted run's `BudgetClock`)."""
        self.phase_micro_steps = phase_micro_steps

    def save(self):
        self.manager.save(self.model, self.state.to_dict())
        self.last_saved_step = self.state.step
        if self.after_save:
            self.after_save()

    def on_train_batch_begin(self, batch, logs=None):
        self.manager.resume_torch_generator()

    def on_train_batch_end(self, batch, logs=None):
        state = self.state
        state.micro_step += 1
        state.phase_micro_step += 1
        update = state.micro_step % self.gradient_accumulation_steps == 0
        if update:
            state.step += 1
        if self.preempted:
            if self.before_stop:
                self.before_stop()
            self.save()
            self.model.stop_training = True
            return
        if update and state.step % self.every_steps == 0:
            self.save()
        if self.phase_micro_steps is not None and state.phase_micro_step >= self.phase_micro_steps:
            self.model.stop_training = True
