"""The teacher: a fine-tuning run folder, read as `predict` reads it."""

import hashlib
import json
import os

import numpy as np

from keras_bert.distillation.inputs import read_teacher
from keras_bert.errors import FinetuneError
from keras_bert.finetuning.inference import load_run
from keras_bert.finetuning.sentence_task import SentenceTask
from keras_bert.finetuning.tagging_task import TaggingTask
from pipelines.transfer_set import length_batches, sentence_batches, word_batches

# The tasks a teacher may be, by handler class; every other task's handler
# is refused with its reason here (tests/finetuning/test_task.py checks that
# each registered task is answered by one of the two).
TEACHER_HANDLERS = (SentenceTask, TaggingTask)
REFUSED_HANDLERS = {
    "SquadTask": "a span answer is a pair of positions over a context window, not one "
    "output a sentence or a word a student can match",
    "ChoiceTask": "a choice's score is read across a question's choices, which the "
    "transfer set's single sentences do not hold",
}


class Teacher:
    """A fine-tuned sentence(-pair) classifier or regressor, or a token
    tagger, that labels the transfer set with its own tokenizer.

    Args:
        run_dir: str. A fine-tuning run folder (`python -m
            keras_bert.finetune`'s `--model_dir`) of a sentence, sentence-pair
            or tagging task.

    Attributes:
        task: str. The run's task.
        data_dir: str or None. The task's files it was fine-tuned on, as its
            `config.yaml` records them.
        tagging: bool. A token tagger: its outputs are per word.
        label_names: list of str, or None for a regression.
        num_outputs: int. Outputs a sentence or a word: the classes, or 1.
        parameters: int. The backbone's weights.
        fingerprint: str. A hash of everything its outputs depend on: its
            `model.keras` and `vocab.txt` by their content, its task, classes,
            sequence length and casing (a rerun whose teacher changed any
            labels the transfer set again).
    """

    def __init__(self, run_dir):
        from keras_bert.distillation.transfer_set import file_fingerprint

        _, self.data_dir = read_teacher(run_dir)
        self.task, handler, self.model = load_run(run_dir)
        if not isinstance(handler, TEACHER_HANDLERS):
            reason = REFUSED_HANDLERS.get(type(handler).__name__, "no student learns it yet")
            raise FinetuneError(
                f"--teacher {run_dir}: a {self.task} run ({reason}); distillation takes "
                "sentence and sentence-pair classification and regression, and token tagging"
            )
        self.run_dir = run_dir
        self.tagging = isinstance(handler, TaggingTask)
        self.tokenizer = handler.tokenizer
        self.max_seq_length = handler.config.data.max_seq_length
        self.label_names = handler.label_names
        regression = getattr(handler, "regression", False)
        self.num_outputs = 1 if regression else len(self.label_names)
        self.parameters = self.model.backbone.count_params()
        self.fingerprint = hashlib.sha256(
            json.dumps(
                {
                    "model": file_fingerprint(os.path.join(run_dir, "model.keras")),
                    "vocabulary": file_fingerprint(os.path.join(run_dir, "vocab.txt")),
                    "task": self.task,
                    "label_names": self.label_names,
                    "max_seq_length": self.max_seq_length,
                    "lower_case": self.tokenizer.lower_case,
                },
                sort_keys=True,
            ).encode()
        ).hexdigest()

    def batch_outputs(self, rows, batch_size):
        """Yields `(indices, outputs)` a batch until every row of `rows` (a
        list of dicts) is labelled, shortest first: `indices` the
        positions in `rows` of the batch's rows, `outputs` a dict each: a
        sentence's `teacher` (C floats); a tagged sentence's `teacher`
        (W * C floats, each word's at its first piece) and `is_target` (W:
        0 where the word has no piece or was cut).

        The rows are tokenized together first, so that each batch holds
        rows of about one length in tokens (`pipelines.transfer_set.
        length_batches`): labelling in the rows' order padded every batch
        to its longest row."""
        if not rows:
            return
        if self.tagging:
            words = [r["words"] for r in rows]
            tokenized = word_batches(words, self.tokenizer, self.max_seq_length, len(rows))
            inputs, first = next(tokenized.as_numpy_iterator())
        else:
            inputs = next(
                sentence_batches(
                    [r["text_a"] for r in rows],
                    [r["text_b"] for r in rows],
                    self.tokenizer,
                    self.max_seq_length,
                    len(rows),
                ).as_numpy_iterator()
            )
        for indices, batch in length_batches(inputs, batch_size):
            outputs = np.asarray(self.model.predict_on_batch(batch), np.float32)[: len(indices)]
            if not np.isfinite(outputs).all():
                raise FinetuneError(
                    f"--teacher {self.run_dir}: predicts non-finite values (NaN or inf) for "
                    "the transfer set; it cannot teach"
                )
            if not self.tagging:
                outputs = outputs.reshape(len(indices), self.num_outputs)
                yield indices, [{"teacher": row} for row in outputs]
                continue
            labelled = []
            for logits, index in zip(outputs, indices):
                starts = first[index, : len(words[index])]  # (W,), -1 where no target
                labelled.append(
                    {
                        "teacher": logits[np.maximum(starts, 0)].reshape(-1),
                        "is_target": (starts >= 0).astype(int).tolist(),
                    }
                )
            yield indices, labelled
