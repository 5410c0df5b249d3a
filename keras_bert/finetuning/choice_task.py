"""SWAG multiple choice (paper section 4.4)."""

import os

import keras
import numpy as np

import pipelines.tasks as tasks
from keras_bert.file_io import write_jsonl_atomically
from keras_bert.finetuning import metrics as official
from keras_bert.finetuning.batch_prediction import predict_batches, take_limit
from keras_bert.finetuning.prediction_formats import JSON_LINES
from keras_bert.models import BertMultipleChoice


class ChoiceTask:
    """Four endings per context; accuracy. Files `train.csv`, `val.csv`."""

    prediction_format = JSON_LINES

    def __init__(self, name, config, data_dir, tokenizer):
        """`data_dir=None`: no files read (see `use_eval_file`)."""
        self.name = name
        self.config = config
        self.tokenizer = tokenizer
        self.train_examples, self.dev_examples = [], []
        if data_dir is None:
            return
        data = config.data
        train = _read_labelled(os.path.join(data_dir, data.train_file or "train.csv"))
        dev = _read_labelled(os.path.join(data_dir, data.dev_file or "val.csv"))
        self.train_examples = take_limit(train, data.train_limit, config.training.seed)
        self.dev_examples = take_limit(dev, data.eval_limit, 0)

    @property
    def model_class(self):
        return BertMultipleChoice

    def use_model(self, model):
        """Nothing to take: the choices are numbered."""

    def read_unlabelled(self, path):
        """Examples to predict (a SWAG CSV; a label column is not needed)."""
        return tasks.read_swag(path)

    def predict(self, model, examples, progress=True):
        """A row per example: the chosen ending (index and text) and every
        ending's probability."""
        outputs = predict_batches(model, self._dataset(examples, training=False), progress)
        logits = np.concatenate(outputs, axis=0) if outputs else np.zeros([0, tasks.NUM_CHOICES])
        rows = []
        for example, value in zip(examples, logits):
            probabilities = np.exp(value - value.max())
            probabilities /= probabilities.sum()
            choice = int(value.argmax())
            rows.append(
                {
                    "guid": example.guid,
                    "prediction": choice,
                    "ending": example.endings[choice],
                    "probabilities": probabilities.tolist(),
                }
            )
        return rows

    def use_eval_file(self, path, model):
        """Evaluation only: `path` (SWAG CSV with labels) is the dev set."""
        self.dev_examples = _read_labelled(path)

    def _dataset(self, examples, training):
        features = tasks.choice_features(examples, self.tokenizer, self.config.data.max_seq_length)
        batch = (
            self.config.training.batch_size if training else self.config.training.eval_batch_size
        )
        return tasks.make_dataset(
            features,
            [e.label for e in examples] if training else None,
            batch_size=batch,
            training=training,
            seed=self.config.training.seed,
            num_choices=tasks.NUM_CHOICES,
            pad_id=self.tokenizer.pad_id,
        )

    @property
    def num_train_examples(self):
        return len(self.train_examples)

    def train_dataset(self):
        return self._dataset(self.train_examples, training=True)

    def build_model(self, backbone):
        return BertMultipleChoice(
            backbone, num_choices=tasks.NUM_CHOICES, dropout=self.config.training.dropout
        )

    def compile_args(self):
        return dict(
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["sparse_categorical_accuracy"],
        )

    def evaluate(self, model, model_dir):
        rows = self.predict(model, self.dev_examples)
        gold = [e.label for e in self.dev_examples]
        predicted = [r["prediction"] for r in rows]
        results = {"accuracy": official.accuracy(gold, predicted), "eval_examples": len(gold)}
        path = os.path.join(model_dir, "predictions.jsonl")
        write_jsonl_atomically(
            [{**row, "label": example.label} for example, row in zip(self.dev_examples, rows)], path
        )
        return results, path


def _read_labelled(path):
    examples = tasks.read_swag(path)
    if any(e.label is None for e in examples):
        raise tasks.TaskDataError(f"{path}: no label column")
    return examples
