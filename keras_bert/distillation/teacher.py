"""The teacher: a fine-tuning run folder, read as `predict` reads it."""

import os

import numpy as np

from keras_bert.errors import FinetuneError
from keras_bert.finetuning.inference import load_run
from keras_bert.finetuning.sentence_task import SentenceTask
from keras_bert.training.run_folder import is_run_folder
from pipelines.transfer_set import sentence_batches


class Teacher:
    """A fine-tuned sentence(-pair) classifier or regressor that labels the
    transfer set with its own tokenizer.

    Args:
        run_dir: str. A fine-tuning run folder (`python -m
            keras_bert.finetune`'s `--model_dir`) of a sentence task.

    Attributes:
        task: str. The run's task.
        label_names: list of str, or None for a regression.
        num_outputs: int. Outputs a sentence: the classes, or 1.
        parameters: int. The backbone's weights.
        fingerprint: str. The SHA-256 of its `model.keras`.
    """

    def __init__(self, run_dir):
        from keras_bert.distillation.transfer_set import file_fingerprint

        if not is_run_folder(run_dir) or not os.path.exists(os.path.join(run_dir, "model.keras")):
            raise FinetuneError(
                f"--teacher {run_dir}: not a fine-tuning run folder (it holds no config.yaml "
                "and model.keras that keras_bert.finetune wrote)"
            )
        self.task, handler, self.model = load_run(run_dir)
        if not isinstance(handler, SentenceTask):
            raise FinetuneError(
                f"--teacher {run_dir}: a {self.task} run; distillation takes the sentence and "
                "sentence-pair tasks (classification and regression) for now"
            )
        self.run_dir = run_dir
        self.tokenizer = handler.tokenizer
        self.max_seq_length = handler.config.data.max_seq_length
        self.label_names = handler.label_names
        self.num_outputs = 1 if handler.regression else len(self.label_names)
        self.parameters = self.model.backbone.count_params()
        self.fingerprint = file_fingerprint(os.path.join(run_dir, "model.keras"))

    def batch_outputs(self, rows, batch_size):
        """The teacher's outputs for `rows` (dicts with `text_a` and
        `text_b`), a (batch, C) float32 array at a time, in order."""
        batches = sentence_batches(
            [r["text_a"] for r in rows],
            [r["text_b"] for r in rows],
            self.tokenizer,
            self.max_seq_length,
            batch_size,
        )
        for inputs in batches.as_numpy_iterator():
            outputs = np.asarray(self.model.predict_on_batch(inputs), np.float32)
            outputs = outputs.reshape(len(inputs["token_ids"]), self.num_outputs)
            if not np.isfinite(outputs).all():
                raise FinetuneError(
                    f"--teacher {self.run_dir}: predicts non-finite values (NaN or inf) for "
                    "the transfer set; it cannot teach"
                )
            yield outputs
