"""A training run's checkpoints, for `pretrain`, `finetune` and `distill`
alike: where the run is (`TrainingState`, the JSON saved beside each
checkpoint), the atomic, rotating checkpoints of weights + optimizer +
state (`CheckpointManager`), and the callback that counts steps, saves,
ends phases and turns SIGTERM and Ctrl-C into a save and a stop
(`TrainingCheckpoint`)."""

import contextlib
import dataclasses
import json
import os
import re
import signal
import tempfile

import keras
import numpy as np
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.file_io import FILE_ERRORS, atomic_directory, listdir, makedirs, remove


@dataclasses.dataclass
class TrainingState:
    """Counters that, with the weights and optimizer, resume a run exactly.

    Attributes:
        step: int. Optimizer updates applied (the learning-rate schedule's
            step); with gradient accumulation, `micro_step // k`.
        micro_step: int. Batches consumed over all phases.
        phase: int. Index of the current phase.
        phase_micro_step: int. Batches consumed in the current phase: the
            data position. Phase datasets are seeded, so skipping this many
            batches of a freshly built one lands exactly where the run was.
        finished: bool. Every phase done and the outputs exported.
        budget_progress: float. A budgeted run's share of the recipe's
            schedule reached (`BudgetClock`); 0 in a step-based run.
        budget_seconds_spent: float. A budgeted run's time budget spent.
        train_seconds: float. A fine-tuning run's time in training steps
            (not scoring), summed over every process that reached this
            state: what a stopped and resumed run cost.
    """

    step: int = 0
    micro_step: int = 0
    phase: int = 0
    phase_micro_step: int = 0
    finished: bool = False
    budget_progress: float = 0.0
    budget_seconds_spent: float = 0.0
    train_seconds: float = 0.0

    def to_dict(self):
        return dataclasses.asdict(self)


WEIGHTS_FILE = "model.weights.h5"
SEEDS_FILE = "seeds.json"
# PyTorch's global generator: Keras' PyTorch dropout draws from it when a
# layer's `SeedGenerator` has no seed of its own (`torch.nn.functional
# .dropout`, its fast path), so the seeds alone do not resume it there.
TORCH_RNG_FILE = "torch_rng.json"
STATE_FILE = "state.json"
_CHECKPOINT_RE = re.compile(r"^ckpt-(\d+)$")


class CheckpointManager:
    """Writes `ckpt-<step>/` directories under `directory` and keeps the last K.

    Each checkpoint holds `model.weights.h5` (Keras' `save_weights` of a
    compiled model: every model variable and every optimizer variable,
    including the step counter that drives the learning-rate schedule, the
    Adam moments and any gradient accumulators), `seeds.json` (the dropout
    `SeedGenerator` states, which `save_weights` leaves out: without them
    a resumed run would replay the first steps' dropout masks; under
    PyTorch, `torch_rng.json` too, its global generator's state) and
    `state.json` (global step, phase, data position). It is written into a
    temporary sibling directory and renamed into place, so a crash (even
    `kill -9`) leaves either a complete checkpoint or none; leftovers are
    removed on start. On an object store (`gs://`), which cannot rename a
    directory, the files move one by one with `state.json` last: a
    checkpoint counts only once it has one, and one a crash left without
    it is removed on start too (`keras_bert.file_io`).

    Args:
        directory: str. Usually `<model_dir>/checkpoints`; local or any
            path TensorFlow's file system layer knows.
        keep: int. Checkpoints kept; older ones are deleted after a save.
        is_chief: bool. Only the chief writes; other workers only read.
    """

    def __init__(self, directory, keep=3, is_chief=True):
        self.directory = directory
        self.keep = keep
        self.is_chief = is_chief
        self.torch_rng_state = None  # The restored checkpoint's, until training resumes.
        if is_chief:
            makedirs(directory)
            for name in listdir(directory):
                path = os.path.join(directory, name)
                if name.startswith(".tmp-") or (_CHECKPOINT_RE.match(name) and not _complete(path)):
                    remove(path, ignore_errors=True)

    def checkpoints(self):
        """`(step, path)` of complete checkpoints, oldest first."""
        if not tf.io.gfile.isdir(self.directory):
            return []
        found = []
        for name in listdir(self.directory):
            match = _CHECKPOINT_RE.match(name)
            path = os.path.join(self.directory, name)
            if match and _complete(path):
                found.append((int(match.group(1)), path))
        return sorted(found)

    def restore_newest(self, model, distribution=None):
        """`(path, TrainingState)` of the newest checkpoint that loads into
        `model` (under `distribution`; None: no `tf.distribute` strategy),
        or `(None, TrainingState())` if there is none.

        A checkpoint cut short or damaged on disk (a full disk, a bad copy)
        is skipped with a warning for the one before it: losing
        `checkpoint.every_steps` updates beats a run that cannot resume."""
        checkpoints = [path for _, path in self.checkpoints()]
        for path in reversed(checkpoints):
            try:
                with distribution.scope() if distribution else contextlib.nullcontext():
                    state = TrainingState(**CheckpointManager.restore(model, path))
                self.torch_rng_state = _torch_rng_state(path)
                return path, state
            except (*FILE_ERRORS, ValueError, KeyError, TypeError) as error:
                print(
                    f"warning: checkpoint {path} is unreadable "
                    f"({type(error).__name__}: {error}); trying the one "
                    "before it.",
                    flush=True,
                )
        if checkpoints:
            raise ConfigError(
                f"No readable checkpoint in {self.directory} (tried "
                f"{len(checkpoints)}). Move them away to start afresh."
            )
        return None, TrainingState()

    def resume_torch_generator(self):
        """Under PyTorch, puts the global generator where the restored
        checkpoint left it: called before each step, so that what draws from
        it before the first (the data loader Keras makes) has drawn."""
        if self.torch_rng_state is not None:
            import torch

            torch.set_rng_state(torch.tensor(self.torch_rng_state, dtype=torch.uint8))
            self.torch_rng_state = None

    def latest(self):
        """Path of the newest complete checkpoint, or None."""
        found = self.checkpoints()
        return found[-1][1] if found else None

    def save(self, model, state):
        """Saves `model` (compiled: optimizer included) and `state` (dict
        with an int `"step"`). Returns the checkpoint path."""
        path = os.path.join(self.directory, f"ckpt-{state['step']:08d}")
        if not self.is_chief:
            return path
        # A full disk leaves no partial checkpoint; the same step saved
        # twice (e.g. SIGTERM) replaces the first.
        with atomic_directory(path, last=STATE_FILE) as temp:
            makedirs(temp)
            _save_weights(model, os.path.join(temp, WEIGHTS_FILE))
            seeds = [keras.ops.convert_to_numpy(v).tolist() for v in _seed_states(model)]
            with tf.io.gfile.GFile(os.path.join(temp, SEEDS_FILE), "w") as f:
                json.dump(seeds, f)
            if keras.backend.backend() == "torch":
                import torch

                with tf.io.gfile.GFile(os.path.join(temp, TORCH_RNG_FILE), "w") as f:
                    json.dump(torch.get_rng_state().tolist(), f)
            # state.json last: its presence marks a checkpoint complete.
            with tf.io.gfile.GFile(os.path.join(temp, STATE_FILE), "w") as f:
                json.dump(state, f, indent=2)
        for _, old in self.checkpoints()[: -self.keep]:
            remove(old, ignore_errors=True)
        return path

    @staticmethod
    def read_state(path):
        with tf.io.gfile.GFile(os.path.join(path, STATE_FILE)) as f:
            return json.load(f)

    @staticmethod
    def restore(model, path):
        """Loads weights and optimizer state saved by `save` into `model`,
        which must be compiled with the same optimizer, and returns the
        saved state dict."""
        model.optimizer.build(model.trainable_variables)
        model.load_weights(os.path.join(path, WEIGHTS_FILE))
        seeds_path = os.path.join(path, SEEDS_FILE)
        states = _seed_states(model)
        if tf.io.gfile.exists(seeds_path):
            with tf.io.gfile.GFile(seeds_path) as f:
                seeds = json.load(f)
            if len(seeds) != len(states):
                raise ValueError(
                    f"{seeds_path} holds {len(seeds)} seed states; the model "
                    f"has {len(states)} SeedGenerators."
                )
            for variable, value in zip(states, seeds):
                variable.assign(np.asarray(value, variable.dtype))
        elif states:  # Older checkpoints have none; a lost one is the same.
            print(
                f"warning: {path} has no {SEEDS_FILE}: resuming with fresh "
                "dropout seeds, so the run will not repeat an uninterrupted "
                "one exactly.",
                flush=True,
            )
        return CheckpointManager.read_state(path)


def _save_weights(model, path):
    """`model.save_weights(path)` through the temporary folder: HDF5 kills
    the process (SIGSEGV) when the disk fills as it writes, where a copy
    raises an error the commands report in one line."""
    with tempfile.TemporaryDirectory() as scratch:
        written = os.path.join(scratch, WEIGHTS_FILE)
        model.save_weights(written)
        tf.io.gfile.copy(written, path, overwrite=True)


def _torch_rng_state(path):
    """The PyTorch generator state `path` holds (a list of bytes), or None
    under another backend or in a checkpoint without one."""
    rng_path = os.path.join(path, TORCH_RNG_FILE)
    if keras.backend.backend() != "torch" or not tf.io.gfile.exists(rng_path):
        return None
    with tf.io.gfile.GFile(rng_path) as f:
        return json.load(f)


def _complete(checkpoint):
    return tf.io.gfile.exists(os.path.join(checkpoint, STATE_FILE))


def _seed_states(model):
    """The state variables of `model`'s `SeedGenerator`s, in model order:
    in `variables` but not in `weights`."""
    weights = {id(v) for v in model.weights}
    return [v for v in model.variables if id(v) not in weights]


class TrainingCheckpoint(keras.callbacks.Callback):
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
