"""What a fine-tuning run keeps while it trains, so that it resumes where
it stopped when the same command runs again, and can be watched.

While a run trains, `<model_dir>/unfinished/` holds `run.json` (what the
run is: its recipe, inputs and length, `resume_key`), `checkpoints/`
(`CheckpointManager`'s: weights, optimizer, dropout seeds and the step,
which is the data position) and `logs/` (TensorBoard scalars). That folder
takes no part in a rerun's transaction (`ReplacedRun`): a stopped or
killed run leaves its progress there while the run it was replacing is put
back, and the next run of the same recipe takes it up. A run of another
recipe replaces it, and says so. Once the run has finished, `logs/`
becomes `<model_dir>/logs` and the folder goes.

Written by hand on the runs' shared checkpoints (`runs.checkpoints`) rather than with Keras'
`BackupAndRestore`: that callback resumes at an epoch's start (an epoch of
a large transfer set is an hour), overwrites its files in place (a kill
while writing loses them) and keeps neither the dropout seeds nor where
the data was.
"""

import json
import logging
import os

import tensorflow as tf

from keras_bert.config_tree import diff
from keras_bert.file_io import (
    FILE_ERRORS,
    is_dir,
    is_file,
    move,
    remove,
    write_json_atomically,
)
from keras_bert.finetuning.run_kind import UNFINISHED
from keras_bert.runs.checkpoints import CheckpointManager

logger = logging.getLogger("keras_bert.finetune")

LOGS = "logs"
RUN_FILE = "run.json"

# Keys of the recipe a resumed run may change: how the run is watched,
# saved and exported, not what it learns.
RESUME_MAY_CHANGE = ("checkpoint", "export", "training.verbose", "training.log_every_steps")


def resume_key(tree, total_steps):
    """What must match for a run to take up another's checkpoints: `tree`
    (the recipe and the inputs, `FinetuneRun.resume_inputs`) less
    `RESUME_MAY_CHANGE`, and the run's length in updates."""
    kept = {
        section: (
            {k: v for k, v in values.items() if f"{section}.{k}" not in RESUME_MAY_CHANGE}
            if isinstance(values, dict)
            else values
        )
        for section, values in tree.items()
        if section not in RESUME_MAY_CHANGE
    }
    # Through JSON, as `run.json` holds it: tuples are lists there.
    return json.loads(json.dumps({**kept, "total_steps": total_steps}))


class UnfinishedRun:
    """`<model_dir>/unfinished/`: a fine-tuning run's progress until it has
    finished (see the module).

    Args:
        model_dir: str. The run folder.
        keep: int. Checkpoints kept (`checkpoint.keep`).
    """

    def __init__(self, model_dir, keep):
        self.model_dir = model_dir
        self.folder = os.path.join(model_dir, UNFINISHED)
        self.logs = os.path.join(self.folder, LOGS)
        self.keep = keep
        self.checkpoints = None  # `take_up`'s `CheckpointManager`.

    def take_up(self, key):
        """Starts or continues the run `key` (`resume_key`) describes, its
        checkpoints then in `checkpoints`: an unfinished run of another key
        is removed first, logged."""
        run_file = os.path.join(self.folder, RUN_FILE)
        recorded = _read_json(run_file) if is_file(run_file) else None
        if recorded != key and is_dir(self.folder):
            changed = [k for k, _, _ in diff(recorded, key)] if isinstance(recorded, dict) else []
            logger.warning(
                "%s: an unfinished run of another recipe%s was there; its checkpoints are "
                "removed and this run starts at step 0",
                self.folder,
                f" (it differs in {', '.join(changed)})" if changed else "",
            )
            remove(self.folder)
        # It removes what a kill left half-written.
        self.checkpoints = CheckpointManager(os.path.join(self.folder, "checkpoints"), self.keep)
        if recorded != key:
            write_json_atomically(key, run_file)

    def discard(self):
        """Removes the folder: its checkpoints are worth nothing."""
        remove(self.folder)

    def finish(self):
        """The run has finished: its logs become `<model_dir>/logs` (an
        earlier run's, set aside with it, are gone by now) and the folder
        is removed."""
        logs = os.path.join(self.model_dir, LOGS)
        if is_dir(self.logs):
            remove(logs)
            move(self.logs, logs)
        self.discard()


def _read_json(path):
    """`path`'s JSON (local or remote: `open` would miss a `gs://` run's and
    take it for another recipe's), or None when unreadable."""
    try:
        with tf.io.gfile.GFile(path) as f:
            return json.load(f)
    except (*FILE_ERRORS, ValueError):
        return None
