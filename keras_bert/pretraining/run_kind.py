"""A pre-training run's folder, as it declares it to `RunFolder`."""

from keras_bert.errors import RunFolderError
from keras_bert.pretraining.objective_registry import exported_file_names
from keras_bert.runs.run_folder import NO_CONFIG, RUN_RECORD, RunKind
from keras_bert.runs.run_lock import LOCK_FILE


class PretrainingRun(RunKind):
    """A pre-training run: its config (`phases`), checkpoints, logs,
    SavedModel and the models its objective exports. A rerun resumes it, or
    with `--overwrite` sets it aside; it never writes over a fine-tuning
    run or, with `--overwrite`, over files of its names that no run wrote."""

    name, command, lock_file = "pre-training", "pretrain", LOCK_FILE

    def files(self):
        """The models are what the registered objectives export, an
        objective registered at run time included."""
        return frozenset(
            {
                "config.yaml",
                "checkpoints",
                "logs",
                "saved_model",
                RUN_RECORD,
                *exported_file_names(),
            }
        )

    def holds(self, config):
        return isinstance(config, dict) and "phases" in config and "task" not in config

    def refuse_another_run(self, folder, task, overwrite):
        """Refuses a fine-tuning run's folder (its config.yaml names a
        task), and with `overwrite` any config.yaml that is not a
        pre-training run's (a project's own: the rerun would set it aside
        as the run's) or, without one, files of the run's names."""
        model_dir, previous = folder.model_dir, folder.config()
        if isinstance(previous, dict) and "task" in previous and "phases" not in previous:
            raise RunFolderError(
                f"model_dir {model_dir!r} holds a fine-tuning run (task "
                f"{previous['task']!r}); pre-train into another folder."
            )
        if not overwrite:
            return  # An unreadable config.yaml is `check_rerun_config`'s to report.
        if previous is not NO_CONFIG and not self.holds(previous):
            raise RunFolderError(
                f"model_dir {model_dir!r}: its config.yaml is not a keras_bert pre-training "
                "run's, and --overwrite replaces only such a run; pre-train into another "
                "folder."
            )
        clashing = folder.run_files()
        if previous is NO_CONFIG and clashing:
            # No run to replace: they are the user's, never set aside.
            raise RunFolderError(
                f"model_dir {model_dir!r}: holds no keras_bert pre-training run but its own "
                f"{', '.join(clashing)}, which --overwrite would replace; pre-train into "
                "another folder."
            )


PRETRAINING_RUN = PretrainingRun()
