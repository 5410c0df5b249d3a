"""GLUE and generic sentence(-pair) classification/regression on tables."""

import math
import os

import keras
import numpy as np

import pipelines.tasks as tasks
from keras_bert.errors import ConfigError
from keras_bert.file_io import write_jsonl_atomically
from keras_bert.finetuning import metrics as official
from keras_bert.finetuning.batch_prediction import model_label_names, predict_batches, take_limit
from keras_bert.finetuning.prediction_formats import JSON_LINES
from keras_bert.models import BertClassifier, BertRegressor

GLUE_METRICS = {
    "cola": ("matthews_corrcoef", "accuracy"),
    "mrpc": ("accuracy", "f1"),
    "qqp": ("accuracy", "f1"),
    "stsb": ("pearson", "spearman"),
}
GENERIC = ("classification", "pair_classification", "regression")


class SentenceTask:
    """Reads, batches, builds the head for and scores one sentence task.

    GLUE tasks read the GLUE distribution's files or a `datasets` export
    of them (`pipelines.tasks.GLUE_TASKS`, `read_glue`);
    `classification`, `pair_classification` and `regression` read tables
    with columns named in `config.data`. Either finds `train.*` and
    `dev.*` (or `validation.*`) in `data_dir`: a TSV, CSV, JSON Lines,
    JSON or Parquet file, or a `datasets` save_to_disk folder. Scores:
    GLUE's official metric(s) per task; generic classification reports
    accuracy, Matthews correlation and (for two classes) F1 of the second
    label; regression Pearson and Spearman.
    """

    prediction_format = JSON_LINES

    def __init__(self, name, config, data_dir, tokenizer):
        """`data_dir=None`: no files read (see `use_eval_file`)."""
        self.name = name
        self.config = config
        self.tokenizer = tokenizer
        self.regression = name in ("stsb", "regression")
        data = config.data
        self.label_names = None
        if name in tasks.GLUE_TASKS:
            self.label_names = list(tasks.GLUE_TASKS[name].label_names or []) or None
        self.train_examples, self.dev_sets = [], {}
        if data_dir is None:
            return
        self._refuse_label_names()
        if name in tasks.GLUE_TASKS:
            self.data_dir = tasks.glue_data_dir(name, data_dir)
            dev_splits = tasks.GLUE_TASKS[name].dev_splits
        else:
            self.data_dir = data_dir
            dev_splits = ("dev",)
        train_path = (
            os.path.join(self.data_dir, data.train_file)
            if data.train_file
            else tasks.find_split_file(self.data_dir, "train")
        )
        # `datasets` calls the dev split `validation` (MNLI: `validation_matched`, ...).
        dev_names = (
            [data.dev_file]
            if data.dev_file
            else [
                os.path.relpath(  # The Hub's data/validation, say.
                    tasks.find_split_file(self.data_dir, split, split.replace("dev", "validation")),
                    self.data_dir,
                )
                for split in dev_splits
            ]
        )
        self.train_examples = take_limit(
            self._read(train_path), data.train_limit, config.training.seed
        )
        self.dev_sets = {
            n: take_limit(self._read(os.path.join(self.data_dir, n)), data.eval_limit, 0)
            for n in dev_names
        }
        if not self.regression and self.label_names is None:
            self.label_names = (
                [tasks.canonical_label(n) for n in data.label_names]
                if data.label_names
                else sorted({str(e.label) for e in self.train_examples})
            )
        files = [(train_path, self.train_examples)] + [
            (os.path.join(self.data_dir, n), e) for n, e in self.dev_sets.items()
        ]
        for path, examples in files:  # Found now, not after training.
            if not examples:
                raise tasks.TaskDataError(f"{path}: no examples")
        if not self.regression and len(self.label_names) < 2:
            raise tasks.TaskDataError(
                f"{train_path}: one class only ({self.label_names}); a "
                "classifier needs at least 2 (data.label_names lists them "
                "when the training file lacks some)"
            )
        for split, examples in [("train", self.train_examples)] + list(self.dev_sets.items()):
            self._check_labels(split, examples)

    def _read(self, path, labelled=True):
        if self.name in tasks.GLUE_TASKS:
            return tasks.read_glue(self.name, path, labelled)
        data = self.config.data
        text_b = data.text_b_column or ("text_b" if self.name == "pair_classification" else None)
        return tasks.read_table(
            path, data.text_column, text_b, data.label_column if labelled else None
        )

    def _refuse_label_names(self):
        """`data.label_names` where the task fixes its labels: a GLUE task's
        classes are its own (a `datasets` export's integers are read as
        them), and a regression has none."""
        given = self.config.data.label_names
        if not given:
            return
        if self.regression:
            raise ConfigError(
                f"data.label_names={given}: task {self.name!r} predicts a score, "
                "not classes; leave data.label_names unset"
            )
        if self.name in tasks.GLUE_TASKS and [tasks.canonical_label(n) for n in given] != list(
            self.label_names
        ):
            raise ConfigError(
                f"data.label_names={given}: task {self.name!r} has the classes "
                f"{self.label_names} (a `datasets` export's integer labels are read as "
                "them, docs/finetuning.md#glue-from-hugging-face-datasets); "
                + tasks.glue_alternative(self.name, *tasks.GLUE_TASKS[self.name].export_columns)
            )

    @property
    def model_class(self):
        return BertRegressor if self.regression else BertClassifier

    def use_model(self, model):
        """Without training files, the classes are those `model` learned."""
        if not self.regression:
            self.label_names = model_label_names(model)

    def read_unlabelled(self, path):
        """Examples to predict: an official GLUE test file (its index is the
        guid), or a file of the train/dev layout; labels are not read
        (GLUE dev files' are checked, though)."""
        return self._read(path, labelled=False)

    def use_eval_file(self, path, model):
        """Evaluation only: `path`, a labelled file of the task, becomes the
        one dev set, scored with the classes `model` was trained on."""
        self.use_model(model)
        examples = self._read(path)
        if not examples:
            raise tasks.TaskDataError(f"{path}: no examples")
        # The model's classes are fixed: no config can add one here.
        self._check_labels(
            os.path.basename(path), examples, "the model was fine-tuned on these labels only"
        )
        self.dev_sets = {os.path.basename(path): examples}

    def _check_labels(self, split, examples, advice="set data.label_names to list every label"):
        for e in examples:
            if self.regression:
                try:
                    label = float(e.label)
                except (TypeError, ValueError):
                    label = math.nan
                # nan and inf parse as floats, but train to a NaN loss.
                if not math.isfinite(label):
                    raise tasks.TaskDataError(
                        f"{e.guid}: label {e.label!r} is not a finite number ({split})"
                    )
                e.label = label
            elif str(e.label) not in self.label_names:
                raise tasks.TaskDataError(
                    f"{e.guid}: label {e.label!r} is not one of {self.label_names} "
                    f"({split}); {advice}"
                )

    def label_values(self, examples):
        """The examples' labels as the model's targets: class indices, or scores."""
        if self.regression:
            return [float(e.label) for e in examples]
        index = {n: i for i, n in enumerate(self.label_names)}
        return [index[str(e.label)] for e in examples]

    def _dataset(self, examples, training):
        features = tasks.classification_features(
            examples, self.tokenizer, self.config.data.max_seq_length
        )
        batch = (
            self.config.training.batch_size if training else self.config.training.eval_batch_size
        )
        return tasks.make_dataset(
            features,
            self.label_values(examples) if training else None,
            batch_size=batch,
            training=training,
            seed=self.config.training.seed,
            pad_id=self.tokenizer.pad_id,
            group_by_length=self.config.training.group_by_length,
        )

    @property
    def num_train_examples(self):
        return len(self.train_examples)

    def train_dataset(self):
        return self._dataset(self.train_examples, training=True)

    def build_model(self, backbone):
        if self.regression:
            return BertRegressor(backbone, dropout=self.config.training.dropout)
        return BertClassifier(
            backbone,
            num_classes=len(self.label_names),
            dropout=self.config.training.dropout,
            label_names=self.label_names,
        )

    def compile_args(self):
        if self.regression:
            return dict(loss="mse")
        return dict(
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["sparse_categorical_accuracy"],
        )

    def predict(self, model, examples, progress=True):
        """A row per example: guid, texts and the prediction, a label with
        every class's probability, or a score."""
        outputs = predict_batches(model, self._dataset(examples, training=False), progress)
        values = np.concatenate(outputs, axis=0) if outputs else np.zeros([0])
        rows = []
        for example, value in zip(examples, values):
            row = {"guid": example.guid, "text_a": example.text_a}
            if example.text_b is not None:
                row["text_b"] = example.text_b
            if self.regression:
                row["prediction"] = float(value)
            else:
                probabilities = np.exp(value - value.max())
                probabilities /= probabilities.sum()
                row["prediction"] = self.label_names[int(value.argmax())]
                row["probabilities"] = dict(zip(self.label_names, probabilities.tolist()))
            rows.append(row)
        return rows

    def evaluate(self, model, model_dir):
        """Official scores on every dev file; writes `predictions.jsonl`."""
        results, rows = {}, []
        for index, (dev_name, examples) in enumerate(self.dev_sets.items()):
            predicted = self.predict(model, examples)
            scores = self._score(self.label_values(examples), [r["prediction"] for r in predicted])
            # MNLI: the matched dev set gives the plain names, mismatched
            # gets a suffix.
            suffix = "" if index == 0 else "_" + dev_name.rsplit(".", 1)[0].split("_")[-1]
            results.update({k + suffix: v for k, v in scores.items()})
            results["eval_examples" + suffix] = len(examples)
            rows += [
                {"file": dev_name, **row, "label": example.label}
                for example, row in zip(examples, predicted)
            ]
        path = os.path.join(model_dir, "predictions.jsonl")
        write_jsonl_atomically(rows, path)
        return results, path

    def _score(self, gold, predicted):
        if self.regression:
            return {
                "pearson": official.pearson(gold, predicted),
                "spearman": official.spearman(gold, predicted),
            }
        index = {n: i for i, n in enumerate(self.label_names)}
        predicted = np.array([index[p] for p in predicted], dtype=np.int64)
        names = GLUE_METRICS.get(self.name, ("accuracy",))
        if self.name in GENERIC:
            names = ("accuracy", "matthews_corrcoef") + (
                ("f1",) if len(self.label_names) == 2 else ()
            )
        functions = {
            "accuracy": official.accuracy,
            "f1": official.binary_f1,
            "matthews_corrcoef": official.matthews_corrcoef,
        }
        return {n: functions[n](gold, predicted) for n in names}
