"""A run's `model_dir`: one process at a time (`RunLock`), one kind of run
(`refuse_another_run`), and its own files written by that run only
(`check_output`, which every command that writes calls first)."""

import contextlib
import errno
import json
import os
import posixpath
import socket

import tensorflow as tf
import yaml

from keras_bert.errors import ConfigError, FinetuneError, UserError
from keras_bert.file_io import (
    FILE_ERRORS,
    WRITTEN_THROUGH,
    error_reason,
    is_file,
    is_local,
    listdir,
    makedirs,
    remove,
    special_file,
    write_json_atomically,
)

LOCK_FILE = "pretrain.lock"
# What `os.link` raises on a file system that has no hard links (FAT, some
# network and FUSE mounts).
_NO_HARD_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV)
FINETUNE_LOCK_FILE = "finetune.lock"
_ABSENT = object()


def refuse_another_run(model_dir, task=None, overwrite=False):
    """Raises if `model_dir` holds a run of another kind, before anything is
    written into it: a rerun of the same job may continue there (pre-training
    resumes, fine-tuning replaces its outputs), no other run writes over it.

    Pre-training (`task` None) is refused a fine-tuning run's folder (its
    config.yaml names a task) with a `ConfigError`, and with `overwrite`
    any config.yaml that is not a pre-training run's (a project's own: the
    rerun would set it aside as the run's). Fine-tuning `task` is
    refused, with a `FinetuneError`, a pre-training run's folder (its lock or
    checkpoints), a config.yaml that is no fine-tuning run's, and another
    task's run, unless `overwrite` (that run is then replaced as a rerun's
    predecessor is).
    """
    previous = _previous_config(model_dir)
    if task is None:
        if isinstance(previous, dict) and "task" in previous and "phases" not in previous:
            raise ConfigError(
                f"model_dir {model_dir!r} holds a fine-tuning run (task "
                f"{previous['task']!r}); pre-train into another folder."
            )
        if overwrite and previous is not _ABSENT and not _is_pretraining_config(previous):
            raise ConfigError(
                f"model_dir {model_dir!r}: its config.yaml is not a keras_bert pre-training "
                "run's, and --overwrite replaces only such a run; pre-train into another folder."
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
    # A first run killed before it saved its model (`kill -9`) left its
    # config and vocabulary, no run: another task may take the folder.
    if (
        previous.get("task") != task
        and not overwrite
        and (is_file(os.path.join(model_dir, "model.keras")) or PreviousRun(model_dir).pending())
    ):
        raise FinetuneError(
            f"--model_dir {model_dir}: holds a fine-tuning run of task "
            f"{previous.get('task')!r}; pick another folder for {task!r}, or pass "
            "--overwrite to replace that run"
        )


def _is_pretraining_config(config):
    return isinstance(config, dict) and "phases" in config


def _previous_config(model_dir):
    """The run's config.yaml as YAML read it (None when unreadable), or
    `_ABSENT`: `<model_dir>/config.yaml`, or the set-aside run's while a
    rerun has not finished (`PreviousRun.pending`)."""
    path = os.path.join(model_dir, "config.yaml")
    set_aside = os.path.join(model_dir, PREVIOUS_RUN, "config.yaml")
    if PreviousRun(model_dir).pending() and is_file(set_aside):
        path = set_aside
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
        pid, holder = self._holder()
        if pid is None:
            why = ", which names no process (empty or unreadable: a write that failed)"
        elif holder != host or _running(pid):
            raise self._held(pid, holder)
        else:
            why = f" of pid {pid}, which is no longer running"
        print(f"warning: taking over the lock {self.path}{why}.", flush=True)
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
        staged = f"{self.path}.{os.getpid()}.{socket.gethostname()}"
        try:
            with open(staged, "w", encoding="utf-8") as f:
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


# What a run writes into its folder and reads back (fine-tuning: the model,
# its config, vocabulary, scores and dev predictions; pre-training: its
# checkpoints, logs and saved models). No other command writes over them.
EVAL_FILES = (
    "eval_results.json",
    "predictions.jsonl",
    "predictions.json",
    "predictions.txt",
    "null_odds.json",
)
RUN_FILES = frozenset(
    {
        "config.yaml",
        "model.keras",
        "vocab.txt",
        *EVAL_FILES,
        "export",
        "checkpoints",
        "logs",
        "backbone.keras",
        "pretrainer.keras",
        "electra_pretrainer.keras",
        "outputs.json",
        "saved_model",
        LOCK_FILE,
        FINETUNE_LOCK_FILE,
    }
)


def check_output(flag, path, inputs=(), overwrite=False, error=UserError):
    """Refuses, before anything is computed, to write the file `path` (what
    `flag` names) over a file the user did not name for writing:

    - one of `inputs` (files the command reads), through any spelling of
      the path or a symlink;
    - a run folder's own file (`RUN_FILES` in a keras_bert run folder,
      `is_run_folder`), even with `overwrite`;
    - any existing file, unless `overwrite`; a folder, or a path ending in
      a separator (a folder to be), always;
    - a block device or a socket, always. A character device or a FIFO
      (`/dev/null`, a pipe) is written through, replacing nothing, so it
      needs no `overwrite` (`file_io.WRITTEN_THROUGH`).

    Raises `error` with one line naming the flag, the path and the cause.
    """
    where = f"{flag} {path}" if flag else path
    for given in inputs:
        if _same_file(path, given):
            raise error(f"{where}: is the input file {given}; write the output elsewhere")
    kind = special_file(path)
    if kind in WRITTEN_THROUGH:
        return
    if kind is not None:
        raise error(f"{where}: is a {kind}, not a file; not written")
    if os.fspath(path).endswith(("/", os.sep)):
        raise error(f"{where}: ends in a separator, so names a folder; give a file name")
    run, part = _run_part(path)
    if run is not None:
        raise error(
            f"{where}: is {part} of the run in {run}; write the output elsewhere "
            "(not replaced, even with --overwrite)"
        )
    if tf.io.gfile.isdir(path):
        raise error(f"{where}: is a folder, not a file")
    if tf.io.gfile.exists(path) and not overwrite:
        raise error(f"{where}: already exists; pass --overwrite to replace it")


@contextlib.contextmanager
def claimed_output(path, check, activity, error=UserError):
    """Holds `.<name>.lock` beside the output file `path` while a command
    computes and writes it, and runs `check` (the command's output guard,
    `check_output`) again once held: of two commands started onto one new
    output, the second is refused, whether the first is still running or
    has finished meanwhile. A device or a pipe (`--output /dev/null`) is
    written through by any number of writers: no claim, no lock beside it.
    """
    if special_file(path) is not None:
        check()
        yield
        return
    folder, name = os.path.split(os.fspath(path))
    lock = RunLock(
        folder or os.curdir, f".{name}.lock", activity, error, holds=f"the output {path}"
    )
    with lock:
        check()
        yield


def check_export_folder(flag, path, error=UserError):
    """Refuses a TF Serving base folder (numbered versions go into it) that
    is a keras_bert run folder or one of its parts other than `export/`,
    where the versions would mix with the run's files."""
    if is_run_folder(path):
        raise error(
            f"{flag} {path}: is a run folder; export into its export/ folder or another one"
        )
    run, part = _run_part(path)
    if run is not None and part.split(os.sep)[0] != "export":
        raise error(
            f"{flag} {path}: is {part} of the run in {run}; export into its export/ "
            "folder or another one"
        )


def _same_file(a, b):
    if is_local(a) and is_local(b):
        if os.path.realpath(a) == os.path.realpath(b):
            return True
        try:  # A hard link, or a mount seen under two names.
            return os.path.samefile(a, b)
        except OSError:
            return False
    return _normalized(a) == _normalized(b)


def _normalized(path):
    scheme, sep, rest = os.fspath(path).partition("://")
    return scheme + sep + posixpath.normpath(rest) if sep else posixpath.normpath(scheme)


def is_run_folder(folder):
    """Whether `folder` holds a keras_bert run: its `config.yaml` is a
    pre-training config (`phases`) or a fine-tuning one (`task`), not any
    project's file of that name."""
    config = _previous_config(folder)
    return isinstance(config, dict) and ("phases" in config or "task" in config)


def _run_part(path):
    """`(run folder, its own file)` when `path` is, or is inside, one of
    `RUN_FILES` of a keras_bert run folder (`is_run_folder`); `(None, None)`."""
    path = os.path.realpath(path) if is_local(path) else _normalized(path)
    child, folder = path, os.path.dirname(path)
    while folder and folder != child:
        name = os.path.basename(child)
        if name in RUN_FILES and is_run_folder(folder):
            return folder, os.path.relpath(path, folder)
        child, folder = folder, os.path.dirname(folder)
    return None, None


# What a pre-training run writes into its folder: a rerun with --overwrite
# sets aside exactly these, never a file of the user's beside them.
PRETRAINING_FILES = frozenset(
    {
        "config.yaml",
        "checkpoints",
        "logs",
        "saved_model",
        "backbone.keras",
        "pretrainer.keras",
        "electra_pretrainer.keras",
    }
)

# Where a rerun keeps the previous run until it has finished, and its
# journal (`PreviousRun`).
PREVIOUS_RUN = ".previous-run"
PREVIOUS_RUN_JOURNAL = ".previous-run.json"


# A fine-tuning run folder's record of what `predict` and `evaluate` wrote
# into it by default: a rerun sets aside exactly those, not the user's files.
OUTPUTS_RECORD = "outputs.json"


def record_outputs(model_dir, names):
    """Adds `names` (entries of `model_dir`) to its `OUTPUTS_RECORD`,
    creating it (empty) when `names` is empty."""
    path = os.path.join(model_dir, OUTPUTS_RECORD)
    recorded = _recorded_outputs(model_dir) or []
    write_json_atomically(sorted(set(recorded) | set(names)), path)


def _recorded_outputs(model_dir):
    """The record's names, or None when the folder has none (a run from
    before the record, or no run)."""
    path = os.path.join(model_dir, OUTPUTS_RECORD)
    if not is_file(path):
        return None
    try:
        with tf.io.gfile.GFile(path) as f:
            names = json.load(f)
    except (*FILE_ERRORS, ValueError):
        return []
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def _previous_outputs(model_dir, guess_unrecorded=True):
    """The names in `model_dir` a fine-tuning run wrote (the model, its
    config, vocabulary, scores and predictions, the record) and those
    `predict` and `evaluate` wrote there by default, as its
    `OUTPUTS_RECORD` lists them. A folder without the record (from before
    it) by name when `guess_unrecorded`: `predictions_*`,
    `glue_submission/`, `eval_*`. Not `export/`, whose numbered versions
    TF Serving keeps side by side."""
    names = listdir(model_dir) if tf.io.gfile.isdir(model_dir) else []
    recorded = _recorded_outputs(model_dir)
    if recorded is None and not guess_unrecorded:
        recorded = []
    if recorded is None:
        recorded = [
            n for n in names if n.startswith(("predictions_", "eval_")) or n == "glue_submission"
        ]
    return sorted(
        name
        for name in names
        if name in RUN_FILES - {"export", LOCK_FILE, FINETUNE_LOCK_FILE} or name in recorded
    )


class PreviousRun:
    """A rerun's predecessor in `model_dir` (fine-tuning's, or pre-training's
    under `--overwrite`), set aside.

    A rerun must leave no output of the old model beside the new one, and
    no new config or vocabulary beside the old model (`evaluate` would
    score the old model with them). `set_aside` moves the previous run's
    files (`_previous_outputs`) into `<model_dir>/.previous-run/`; `discard`
    deletes them once the new run has finished (model, scores, predictions,
    export), and `restore` puts them back if it fails or is stopped.

    A journal, `<model_dir>/.previous-run.json`, makes every state between
    two file operations one the next command recognises: it is written
    before the first move and names the files set aside, is marked
    finished before the discard begins, and is removed last. `recover`
    reads it: a rerun that did not finish (killed while setting aside,
    training, scoring or restoring) is undone, the previous run put back
    whole; a finished one's discard is completed. Restoring is idempotent:
    a name that is in the folder comes back over the rerun's file of that
    name; a journal name no longer in the folder is the previous run's
    file, not yet moved or already back.

    Args:
        model_dir: str. The run folder.
        own_files: collection of str, or None. The names that are the run's
            (a pre-training run's, `PRETRAINING_FILES`); None: a fine-tuning
            run's, with what `predict` and `evaluate` recorded
            (`_previous_outputs`). Nothing else in the folder is moved or
            removed.
    """

    def __init__(self, model_dir, own_files=None):
        self.model_dir = model_dir
        self.own_files = own_files
        self.folder = os.path.join(model_dir, PREVIOUS_RUN)
        self.journal = os.path.join(model_dir, PREVIOUS_RUN_JOURNAL)
        self.names = []

    def pending(self):
        """Whether a rerun set the previous run aside and has not finished
        (it runs, or was killed)."""
        journal = self._read_journal()
        return journal is not None and not journal["finished"]

    def recover(self):
        """Puts right what a killed rerun left behind (see the class);
        returns a line saying what it did, or None when there was nothing."""
        journal = self._read_journal()
        if journal is None:
            return None
        if journal["finished"]:
            self._clear()
            return f"A finished rerun's set-aside run in {self.folder} removed"
        self._put_back(journal["names"])
        return (
            f"A rerun of {self.model_dir} that did not finish was undone: the previous "
            f"run's {', '.join(journal['names'])} put back"
        )

    def set_aside(self):
        """Moves the previous run's files away (after `recover`); returns
        their names."""
        current = self._run_files(guess_unrecorded=True)
        if not current:
            return []
        self._write_journal(current, finished=False)
        makedirs(self.folder)
        for name in current:
            _move(os.path.join(self.model_dir, name), os.path.join(self.folder, name))
        self.names = current
        return current

    def path(self, path):
        """`path`, or where it is now if it was one of the set-aside files
        (`--init_checkpoint <model_dir>/model.keras` continues from it)."""
        for name in self.names:
            if _same_file(path, os.path.join(self.model_dir, name)):
                return os.path.join(self.folder, name)
        return path

    def restore(self):
        """Puts the previous run back, removing what the rerun wrote. A
        first run that failed before saving its model removes the config
        and vocabulary it wrote first: they would pass the folder off as a
        run (refused to another task, scored by `evaluate`)."""
        if not self.names:
            if not tf.io.gfile.exists(os.path.join(self.model_dir, "model.keras")):
                for name in ("config.yaml", "vocab.txt", OUTPUTS_RECORD):
                    remove(os.path.join(self.model_dir, name))
            return
        self._put_back(self.names)

    def discard(self):
        """Removes the set-aside run once the rerun has finished."""
        if self.names:
            self._write_journal(self.names, finished=True)
            self._clear()

    def _put_back(self, names):
        moved = set(listdir(self.folder)) if tf.io.gfile.isdir(self.folder) else set()
        rerun_files = [
            name
            for name in self._run_files(guess_unrecorded=False)
            if name in moved or name not in names
        ]
        # The record last: until then it names the rerun's predictions.
        for name in sorted(rerun_files, key=lambda name: name == OUTPUTS_RECORD):
            remove(os.path.join(self.model_dir, name))
        for name in sorted(moved):
            _move(os.path.join(self.folder, name), os.path.join(self.model_dir, name))
        self._clear()

    def _run_files(self, guess_unrecorded):
        if self.own_files is None:
            return _previous_outputs(self.model_dir, guess_unrecorded)
        names = listdir(self.model_dir) if tf.io.gfile.isdir(self.model_dir) else []
        return sorted(name for name in names if name in self.own_files)

    def _clear(self):
        """Removes the set-aside folder, then the journal (last)."""
        remove(self.folder)
        remove(self.journal)

    def _write_journal(self, names, finished):
        write_json_atomically({"names": sorted(names), "finished": finished}, self.journal)

    def _read_journal(self):
        """`{"names", "finished"}`, or None when there is no journal. A
        `.previous-run/` without one (left by a version before the journal)
        reads as an unfinished rerun of the names it holds; a journal that
        cannot be parsed is an error naming it."""
        if not is_file(self.journal):
            if tf.io.gfile.isdir(self.folder):
                return {"names": listdir(self.folder), "finished": False}
            return None
        try:
            with tf.io.gfile.GFile(self.journal) as f:
                journal = json.load(f)
            names, finished = journal["names"], journal["finished"]
            if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
                raise ValueError("names")
            if not isinstance(finished, bool):  # "false" would read as finished.
                raise ValueError("finished")
        except (ValueError, KeyError, TypeError):
            raise FinetuneError(
                f"{self.journal}: not a rerun journal keras_bert wrote; the previous run "
                f"is in {self.folder}: move its files back into {self.model_dir} "
                "and delete the journal"
            ) from None
        return {"names": names, "finished": finished}


def refuse_unfinished_rerun(model_dir, error=FinetuneError):
    """Raises `error` when a fine-tuning rerun of `model_dir` has not
    finished (`PreviousRun.pending`): the folder then holds no one run to
    score, predict with or export."""
    previous = PreviousRun(model_dir)
    if previous.pending():
        raise error(
            f"{model_dir}: a finetune rerun has not finished there (it is running, or was "
            f"stopped), and the previous run is set aside in {previous.folder}: the next "
            "finetune command on this folder puts it back first; run the same one again to "
            "finish the rerun"
        )


def _move(source, target):
    """Renames a file or folder; on an object store, file by file."""
    if is_local(source):
        os.rename(source, target)
    elif not tf.io.gfile.isdir(source):
        tf.io.gfile.rename(source, target, overwrite=True)
    else:
        for folder, _, names in tf.io.gfile.walk(source):
            relative = folder[len(source) :].strip("/")
            tf.io.gfile.makedirs(os.path.join(target, relative))
            for name in names:
                tf.io.gfile.rename(
                    os.path.join(folder, name), os.path.join(target, relative, name), overwrite=True
                )
        remove(source)
