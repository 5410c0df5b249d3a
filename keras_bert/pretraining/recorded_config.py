"""A pre-training run's `config.yaml` (`runs.run_record`): written
before its first checkpoint (`record_config`); a rerun on the folder once it
has checkpoints must continue the run it records: the same recipe but for
what may change (`RERUN_MAY_CHANGE`), under the same backend and precision.
"""

import os

import yaml

from keras_bert.config_tree import diff, read_yaml
from keras_bert.errors import ConfigError
from keras_bert.file_io import is_file
from keras_bert.paths import DATA, bundled
from keras_bert.pretraining.config import DATA_PATH_KEYS, SCHEMA, PretrainingConfig
from keras_bert.runs.checkpoints import CheckpointManager
from keras_bert.runs.recipe import TRAINED_UNDER
from keras_bert.runs.run_record import write_run_config


def _same_files(value):
    """A data path as a rerun compares it: the checkout's own `data/...`
    files by absolute path, however the run's directory spelled them."""
    if isinstance(value, list):
        return [_same_files(v) for v in value]
    if not isinstance(value, str) or "://" in value:
        return value
    absolute = os.path.abspath(bundled(value))
    return absolute if absolute.startswith(str(DATA) + os.sep) else value


# What a rerun on an existing `model_dir` may change: how the run is
# watched, saved and placed, not what it learns. (`init_checkpoint` is
# read only before the first checkpoint; reruns are checked after it.)
RERUN_MAY_CHANGE = (
    "checkpoint.every_steps",
    "checkpoint.keep",
    "eval_every_steps",
    "eval_steps",
    "fill_mask_probes",
    "init_checkpoint",
    "jit_compile",
    "model_dir",
    "profile_steps",
    "steps_per_loop",
    "strategy",
    "tpu",
)


def record_config(config, allow_longer_train_steps, trained_under):
    """Writes `<model_dir>/config.yaml` once, before the first checkpoint,
    with `trained_under`; once checkpoints exist a rerun must match it
    (`check_rerun_config`, `check_trained_under`), so the file always
    describes what was trained."""
    path = os.path.join(config.model_dir, "config.yaml")
    trained = CheckpointManager(
        os.path.join(config.model_dir, "checkpoints"), is_chief=False
    ).checkpoints()
    if trained and is_file(path):
        extended = check_rerun_config(config, path, allow_longer_train_steps)
        check_trained_under(config, path, trained_under)
        if not extended:
            return
    write_run_config(path, config.to_dict(), trained_under)


def check_rerun_config(config, path, allow_longer_train_steps=False):
    """Raises `ConfigError` if `config` differs from the one recorded at
    `path` in a key outside `RERUN_MAY_CHANGE`: resuming checkpoints
    under another model, data, schedule or phase plan would train a mix
    that no config describes.

    With `allow_longer_train_steps`, a larger `train_steps` is accepted
    if only the last phase grows (the steps already trained keep their
    phases). Returns True when it does: `train_steps` was extended."""
    try:
        values = read_yaml(path)
        if isinstance(values, dict):
            values.pop(TRAINED_UNDER, None)
            if "budget_plan" in values:
                raise ConfigError(
                    f"{path} was written by an older keras_bert, whose time budget "
                    "fixed a step plan (budget_plan); this one runs the schedule "
                    "on a clock and cannot resume it. Use a new model_dir."
                )
        recorded = SCHEMA.merge(PretrainingConfig(), values)
    except (ConfigError, yaml.YAMLError) as error:
        raise ConfigError(f"Cannot read {path}: {error}") from None
    before, now = recorded.to_dict(), config.to_dict()
    for tree in (before, now):
        for name in DATA_PATH_KEYS:
            tree["data"][name] = _same_files(tree["data"][name])
    extended = allow_longer_train_steps and config.train_steps > recorded.train_steps
    if extended and config.train_budget_minutes is not None:
        raise ConfigError(
            "--allow_longer_train_steps extends a step-based run; this run's "
            f"length is its time budget (train_budget_minutes="
            f"{config.train_budget_minutes}), fixed in {path} when it started."
        )
    if extended:
        if config.phase_steps()[:-1] != recorded.phase_steps()[:-1]:
            raise ConfigError(
                "Only the last phase may grow when train_steps is extended. "
                f"Received: train_steps={config.train_steps} gives phase "
                f"steps {config.phase_steps()}; {path} has "
                f"{recorded.phase_steps()}"
            )
        # Phase lengths were compared above as steps: a phase given by
        # `fraction` may be rewritten as the same number of `steps`.
        for tree in (before, now):
            del tree["train_steps"]
            for phase in tree["phases"]:
                phase.pop("steps"), phase.pop("fraction")
    changed = [
        f"{key}: {old!r} -> {new!r}"
        for key, old, new in diff(before, now)
        if not any(key == k or key.startswith(k + ".") for k in RERUN_MAY_CHANGE)
    ]
    if changed:
        raise ConfigError(
            f"{config.model_dir} holds checkpoints of another config "
            f"({path}); this run changes {'; '.join(changed)}. Use a new "
            "model_dir, --overwrite to start afresh in it, or the recorded values. "
            "A rerun may change only "
            f"{', '.join(RERUN_MAY_CHANGE)}, and raise train_steps with "
            "--allow_longer_train_steps."
        )
    return extended


def check_trained_under(config, path, trained_under):
    """Raises `ConfigError` when the run recorded at `path` trained under
    another Keras backend or precision than `trained_under`: its
    checkpoints would resume, but not exactly (another backend's kernels
    and random streams, another dtype). A `config.yaml` without the record
    (written before it existed) is accepted."""
    try:
        recorded = read_yaml(path)
    except yaml.YAMLError as error:
        raise ConfigError(f"Cannot read {path}: {error}") from None
    recorded = recorded.get(TRAINED_UNDER) if isinstance(recorded, dict) else None
    if not isinstance(recorded, dict):
        return
    backend, precision = recorded.get("backend"), recorded.get("precision")
    if backend is not None and backend != trained_under["backend"]:
        raise ConfigError(
            f"{config.model_dir} was trained under the {backend} backend ({path}), "
            f"this run has {trained_under['backend']}: set KERAS_BACKEND={backend} "
            "to resume it, or use a new model_dir (or --overwrite)."
        )
    if precision is not None and precision != trained_under["precision"]:
        # Only `auto` gets here (`check_rerun_config` refuses a changed
        # value): the run moved to hardware where it resolves otherwise.
        raise ConfigError(
            f"{config.model_dir} was trained in {precision} ({path}); here "
            f"precision={config.precision!r} resolves to {trained_under['precision']}: "
            f"resume it where it resolves to {precision}, or use a new model_dir (or "
            "--overwrite)."
        )
