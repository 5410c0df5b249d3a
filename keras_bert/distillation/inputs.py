"""A distillation's inputs, checked where the `distill` command checks them
(before TensorFlow and Keras load) and where the library reads them, in
one wording: the teacher's run folder and the `--text` files.

Standard library and PyYAML only.
"""

import glob
import os

from keras_bert.errors import ConfigError, FinetuneError
from keras_bert.runs.recipe import read_recipe

_RUN_FILES = ("config.yaml", "model.keras")


def read_teacher(teacher):
    """`(task, data_dir)` recorded in the fine-tuning run folder `teacher`
    (`data_dir` None when its `config.yaml` names none). Raises
    `FinetuneError` naming the problem when `teacher` is a file, no
    folder, or no fine-tuning run's folder (no `config.yaml` and
    `model.keras` that `finetune` wrote; a pre-training run's)."""
    if "://" in teacher:
        from keras_bert.file_io import is_file  # A remote folder: through TensorFlow.
    else:
        if os.path.isfile(teacher):
            raise FinetuneError(
                f"--teacher {teacher}: a file; --teacher takes the fine-tuning run folder "
                f"that holds it ({os.path.dirname(teacher) or '.'})"
            )
        if not os.path.isdir(teacher):
            raise FinetuneError(f"--teacher {teacher}: no such directory")
        is_file = os.path.isfile
    not_a_run = FinetuneError(
        f"--teacher {teacher}: not a fine-tuning run folder (it holds no config.yaml and "
        "model.keras that keras_bert.finetune wrote)"
    )
    if not all(is_file(os.path.join(teacher, name)) for name in _RUN_FILES):
        raise not_a_run
    try:
        recorded = read_recipe(os.path.join(teacher, "config.yaml"))
    except ConfigError as error:
        raise FinetuneError(f"--teacher {teacher}: {error}") from None
    task = recorded.get("task")
    if not isinstance(task, str) or "phases" in recorded:
        raise not_a_run
    data_dir = recorded.get("data_dir")
    return task, data_dir if isinstance(data_dir, str) else None


def is_glob(pattern):
    return any(c in pattern for c in "*?[")


def missing_text(pattern):
    """The error for a `--text` path that names no file."""
    what = "matches no file" if is_glob(pattern) else "no such file"
    return FinetuneError(f"--text {pattern}: {what}")


def check_text_files(patterns):
    """Refuses a local `--text` path or glob that names no file; a remote
    one is checked as it is read (`transfer_set.expand_text_files`)."""
    for pattern in patterns:
        if "://" in pattern:
            continue
        if not (glob.glob(pattern) if is_glob(pattern) else os.path.isfile(pattern)):
            raise missing_text(pattern)
