"""`RunLock`: one process at a time writes a run folder or an output."""

import errno
import os
import socket
import sys
import uuid

import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.file_io import error_reason, is_local, remove

LOCK_FILE = "pretrain.lock"
FINETUNE_LOCK_FILE = "finetune.lock"
# What `os.link` raises on a file system that has no hard links (FAT, some
# network and FUSE mounts).
_NO_HARD_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV)


class RunLock:
    """Holds `<model_dir>/pretrain.lock` ("<pid> <host>") for a `with` block.

    Two processes training into one folder would write the same
    checkpoint steps over each other; the second is refused with
    `error` (a `ConfigError` unless given). A local lock file is created
    with `O_EXCL`, so of two starters exactly one gets it. A lock left by
    a process that died without releasing it (`kill -9`, a crash) names a
    pid that no longer runs on this host: it is taken over with a warning.
    A lock from another host cannot be checked and is never taken over.
    A local lock appears whole (written beside it, then hard-linked into
    place), so an empty or unreadable one is a write that failed (a full
    disk) and is taken over with a warning too.

    Object stores (`gs://`) have no exclusive create through TensorFlow's
    file system layer: there the lock is written when absent and read back
    (of two writers, the last keeps it). A run started while another holds
    the lock is refused; two started within a second or so may both pass.

    Args:
        model_dir: str. An existing folder, local or remote.
        lock_file: str. The lock's name in it.
        activity: str. What holds the lock, for the messages.
        error: the exception class of a refusal.
        holds: str. What the lock guards, for the refusal.
    """

    def __init__(
        self,
        model_dir,
        lock_file=LOCK_FILE,
        activity="pre-training",
        error=ConfigError,
        holds="this model_dir",
    ):
        self.path = os.path.join(model_dir, lock_file)
        self.activity = activity
        self.error = error
        self.holds = holds

    def __enter__(self):
        host = socket.gethostname()
        claim = f"{os.getpid()} {host}\n"
        if self._create(claim):
            return self
        problem = self._not_a_lock_file()
        if problem:
            # Never taken over: no run leaves one, so what put it there is unknown.
            raise self.error(
                f"{self.path}: the {self.activity} lock of {self.holds} is {problem}, "
                "not a lock file a run wrote. Remove it, then start again."
            )
        pid, holder = self._holder()
        if pid is None:
            why = ", which names no process (empty or unreadable: a write that failed)"
        elif holder != host or _running(pid):
            raise self._held(pid, holder)
        else:
            why = f" of pid {pid}, which is no longer running"
        # On stderr: a command's stdout is its results (JSON, for a pipe).
        print(f"warning: taking over the lock {self.path}{why}.", file=sys.stderr, flush=True)
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
                return self._link_into_place(claim)
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

    def _link_into_place(self, claim):
        """Writes `claim` beside the lock, then hard-links it to the lock's
        name, which fails if the lock exists: of two starters exactly one
        gets it, and no one ever reads it half-written. What was written
        beside it is removed whatever happens."""
        # Random and created exclusively ("x"): a link planted at a name
        # known in advance (the pid's) would be written through.
        staged = f"{self.path}.{uuid.uuid4().hex}"
        try:
            with open(staged, "x", encoding="utf-8") as f:
                f.write(claim)
            try:
                os.link(staged, self.path)
            except FileExistsError:
                return False
            except OSError as error:
                if error.errno not in _NO_HARD_LINKS:
                    raise
                return self._create_exclusively(claim)
            return True
        finally:
            remove(staged, ignore_errors=True)

    def _create_exclusively(self, claim):
        """The lock on a file system without hard links: created with
        `O_EXCL`, then written (a failed write leaves it empty, which the
        next starter takes over)."""
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as f:
            f.write(claim)
        return True

    def _held(self, pid, holder):
        return self.error(
            f"{self.path} is held by pid {pid} on host {holder}: "
            f"another {self.activity} is using {self.holds}. Wait "
            "for it to end, or delete the file if it is gone."
        )

    def _not_a_lock_file(self):
        """What stands at the lock's name when it cannot be read as a lock
        (a folder, a link to nothing), else None."""
        link = is_local(self.path) and os.path.islink(self.path)
        if tf.io.gfile.isdir(self.path):
            return "a link to a folder" if link else "a folder"
        if link and not os.path.exists(self.path):
            return f"a link to {os.readlink(self.path)}, which does not exist"
        return None

    def _holder(self):
        """`(pid, host)` written in the lock; pid None if unreadable."""
        try:
            with tf.io.gfile.GFile(self.path) as f:
                pid, _, host = f.read().strip().partition(" ")
        except UnicodeDecodeError:
            return None, ""
        return (int(pid) if pid.isdigit() else None), host


def _running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # Alive, owned by another user.
        return True
    return True
