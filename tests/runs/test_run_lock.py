"""`RunLock`: what stands at the lock's name and is no lock file."""

import os

import pytest
import tensorflow as tf

from keras_bert.errors import FinetuneError
from keras_bert.runs.run_lock import FINETUNE_LOCK_FILE, RunLock

pytestmark = pytest.mark.backend_independent


@pytest.mark.parametrize(
    "make, problem",
    [
        (lambda lock, d: os.symlink(f"{d}/gone", lock), "a link to {d}/gone, which does not exist"),
        (lambda lock, d: os.mkdir(lock), "a folder"),
        (lambda lock, d: (os.mkdir(f"{d}/x"), os.symlink(f"{d}/x", lock)), "a link to a folder"),
    ],
)
def test_a_lock_that_is_no_file_is_named_and_left_alone(tmp_path, make, problem):
    # Issue 82 item 16: it was "No such file or directory" / "Is a directory".
    lock = str(tmp_path / FINETUNE_LOCK_FILE)
    make(lock, str(tmp_path))
    with pytest.raises(FinetuneError) as refusal:
        with RunLock(str(tmp_path), FINETUNE_LOCK_FILE, "fine-tuning", FinetuneError):
            pass
    assert str(refusal.value) == (
        f"{lock}: the fine-tuning lock of this model_dir is {problem.format(d=tmp_path)}, "
        "not a lock file a run wrote. Remove it, then start again."
    )
    assert os.path.lexists(lock)


def test_a_folder_at_a_remote_locks_name_is_named(ram_dir):
    lock = f"{ram_dir}/{FINETUNE_LOCK_FILE}"
    tf.io.gfile.makedirs(lock)
    with pytest.raises(
        FinetuneError, match=f"^{lock}: the fine-tuning lock of this model_dir is a folder"
    ):
        with RunLock(ram_dir, FINETUNE_LOCK_FILE, "fine-tuning", FinetuneError):
            pass
    assert tf.io.gfile.isdir(lock)
