"""`RunFolder`: a run's `model_dir` as the kind of run that writes it
declares it (`RunKind`): the files the run wrote there, its lock, its
record, and the run a rerun sets aside (`PreviousRun`).

Each kind of run (pre-training, fine-tuning, distillation) makes its
`RunKind` in its own package; the folder knows none of them. What another
command needs to know of a folder it did not write (the output guard: is
this a run's own file?) it reads from the folder: the run's record of its
own files (`RUN_RECORD`, `own_files_of`)."""

import json
import os

import tensorflow as tf
import yaml

from keras_bert.config_tree import read_yaml
from keras_bert.errors import ConfigError, RunFolderError
from keras_bert.file_io import FILE_ERRORS, is_file, listdir, remove, write_json_atomically
from keras_bert.runs.previous_run import PREVIOUS_RUN, PreviousRun
from keras_bert.runs.run_lock import RunLock

# A run's record of its own files, written when the run starts: `{"kind",
# "files": what the run writes and a rerun sets aside, "kept": the run's
# names a rerun keeps, "outputs": what `predict` and `evaluate` wrote into
# the folder by default, set aside with the run but theirs to replace}`. A
# fine-tuning run's record before its kind was the list of outputs alone;
# a folder without a record is read by `_RUN_FILES_BEFORE_THE_RECORD`.
RUN_RECORD = "outputs.json"
# Every name a run of any kind wrote before runs recorded their files
# (keras_bert up to stop 89): the output guard protects them in a folder
# without a record. Frozen: a new file of a run is in its record.
_RUN_FILES_BEFORE_THE_RECORD = frozenset(
    {
        *("config.yaml", "checkpoints", "logs", "saved_model", "pretrain.lock"),
        *("backbone.keras", "pretrainer.keras", "electra_pretrainer.keras"),
        *("model.keras", "vocab.txt", "eval_results.json", "predictions.jsonl"),
        *("predictions.json", "predictions.txt", "null_odds.json", "export"),
        *("unfinished", RUN_RECORD, "finetune.lock", "transfer_set"),
    }
)
# What `read_run_config` returns for a folder without a config.yaml.
NO_CONFIG = object()


class RunKind:
    """What a kind of run declares to the folders it writes; its package
    makes one, a subclass saying what its runs hold, refuse and leave.

    Attributes:
        name: str. The kind, in messages and in the record ("pre-training").
        command: str. The command that runs it, in messages ("pretrain").
        lock_file: str. The lock a run holds while it writes the folder.
        kept: frozenset of str. The run's own names a rerun keeps (progress
            a stopped run resumes from, versions served side by side).
    """

    name = command = lock_file = ""
    kept = frozenset()

    def files(self):
        """The names a run writes into its folder and a rerun sets aside
        (`RUN_RECORD` among them)."""
        raise NotImplementedError

    def holds(self, config):
        """Whether `config` (a folder's config.yaml as `RunFolder.config`
        reads it) is a run of this kind's."""
        raise NotImplementedError

    def refuse_another_run(self, folder, task, overwrite):
        """Raises `RunFolderError` when `folder` holds what a run of this
        kind may not write over (`RunFolder.refuse_another_run`)."""
        raise NotImplementedError

    def own_files(self, folder, guess_unrecorded):
        """The names that are the run's in `folder` (besides `kept`):
        `files()` and what its record adds."""
        return self.files() | set(folder.recorded_files() or ())

    def failed_first_run_files(self, folder):
        """What a first run that failed before it could be resumed or used
        leaves to be removed (`RunFolder.remove_failed_first_run`)."""
        return sorted(self.files())

    def take_over(self, folder):
        """Removes what a run of another kind left that this run may take
        over before it writes; returns the names, for the log."""
        return []


class RunFolder:
    """A run's `model_dir`, as the run of `kind` that writes it sees it.

    Args:
        model_dir: str. The folder, local or remote; it may not exist yet.
        kind: `RunKind`.

    Attributes:
        previous: `PreviousRun`, the run a rerun sets aside.
    """

    def __init__(self, model_dir, kind):
        self.model_dir = model_dir
        self.kind = kind
        self.previous = PreviousRun(model_dir, self.run_files)

    def lock(self):
        """The `RunLock` a run holds while it writes the folder."""
        return RunLock(self.model_dir, self.kind.lock_file, self.kind.name, error=RunFolderError)

    def names(self):
        """The folder's entries (none when it does not exist)."""
        return listdir(self.model_dir) if tf.io.gfile.isdir(self.model_dir) else []

    def run_files(self, guess_unrecorded=True):
        """The names in the folder that are the run's and a rerun sets
        aside (`RunKind.own_files` less `kept`), in the order a rerun
        removes them (`RUN_RECORD` last: until then it names the rerun's
        predictions)."""
        own = self.kind.own_files(self, guess_unrecorded) - self.kind.kept
        return sorted((n for n in self.names() if n in own), key=lambda n: (n == RUN_RECORD, n))

    def holds_run(self):
        """Whether the folder holds a run of its kind: its `config.yaml` (the
        set-aside run's while a rerun is pending) is a keras_bert config of
        that kind, not a project's file of that name."""
        return self.kind.holds(self.config())

    def remove_failed_first_run(self):
        """What a first run that failed before it could be resumed or used
        wrote: its config would pass the folder off as a run (refused to
        another task, scored by `evaluate`, compared on a rerun)."""
        for name in self.kind.failed_first_run_files(self):
            remove(os.path.join(self.model_dir, name))

    def record_run(self):
        """Writes the run's record (`RUN_RECORD`) as the run starts: its
        kind, the files it writes (with what a resumed run's record already
        lists), those a rerun keeps, and the outputs recorded so far."""
        record = _read_record(self.model_dir, pending=False) or {}
        files = {*self.kind.files(), *record.get("files", ())}
        self._write_record(files, record.get("outputs", ()))

    def record_outputs(self, names):
        """Adds `names` (entries of the folder that `predict` or `evaluate`
        wrote by default) to the run's record."""
        record = _read_record(self.model_dir, pending=False) or {}
        files = record.get("files") or self.kind.files()  # None: a record from before its kind.
        self._write_record(files, {*record.get("outputs", ()), *names})

    def recorded_files(self):
        """What the record lists as the run's, set aside by a rerun (its
        files and outputs), or None when the folder has no record (a run
        from before it, or no run)."""
        record = _read_record(self.model_dir, pending=False)
        return None if record is None else [*record.get("files", ()), *record["outputs"]]

    def _write_record(self, files, outputs):
        record = {
            "kind": self.kind.name,
            "files": sorted(files),
            "kept": sorted(self.kind.kept | {self.kind.lock_file}),
            "outputs": sorted(outputs),
        }
        write_json_atomically(record, os.path.join(self.model_dir, RUN_RECORD))

    def config(self):
        """The run's config.yaml as the recipes' reader reads it
        (`config_tree.read_yaml`; None when unreadable), or `NO_CONFIG`
        (`read_run_config`)."""
        return read_run_config(self.model_dir)

    def refuse_another_run(self, task=None, overwrite=False):
        """Raises `RunFolderError` if the folder holds what this run may not
        write over, before anything is written into it: a rerun of the same
        job may continue there (pre-training resumes, fine-tuning replaces
        its outputs), no other run writes over it; `RunKind.refuse_another_run`
        says what the kind refuses. `task`: a fine-tuning run's."""
        self.kind.refuse_another_run(self, task, overwrite)

    def take_over(self):
        """Before the run writes: removes what a run of another kind left
        that this one may take over (`RunKind.take_over`); returns the names."""
        return self.kind.take_over(self)

    def refuse_unfinished_rerun(self, error=RunFolderError):
        """Raises `error` when a rerun of the folder has not finished
        (`PreviousRun.pending`): it then holds no one run to score, predict
        with or export."""
        if self.previous.pending():
            raise error(
                f"{self.model_dir}: a {self.kind.command} rerun has not finished there (it is "
                f"running, or was stopped), and the previous run is set aside in "
                f"{self.previous.folder}: the next {self.kind.command} command on this folder "
                "puts it back first; run the same one again to finish the rerun"
            )


def read_run_config(model_dir, pending=None):
    """`<model_dir>/config.yaml` (the set-aside run's while a rerun has not
    finished, `PreviousRun.pending`; `pending`: that, when the caller knows
    it) as the recipes' reader reads it (`config_tree.read_yaml`); None when
    unreadable, `NO_CONFIG` when there is none."""
    if pending is None:
        pending = PreviousRun(model_dir, None).pending()
    path = _current_or_set_aside(model_dir, "config.yaml", pending)
    if not is_file(path):
        return NO_CONFIG
    try:
        return read_yaml(path)
    except (*FILE_ERRORS, ConfigError, yaml.YAMLError):  # ConfigError: not UTF-8.
        return None


def own_files_of(model_dir):
    """The names in `model_dir` that its keras_bert run wrote and no other
    command writes over (the record's files and kept names, and the record;
    not the outputs, which `predict` and `evaluate` replace); for a folder
    from before the record, every name a run wrote then. None when the
    folder holds no run (no record, and no config.yaml of a pre-training
    run, `phases`, or a fine-tuning one, `task`)."""
    pending = PreviousRun(model_dir, None).pending()
    record = _read_record(model_dir, pending)
    if record is not None and "files" in record:
        return {*record["files"], *record["kept"], RUN_RECORD}
    config = read_run_config(model_dir, pending)
    if not (isinstance(config, dict) and ("phases" in config or "task" in config)):
        return None
    return set(_RUN_FILES_BEFORE_THE_RECORD)


def is_run_folder(model_dir):
    """Whether `model_dir` holds a keras_bert run (`own_files_of`), not any
    project's folder."""
    return own_files_of(model_dir) is not None


def _current_or_set_aside(model_dir, name, pending):
    """`<model_dir>/<name>`, or the set-aside run's while a rerun has not
    finished (`pending`)."""
    set_aside = os.path.join(model_dir, PREVIOUS_RUN, name)
    if pending and is_file(set_aside):
        return set_aside
    return os.path.join(model_dir, name)


def _read_record(model_dir, pending):
    """The record's lists of names, `{"files", "kept", "outputs"}` (from a
    record before its kind, a list of outputs: `{"outputs"}`), or None when
    there is none. An unreadable record lists no outputs. `pending`: read
    the set-aside run's while a rerun has not finished."""
    path = _current_or_set_aside(model_dir, RUN_RECORD, pending)
    if not is_file(path):
        return None
    try:
        with tf.io.gfile.GFile(path) as f:
            record = json.load(f)
    except (*FILE_ERRORS, ValueError):
        return {"outputs": []}
    if isinstance(record, dict):
        return {key: _names(record.get(key)) for key in ("files", "kept", "outputs")}
    return {"outputs": _names(record)}


def _names(names):
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
