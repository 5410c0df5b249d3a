"""What a fine-tuning task handler provides: the contract behind `TASKS`.

`runner.run_finetune` trains with a handler (`num_train_examples`,
`train_dataset`, `build_model`, `compile_args`, `evaluate`);
`inference.run_evaluation` and `run_prediction` reuse it on a saved run
(`use_model`, `use_eval_file`, `read_unlabelled`, `predict`,
`prediction_format`). A new task is
a class with these members, listed in `task_registry.TASKS`; Model Garden
writes the same contract down as `official/core/base_task.Task`.
`tests/finetuning/test_task.py` checks every registered class against it.

Shapes: B examples a batch, T tokens a sequence (each batch its own length),
C choices (multiple choice).
"""

from __future__ import annotations

import typing

if typing.TYPE_CHECKING:
    import keras
    import tensorflow as tf

    from keras_bert.finetuning.prediction_formats import PredictionFormat


class FinetuningTask(typing.Protocol):
    """One downstream task: its files, its head, its loss and its scores."""

    prediction_format: PredictionFormat
    """How `predict`'s rows are written (`prediction_formats`)."""

    def __init__(self, name: str, config, data_dir: str | None, tokenizer):
        """`name`, a key of `TASKS`; `config`, its `FinetuneConfig`;
        `tokenizer`, a `pipelines.BertTokenizer`. Reads and checks the
        training and dev files under `data_dir` (a `TaskDataError` names a
        bad one), or none when `data_dir` is None (a saved run, see
        `use_model`)."""

    @property
    def num_train_examples(self) -> int:
        """Training sequences an epoch (SQuAD: windows, not questions);
        0 without training files. Sets the step count."""

    def train_dataset(self) -> tf.data.Dataset:
        """One shuffled epoch of `(features, labels)` batches; features are
        `token_ids`, `segment_ids`, `padding_mask` (B, T), or (B, C, T);
        labels match `build_model`'s outputs. The runner repeats it."""

    def build_model(self, backbone: keras.Model) -> keras.Model:
        """The task model on `backbone` (a `BertBackbone`): a head from
        `keras_bert.models`, carrying `label_names` where it has classes."""

    def compile_args(self) -> dict:
        """Keyword arguments of `model.compile` besides the optimizer:
        `loss`, and `metrics` or `loss_weights` where the task has them."""

    def evaluate(self, model: keras.Model, model_dir: str) -> tuple[dict, str]:
        """Scores the dev set(s) with the task's official metric and writes
        its predictions file into `model_dir`; returns `(results, path)`,
        results a flat dict of numbers with `eval_examples`."""

    @property
    def model_class(self) -> type[keras.Model]:
        """The class of `build_model`'s model: a saved run whose
        `model.keras` holds another is refused."""

    def use_model(self, model: keras.Model) -> None:
        """A saved run, no training files: takes what `model` learned (its
        `label_names`), or nothing where the task has no classes."""

    def use_eval_file(self, path: str, model: keras.Model) -> None:
        """Evaluation only: `path`, a labelled file in the task's format,
        becomes the dev set that `evaluate` scores with `model`'s labels."""

    def read_unlabelled(self, path: str) -> list:
        """The examples of `path`, a file in the task's format whose labels
        are not needed; what `predict` takes."""

    def predict(self, model: keras.Model, examples: list, progress: bool = True) -> list[dict]:
        """One JSON-ready dict per example, in order, with its prediction
        (a label and the class probabilities, a score, an answer span, a
        tag a word, an ending); `progress` shows a progress bar."""
