"""`PreviousRun`: the run a rerun replaces, set aside until the rerun has
finished, with a journal that makes every state in between recoverable."""

import json
import os

import tensorflow as tf

from keras_bert.errors import RunFolderError
from keras_bert.file_io import (
    is_file,
    listdir,
    makedirs,
    move,
    remove,
    same_file,
    write_json_atomically,
)

# Where a rerun keeps the previous run until it has finished, and its
# journal.
PREVIOUS_RUN = ".previous-run"
PREVIOUS_RUN_JOURNAL = ".previous-run.json"


class PreviousRun:
    """A rerun's predecessor in `model_dir` (fine-tuning's, or pre-training's
    under `--overwrite`), set aside; `RunFolder.previous` makes it.

    A rerun must leave no output of the old model beside the new one, and
    no new config or vocabulary beside the old model (`evaluate` would
    score the old model with them). `set_aside` moves the previous run's
    files (`run_files`) into `<model_dir>/.previous-run/`; `discard`
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
        run_files: callable `guess_unrecorded -> list of str`: the names in
            `model_dir` that are the run's, in the order they are removed
            (`RunFolder.run_files`). Nothing else in the folder is moved or
            removed.
    """

    def __init__(self, model_dir, run_files):
        self.model_dir = model_dir
        self.run_files = run_files
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
        self._check_journal(journal["names"], journal["finished"])
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
        current = self.run_files(guess_unrecorded=True)
        if not current:
            return []
        self._write_journal(current, finished=False)
        makedirs(self.folder)
        for name in current:
            move(os.path.join(self.model_dir, name), os.path.join(self.folder, name))
        self.names = current
        return current

    def path(self, path):
        """`path`, or where it is now if it was one of the set-aside files
        (`--init_checkpoint <model_dir>/model.keras` continues from it)."""
        for name in self.names:
            if same_file(path, os.path.join(self.model_dir, name)):
                return os.path.join(self.folder, name)
        return path

    def restore(self):
        """Puts the previous run back, removing what the rerun wrote."""
        if self.names:
            self._put_back(self.names)

    def discard(self):
        """Removes the set-aside run once the rerun has finished."""
        if self.names:
            self._write_journal(self.names, finished=True)
            self._clear()

    def _check_journal(self, names, finished):
        """Refuses, before anything is moved or removed, a journal that does
        not describe the folder: no names (`set_aside` writes none then), a
        set-aside folder holding a name it does not list, or, for a rerun
        that did not finish, a name neither set aside nor in `model_dir`.
        Acting on it would delete the run as "the rerun's files"."""
        moved = set(listdir(self.folder)) if tf.io.gfile.isdir(self.folder) else set()
        present = set(listdir(self.model_dir))
        problem = None
        if not names:
            problem = "names no set-aside file"
        elif moved - set(names):
            problem = f"does not name {', '.join(sorted(moved - set(names)))} set aside there"
        elif not finished and set(names) - moved - present:
            problem = f"names {', '.join(sorted(set(names) - moved - present))}, found nowhere"
        if problem:
            raise RunFolderError(
                f"{self.journal}: {problem}; it does not describe {self.model_dir}, so nothing "
                f"was moved or removed: check the run's files (and {self.folder}, if any) and "
                "delete the journal"
            )

    def _put_back(self, names):
        if not tf.io.gfile.isdir(self.folder):
            remove(self.journal)  # Killed before the first move: nothing to undo.
            return
        moved = set(listdir(self.folder))
        for name in self.run_files(guess_unrecorded=False):
            if name in moved or name not in names:
                remove(os.path.join(self.model_dir, name))
        for name in sorted(moved):
            move(os.path.join(self.folder, name), os.path.join(self.model_dir, name))
        self._clear()

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
            if tf.io.gfile.isdir(self.folder) and listdir(self.folder):
                return {"names": listdir(self.folder), "finished": False}
            return None
        try:
            with tf.io.gfile.GFile(self.journal) as f:
                journal = json.load(f)
            names, finished = journal["names"], journal["finished"]
            if not (isinstance(names, list) and all(_is_entry_name(n) for n in names)):
                raise ValueError("names")
            if not isinstance(finished, bool):  # "false" would read as finished.
                raise ValueError("finished")
        except (ValueError, KeyError, TypeError):
            raise RunFolderError(
                f"{self.journal}: not a rerun journal keras_bert wrote; the previous run "
                f"is in {self.folder}: move its files back into {self.model_dir} "
                "and delete the journal"
            ) from None
        return {"names": names, "finished": finished}


def _is_entry_name(name):
    """Whether `name` names an entry of the folder itself: not a path that
    would reach outside it (`../x`, `/x`)."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name
