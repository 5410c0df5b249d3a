"""`RunFolder`: what a run's `model_dir` is (a pre-training or a fine-tuning
run, or neither), the files the run wrote there, its lock, and the run a
rerun sets aside (`PreviousRun`)."""

import json
import os

import tensorflow as tf
import yaml

from keras_bert.config_tree import read_yaml
from keras_bert.errors import ConfigError, RunFolderError
from keras_bert.file_io import (
    FILE_ERRORS,
    is_file,
    listdir,
    remove,
    write_json_atomically,
)
from keras_bert.pretraining.objective_registry import exported_file_names
from keras_bert.training.previous_run import PREVIOUS_RUN, PreviousRun
from keras_bert.training.run_lock import FINETUNE_LOCK_FILE, LOCK_FILE, RunLock

PRETRAINING = "pretraining"
FINETUNING = "finetuning"

# What a fine-tuning run scores and predicts on its dev set.
EVAL_FILES = (
    "eval_results.json",
    "predictions.jsonl",
    "predictions.json",
    "predictions.txt",
    "null_odds.json",
)
# A fine-tuning run folder's record of what `predict` and `evaluate` wrote
# into it by default: a rerun sets aside exactly those, not the user's files.
OUTPUTS_RECORD = "outputs.json"
# A fine-tuning run's progress while it trains (`finetuning.resume`): the
# run's, but kept when a rerun starts or fails, so that a stopped run
# resumes; the run takes it up or replaces it by its recipe.
UNFINISHED = "unfinished"
# What a fine-tuning run writes into its folder and reads back (besides
# what `OUTPUTS_RECORD` lists).
FINETUNING_FILES = frozenset(
    {
        "config.yaml",
        "model.keras",
        "vocab.txt",
        *EVAL_FILES,
        "export",
        "logs",
        UNFINISHED,
        OUTPUTS_RECORD,
    }
)
# A distilled student's labelled transfer set (`keras_bert.distillation`):
# the run's, but kept when a rerun starts or fails, so that a labelling
# that was stopped resumes and a rerun of the same set labels nothing; the
# distillation reuses or replaces it by its manifest.
TRANSFER_SET = "transfer_set"
# All a first pre-training run leaves when it is killed before its first
# checkpoint: no weights, so nothing a user could want back.
_KILLED_FIRST_PRETRAINING = frozenset({"config.yaml", "checkpoints", "logs"})
_ABSENT = object()


def pretraining_files():
    """What a pre-training run writes into its folder: a rerun with
    --overwrite sets aside exactly these, never a file of the user's beside
    them. The models are what the registered objectives export, an
    objective registered at run time included."""
    return frozenset({"config.yaml", "checkpoints", "logs", "saved_model", *exported_file_names()})


def files_of_any_run():
    """Every run's own files: no other command writes over them."""
    return pretraining_files() | FINETUNING_FILES | {LOCK_FILE, FINETUNE_LOCK_FILE, TRANSFER_SET}


class RunFolder:
    """A run's `model_dir`, as the run of `kind` that writes it sees it.

    Args:
        model_dir: str. The folder, local or remote; it may not exist yet.
        kind: `PRETRAINING` or `FINETUNING`.

    Attributes:
        previous: `PreviousRun`, the run a rerun sets aside (fine-tuning's
            on every rerun, pre-training's under `--overwrite`).
    """

    def __init__(self, model_dir, kind):
        if kind not in (PRETRAINING, FINETUNING):
            raise ValueError(f"kind must be {PRETRAINING!r} or {FINETUNING!r}. Received: {kind!r}")
        self.model_dir = model_dir
        self.kind = kind
        self.previous = PreviousRun(model_dir, self.run_files)

    def lock(self):
        """The `RunLock` a run holds while it writes the folder."""
        if self.kind == PRETRAINING:
            return RunLock(self.model_dir, error=RunFolderError)
        return RunLock(self.model_dir, FINETUNE_LOCK_FILE, "fine-tuning", error=RunFolderError)

    def run_files(self, guess_unrecorded=True):
        """The names in the folder that are the run's, in the order a rerun
        removes them (`OUTPUTS_RECORD` last: until then it names the
        rerun's predictions).

        Pre-training: `pretraining_files()`. Fine-tuning: its model, config,
        vocabulary, scores and predictions, and what `predict` and
        `evaluate` wrote there by default, as `OUTPUTS_RECORD` lists it; a
        folder without the record (from before it) by name when
        `guess_unrecorded` (`predictions_*`, `glue_submission/`, `eval_*`).
        Not `export/`, whose numbered versions TF Serving keeps side by
        side, nor `TRANSFER_SET` or `UNFINISHED`."""
        names = listdir(self.model_dir) if tf.io.gfile.isdir(self.model_dir) else []
        if self.kind == PRETRAINING:
            own = pretraining_files()
            return sorted(name for name in names if name in own)
        if not self.holds_run():  # A project's own files, whatever their names.
            return []
        recorded = self._recorded_outputs()
        if recorded is None and guess_unrecorded:
            recorded = [
                n
                for n in names
                if n.startswith(("predictions_", "eval_")) or n == "glue_submission"
            ]
        own = files_of_any_run() - {
            "export",
            LOCK_FILE,
            FINETUNE_LOCK_FILE,
            TRANSFER_SET,
            UNFINISHED,
        }
        own |= set(recorded or [])
        return sorted((n for n in names if n in own), key=lambda n: (n == OUTPUTS_RECORD, n))

    def holds_run(self):
        """Whether the folder holds a run of its kind: its `config.yaml` (the
        set-aside run's while a rerun is pending) is a keras_bert config of
        that kind, not a project's file of that name."""
        config = self.config()
        if self.kind == PRETRAINING:
            return _is_pretraining_config(config)
        return isinstance(config, dict) and "task" in config and "phases" not in config

    def remove_failed_first_run(self):
        """What a first run that failed before it could be resumed or used
        wrote (pre-training: before its first checkpoint; fine-tuning:
        before its model): its config would pass the folder off as a run
        (refused to another task, scored by `evaluate`, compared on a
        rerun)."""
        if self.kind == FINETUNING:
            if is_file(os.path.join(self.model_dir, "model.keras")):
                return
            names = ("config.yaml", "vocab.txt", OUTPUTS_RECORD)
        else:
            names = sorted(pretraining_files())
        for name in names:
            remove(os.path.join(self.model_dir, name))

    def record_outputs(self, names):
        """Adds `names` (entries of the folder) to its `OUTPUTS_RECORD`,
        creating it (empty) when `names` is empty."""
        path = os.path.join(self.model_dir, OUTPUTS_RECORD)
        recorded = self._recorded_outputs() or []
        write_json_atomically(sorted(set(recorded) | set(names)), path)

    def _recorded_outputs(self):
        """The record's names, or None when the folder has none (a run from
        before the record, or no run)."""
        path = os.path.join(self.model_dir, OUTPUTS_RECORD)
        if not is_file(path):
            return None
        try:
            with tf.io.gfile.GFile(path) as f:
                names = json.load(f)
        except (*FILE_ERRORS, ValueError):
            return []
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []

    def config(self):
        """The run's config.yaml as the recipes' reader reads it
        (`config_tree.read_yaml`; None when unreadable), or
        `_ABSENT`: `<model_dir>/config.yaml`, or the set-aside run's while
        a rerun has not finished (`PreviousRun.pending`)."""
        path = os.path.join(self.model_dir, "config.yaml")
        set_aside = os.path.join(self.model_dir, PREVIOUS_RUN, "config.yaml")
        if self.previous.pending() and is_file(set_aside):
            path = set_aside
        if not is_file(path):
            return _ABSENT
        try:
            return read_yaml(path)
        except (*FILE_ERRORS, ConfigError, yaml.YAMLError):  # ConfigError: not UTF-8.
            return None

    def refuse_another_run(self, task=None, overwrite=False):
        """Raises if the folder holds a run of another kind, before anything
        is written into it: a rerun of the same job may continue there
        (pre-training resumes, fine-tuning replaces its outputs), no other
        run writes over it (`RunFolderError`).

        Pre-training is refused a fine-tuning run's folder (its config.yaml
        names a task), and with `overwrite` any
        config.yaml that is not a pre-training run's (a project's own: the
        rerun would set it aside as the run's). Fine-tuning `task` is
        refused a pre-training run's folder (its
        lock, checkpoints or config; not what a first one killed before
        its first checkpoint left, which `take_over` removes), a config.yaml
        that is no fine-tuning run's, a folder without a run that holds
        files of the names the run writes (the user's), and another task's
        run, unless `overwrite` (that run is then replaced as a rerun's
        predecessor is).
        """
        model_dir, previous = self.model_dir, self.config()
        if self.kind == PRETRAINING:
            if isinstance(previous, dict) and "task" in previous and "phases" not in previous:
                raise RunFolderError(
                    f"model_dir {model_dir!r} holds a fine-tuning run (task "
                    f"{previous['task']!r}); pre-train into another folder."
                )
            if overwrite and previous is not _ABSENT and not _is_pretraining_config(previous):
                raise RunFolderError(
                    f"model_dir {model_dir!r}: its config.yaml is not a keras_bert pre-training "
                    "run's, and --overwrite replaces only such a run; pre-train into another "
                    "folder."
                )
            clashing = self.run_files()
            if overwrite and previous is _ABSENT and clashing:
                # No run to replace: they are the user's, never set aside.
                raise RunFolderError(
                    f"model_dir {model_dir!r}: holds no keras_bert pre-training run but its own "
                    f"{', '.join(clashing)}, which --overwrite would replace; pre-train into "
                    "another folder."
                )
            return  # An unreadable config.yaml is `check_rerun_config`'s to report.
        checkpoints = os.path.join(model_dir, "checkpoints")
        if self.killed_first_pretraining():
            return  # Nothing to resume there: `take_over` removes what it left.
        if (
            tf.io.gfile.exists(os.path.join(model_dir, LOCK_FILE))
            or (tf.io.gfile.isdir(checkpoints) and listdir(checkpoints))
            or _is_pretraining_config(previous)
        ):
            raise RunFolderError(
                f"--model_dir {model_dir}: holds a pre-training run; fine-tune "
                "into another folder (--init_checkpoint takes its backbone.keras)"
            )
        if previous is not _ABSENT and not self.holds_run():
            raise RunFolderError(
                f"--model_dir {model_dir}: its config.yaml is not a fine-tuning "
                "run's; pick another folder"
            )
        if previous is _ABSENT:
            # No run: a file of a name the run writes is the user's.
            present = set(listdir(model_dir)) if tf.io.gfile.isdir(model_dir) else set()
            # A first run that failed leaves its progress alone (`UNFINISHED`).
            clashing = sorted(present & (FINETUNING_FILES - {UNFINISHED}))
            if clashing:
                raise RunFolderError(
                    f"--model_dir {model_dir}: holds no keras_bert run but its own "
                    f"{', '.join(clashing)}, which the run would write over; pick another "
                    "folder or move them"
                )
            return
        # A first run killed before it saved its model (`kill -9`) left its
        # config and vocabulary, no run: another task may take the folder.
        if (
            previous.get("task") != task
            and not overwrite
            and (is_file(os.path.join(model_dir, "model.keras")) or self.previous.pending())
        ):
            raise RunFolderError(
                f"--model_dir {model_dir}: holds a fine-tuning run of task "
                f"{previous.get('task')!r}; pick another folder for {task!r}, or pass "
                "--overwrite to replace that run"
            )

    def killed_first_pretraining(self):
        """Whether the folder holds only what a first pre-training run left
        when it was killed before its first checkpoint (its config.yaml, an
        empty `checkpoints/`, logs): no run to resume, nothing of value."""
        if self.kind != FINETUNING or self.previous.pending():
            return False
        pretraining = RunFolder(self.model_dir, PRETRAINING)
        checkpoints = os.path.join(self.model_dir, "checkpoints")
        return (
            pretraining.holds_run()
            and set(pretraining.run_files()) <= _KILLED_FIRST_PRETRAINING
            and not tf.io.gfile.exists(os.path.join(self.model_dir, LOCK_FILE))
            and not (tf.io.gfile.isdir(checkpoints) and listdir(checkpoints))
        )

    def take_over(self):
        """Before a fine-tuning run writes: removes what a killed first
        pre-training run left (`killed_first_pretraining`), logged."""
        if not self.killed_first_pretraining():
            return []
        pretraining = RunFolder(self.model_dir, PRETRAINING)
        names = pretraining.run_files()
        pretraining.remove_failed_first_run()
        return names

    def refuse_unfinished_rerun(self, error=RunFolderError):
        """Raises `error` when a fine-tuning rerun of the folder has not
        finished (`PreviousRun.pending`): it then holds no one run to
        score, predict with or export."""
        if self.previous.pending():
            raise error(
                f"{self.model_dir}: a finetune rerun has not finished there (it is running, or "
                f"was stopped), and the previous run is set aside in {self.previous.folder}: the "
                "next finetune command on this folder puts it back first; run the same one "
                "again to finish the rerun"
            )


def is_run_folder(folder):
    """Whether `folder` holds a keras_bert run: its `config.yaml` is a
    pre-training config (`phases`) or a fine-tuning one (`task`), not any
    project's file of that name."""
    config = RunFolder(folder, FINETUNING).config()
    return isinstance(config, dict) and ("phases" in config or "task" in config)


def _is_pretraining_config(config):
    return isinstance(config, dict) and "phases" in config and "task" not in config
