"""A fine-tuning run's folder, as it declares it to `RunFolder`, and the one
writer of the files that make it a run (`finetune`, `distill`, and `convert`
of a transformers model into a run)."""

import os

import tensorflow as tf

from keras_bert.errors import RunFolderError
from keras_bert.file_io import is_file, listdir, save_keras_atomically, write_atomically
from keras_bert.pretraining.run_kind import PRETRAINING_RUN
from keras_bert.runs.run_folder import NO_CONFIG, RUN_RECORD, RunFolder, RunKind
from keras_bert.runs.run_lock import FINETUNE_LOCK_FILE
from keras_bert.runs.run_record import write_run_config

# The files that make a folder a fine-tuning run, as `predict` reads it.
CONFIG, MODEL, VOCABULARY = "config.yaml", "model.keras", "vocab.txt"

# What a fine-tuning run scores and predicts on its dev set.
EVAL_FILES = (
    "eval_results.json",
    "predictions.jsonl",
    "predictions.json",
    "predictions.txt",
    "null_odds.json",
)
# A fine-tuning run's progress while it trains (`finetuning.resume`): the
# run's, but kept when a rerun starts or fails, so that a stopped run
# resumes; the run takes it up or replaces it by its recipe.
UNFINISHED = "unfinished"
# The run's TF Serving versions, kept side by side across reruns.
EXPORT = "export"
# All a first pre-training run leaves when it is killed before its first
# checkpoint (its record, since it records its files): no weights, so nothing a user could want back.
_KILLED_FIRST_PRETRAINING = frozenset({"config.yaml", "checkpoints", "logs", RUN_RECORD})


class FinetuningRun(RunKind):
    """A fine-tuning run: its config (`task`), model, vocabulary, scores,
    predictions and logs, and what `predict` and `evaluate` wrote there by
    default (its record). Every rerun sets them aside; another task's run is
    refused unless `--overwrite`, a pre-training run always (what a first
    one killed before its first checkpoint left is taken over).

    Args:
        kept: names of the run's that a rerun keeps besides its progress
            (`UNFINISHED`) and `EXPORT` (a distillation's transfer set).
    """

    name, command, lock_file = "fine-tuning", "finetune", FINETUNE_LOCK_FILE

    def __init__(self, kept=()):
        self.kept = frozenset({EXPORT, UNFINISHED, FINETUNE_LOCK_FILE, *kept})

    def files(self):
        return frozenset({CONFIG, MODEL, VOCABULARY, *EVAL_FILES, "logs", RUN_RECORD})

    def holds(self, config):
        return isinstance(config, dict) and "task" in config and "phases" not in config

    def own_files(self, folder, guess_unrecorded):
        """None in a folder without a fine-tuning run (a project's files,
        whatever their names). A folder without the record (from before
        it): what `predict` and `evaluate` wrote there by default, by name
        when `guess_unrecorded` (`predictions_*`, `glue_submission/`,
        `eval_*`)."""
        if not folder.holds_run():
            return set()
        recorded = folder.recorded_files()
        if recorded is None and guess_unrecorded:
            recorded = [
                n
                for n in folder.names()
                if n.startswith(("predictions_", "eval_")) or n == "glue_submission"
            ]
        return self.files() | set(recorded or ())

    def failed_first_run_files(self, folder):
        """Before its model: its config and vocabulary (and record)."""
        if is_file(os.path.join(folder.model_dir, MODEL)):
            return []
        return [CONFIG, VOCABULARY, RUN_RECORD]

    def refuse_another_run(self, folder, task, overwrite):
        """Refuses a pre-training run's folder (its lock, checkpoints or
        config; not what a first one killed before its first checkpoint
        left, which `take_over` removes), a config.yaml that is no
        fine-tuning run's, a folder without a run that holds files of the
        names the run writes (the user's), and another `task`'s run, unless
        `overwrite` (that run is then replaced as a rerun's predecessor
        is)."""
        model_dir, previous = folder.model_dir, folder.config()
        if self.killed_first_pretraining(folder):
            return  # Nothing to resume there: `take_over` removes what it left.
        checkpoints = os.path.join(model_dir, "checkpoints")
        if (
            tf.io.gfile.exists(os.path.join(model_dir, PRETRAINING_RUN.lock_file))
            or (tf.io.gfile.isdir(checkpoints) and listdir(checkpoints))
            or PRETRAINING_RUN.holds(previous)
        ):
            raise RunFolderError(
                f"--model_dir {model_dir}: holds a pre-training run; fine-tune "
                "into another folder (--init_checkpoint takes its backbone.keras)"
            )
        if previous is not NO_CONFIG and not self.holds(previous):
            raise RunFolderError(
                f"--model_dir {model_dir}: its config.yaml is not a fine-tuning "
                "run's; pick another folder"
            )
        if previous is NO_CONFIG:
            # No run: a file of a name the run writes is the user's (a first
            # run that failed leaves its progress alone, `UNFINISHED`).
            clashing = sorted(set(folder.names()) & (self.files() | {EXPORT}))
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
            and (is_file(os.path.join(model_dir, MODEL)) or folder.previous.pending())
        ):
            raise RunFolderError(
                f"--model_dir {model_dir}: holds a fine-tuning run of task "
                f"{previous.get('task')!r}; pick another folder for {task!r}, or pass "
                "--overwrite to replace that run"
            )

    # --- Writing the run ---

    def write_config(self, folder, config, init_checkpoint, data_dir, under=None):
        """`config.yaml` (the resolved `FinetuneConfig`, the task, where the
        checkpoint and the data came from, `under`: `run_record.trained_under`)
        and the run's record, into the `RunFolder` `folder`."""
        tree = {**config.to_dict(), "init_checkpoint": init_checkpoint, "data_dir": data_dir}
        write_run_config(os.path.join(folder.model_dir, CONFIG), tree, under)
        folder.record_run()

    def write_vocabulary(self, folder, vocabulary):
        """`vocab.txt`: the tokens of list `vocabulary`, one a line, or the
        bytes of a vocabulary file as they are (a `--vocab` copied)."""
        if isinstance(vocabulary, bytes):
            content = vocabulary
        else:
            content = "".join(token + "\n" for token in vocabulary)
        write_atomically(os.path.join(folder.model_dir, VOCABULARY), lambda f: f.write(content))

    def save_model(self, folder, model):
        """`model.keras`, whole or not at all."""
        save_keras_atomically(model, os.path.join(folder.model_dir, MODEL))

    def killed_first_pretraining(self, folder):
        """Whether the folder holds only what a first pre-training run left
        when it was killed before its first checkpoint (its config.yaml, an
        empty `checkpoints/`, logs): no run to resume, nothing of value."""
        if folder.previous.pending():
            return False
        pretraining = RunFolder(folder.model_dir, PRETRAINING_RUN)
        checkpoints = os.path.join(folder.model_dir, "checkpoints")
        return (
            pretraining.holds_run()
            and set(pretraining.run_files()) <= _KILLED_FIRST_PRETRAINING
            and not tf.io.gfile.exists(os.path.join(folder.model_dir, PRETRAINING_RUN.lock_file))
            and not (tf.io.gfile.isdir(checkpoints) and listdir(checkpoints))
        )

    def take_over(self, folder):
        """Removes what a killed first pre-training run left
        (`killed_first_pretraining`)."""
        if not self.killed_first_pretraining(folder):
            return []
        pretraining = RunFolder(folder.model_dir, PRETRAINING_RUN)
        names = pretraining.run_files()
        pretraining.remove_failed_first_run()
        return names


FINETUNING_RUN = FinetuningRun()
