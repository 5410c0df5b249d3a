"""A run's `model_dir`: one process at a time (`RunLock`), and one kind of
run (`refuse_another_run`)."""

import os
import socket

import tensorflow as tf
import yaml

from keras_bert.errors import ConfigError, FinetuneError
from keras_bert.file_io import FILE_ERRORS, error_reason, is_file, is_local

LOCK_FILE = "pretrain.lock"
FINETUNE_LOCK_FILE = "finetune.lock"
_ABSENT = object()


def refuse_another_run(model_dir, task=None):
    """Raises if `model_dir` holds a run of another kind, before anything is
    written into it: a rerun of the same job may continue there (pre-training
    resumes, fine-tuning replaces its outputs), no other run writes over it.

    Pre-training (`task` None) is refused a fine-tuning run's folder (its
    config.yaml names a task) with a `ConfigError`. Fine-tuning `task` is
    refused, with a `FinetuneError`, a pre-training run's folder (its lock or
    checkpoints), a config.yaml that is no fine-tuning run's, and another
    task's run.
    """
    previous = _previous_config(model_dir)
    if task is None:
        if isinstance(previous, dict) and "task" in previous and "phases" not in previous:
            raise ConfigError(
                f"model_dir {model_dir!r} holds a fine-tuning run (task "
                f"{previous['task']!r}); pre-train into another folder."
            )
        return  # An unreadable config.yaml is `check_rerun_config`'s to report.
    if tf.io.gfile.exists(os.path.join(model_dir, LOCK_FILE)) or tf.io.gfile.isdir(
        os.path.join(model_dir, "checkpoints")
    ):
        raise FinetuneError(
            f"--model_dir {model_dir}: holds a pre-training run; fine-tune "
            "into another folder (--init_checkpoint takes its backbone.keras)"
        )
    if previous is _ABSENT:
        return
    if not isinstance(previous, dict) or "phases" in previous:
        raise FinetuneError(
            f"--model_dir {model_dir}: its config.yaml is not a fine-tuning "
            "run's; pick another folder"
        )
    if previous.get("task") != task:
        raise FinetuneError(
            f"--model_dir {model_dir}: holds a fine-tuning run of task "
            f"{previous.get('task')!r}; pick another folder for {task!r}"
        )


def _previous_config(model_dir):
    """`<model_dir>/config.yaml` as YAML read it (None when unreadable), or
    `_ABSENT`."""
    path = os.path.join(model_dir, "config.yaml")
    if not is_file(path):
        return _ABSENT
    try:
        with tf.io.gfile.GFile(path) as f:
            return yaml.safe_load(f.read())
    except (*FILE_ERRORS, UnicodeDecodeError, yaml.YAMLError):
        return None


class RunLock:
    """Holds `<model_dir>/pretrain.lock` ("<pid> <host>") for a `with` block.

    Two processes training into one folder would write the same
    checkpoint steps over each other; the second is refused with
    `error` (a `ConfigError` unless given). A local lock file is created
    with `O_EXCL`, so of two starters exactly one gets it. A lock left by
    a process that died without releasing it (`kill -9`, a crash) names a
    pid that no longer runs on this host: it is taken over with a warning.
    A lock from another host cannot be checked and is never taken over.

    Object stores (`gs://`) have no exclusive create through TensorFlow's
    file system layer: there the lock is written when absent and read back
    (of two writers, the last keeps it). A run started while another holds
    the lock is refused; two started within a second or so may both pass.

    Args:
        model_dir: str. An existing folder, local or remote.
        lock_file: str. The lock's name in it.
        activity: str. What holds the lock, for the messages.
        error: the exception class of a refusal.
    """

    def __init__(self, model_dir, lock_file=LOCK_FILE, activity="pre-training", error=ConfigError):
        self.path = os.path.join(model_dir, lock_file)
        self.activity = activity
        self.error = error

    def __enter__(self):
        host = socket.gethostname()
        claim = f"{os.getpid()} {host}\n"
        if self._create(claim):
            return self
        pid, holder = self._holder()
        if holder != host or pid is None or _running(pid):
            raise self._held(pid, holder)
        print(
            f"warning: taking over the lock {self.path} of pid {pid}, which is no longer running.",
            flush=True,
        )
        tf.io.gfile.remove(self.path)
        if not self._create(claim):  # Another starter took it over first.
            raise self._held(*self._holder())
        return self

    def __exit__(self, *exc_info):
        tf.io.gfile.remove(self.path)

    def _create(self, claim):
        """Writes `claim` into a new lock file; False if one exists."""
        try:
            if is_local(self.path):
                try:
                    fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
                except FileExistsError:
                    return False
                with os.fdopen(fd, "w") as f:
                    f.write(claim)
                return True
            if tf.io.gfile.exists(self.path):
                return False
            with tf.io.gfile.GFile(self.path, "w") as f:
                f.write(claim)
            with tf.io.gfile.GFile(self.path) as f:
                return f.read() == claim
        except (PermissionError, tf.errors.PermissionDeniedError) as error:
            # The first file a run writes: this is where a read-only
            # model_dir shows.
            raise self.error(
                f"Cannot write in model_dir: {error_reason(error)}. Received: "
                f"model_dir={os.path.dirname(self.path)!r}"
            ) from None

    def _held(self, pid, holder):
        return self.error(
            f"{self.path} is held by pid {pid} on host {holder}: "
            f"another {self.activity} is using this model_dir. Wait "
            "for it to end, or delete the file if it is gone."
        )

    def _holder(self):
        """`(pid, host)` written in the lock; pid None if unreadable."""
        with tf.io.gfile.GFile(self.path) as f:
            pid, _, host = f.read().strip().partition(" ")
        return (int(pid) if pid.isdigit() else None), host


def _running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # Alive, owned by another user.
        return True
    return True
