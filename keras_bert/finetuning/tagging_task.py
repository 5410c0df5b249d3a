"""CoNLL-2003 named-entity recognition (paper section 5.3)."""

import logging
import os

import keras
import numpy as np

import pipelines.tasks as tasks
from keras_bert.file_io import write_atomically
from keras_bert.finetuning import metrics as official
from keras_bert.finetuning.batch_prediction import model_label_names, predict_batches, take_limit
from keras_bert.finetuning.prediction_formats import CONLL
from keras_bert.models import BertTokenClassifier

logger = logging.getLogger(__name__)


class TaggingTask:
    """Word tagging with a label on each word's first WordPiece.

    Files: `train.txt` and `valid.txt` in `--data_dir` (CoNLL-2003 names;
    `data.train_file`/`data.dev_file` override). The tag set comes from the
    training file (IOB1 or IOB2, kept as is); scores are seqeval's entity
    precision/recall/F1 on words. `predictions.txt` is `word gold predicted`
    per line, blank lines between sentences (conlleval input).

    Words past `data.max_seq_length - 2` WordPieces of their sentence are
    cut, wherever a file is read: not trained on, predicted `O` (and scored
    so against their gold tags), each file's count in a warning.
    """

    prediction_format = CONLL

    def __init__(self, name, config, data_dir, tokenizer):
        """`data_dir=None`: no files read (see `use_eval_file`)."""
        self.name = name
        self.config = config
        self.tokenizer = tokenizer
        self.train_sentences, self.dev_sentences = [], []
        if data_dir is None:
            return
        data = config.data
        train_path = os.path.join(data_dir, data.train_file or "train.txt")
        dev_path = os.path.join(data_dir, data.dev_file or "valid.txt")
        train = tasks.read_conll(train_path)
        dev = tasks.read_conll(dev_path)
        self.label_names = data.label_names or tasks.tag_names(train)
        self.train_sentences = take_limit(train, data.train_limit, config.training.seed)
        self.dev_sentences = take_limit(dev, data.eval_limit, 0)
        self._warn_cut(train_path, self.train_sentences, "not trained on")
        self._warn_cut(dev_path, self.dev_sentences, "predicted O and scored so")

    def _warn_cut(self, path, sentences, fate):
        """Warns of the words of `sentences` past max_seq_length, if any."""
        length = self.config.data.max_seq_length
        words, cut = tasks.words_cut(sentences, self.tokenizer, length)
        if words:
            logger.warning(
                "%s: words past data.max_seq_length=%d (%d word pieces): %d in %d of %d "
                "sentences, %s.",
                path,
                length,
                length - 2,
                words,
                cut,
                len(sentences),
                fate,
            )

    @property
    def model_class(self):
        return BertTokenClassifier

    def use_model(self, model):
        """Without training files, the tags are those `model` learned."""
        self.label_names = model_label_names(model)

    def read_unlabelled(self, path):
        """Sentences to tag: a word a line (its first column), blank lines
        between sentences."""
        sentences = tasks.read_conll(path, tagged=False)
        self._warn_cut(path, sentences, "tagged O")
        return sentences

    def predict(self, model, sentences, progress=True):
        """A row per sentence: its words and one predicted tag per word."""
        tags = self.predict_tags(model, sentences, progress)
        return [{"words": s.words, "tags": t} for s, t in zip(sentences, tags)]

    def use_eval_file(self, path, model):
        """Evaluation only: `path` (CoNLL text) becomes the dev set, tagged
        with the tags `model` was trained on."""
        self.use_model(model)
        self.dev_sentences = tasks.read_conll(path)
        unknown = sorted({t for s in self.dev_sentences for t in s.tags} - set(self.label_names))
        if unknown:
            raise tasks.TaskDataError(
                f"{path}: tags {unknown} are not among the model's {self.label_names}"
            )
        self._warn_cut(path, self.dev_sentences, "predicted O and scored so")

    def _dataset(self, sentences, training):
        features, labels, starts = tasks.tagging_features(
            sentences, self.tokenizer, self.config.data.max_seq_length, self.label_names
        )
        batch = (
            self.config.training.batch_size if training else self.config.training.eval_batch_size
        )
        dataset = tasks.make_dataset(
            features,
            labels,
            batch_size=batch,
            training=training,
            seed=self.config.training.seed,
            pad_id=self.tokenizer.pad_id,
            group_by_length=self.config.training.group_by_length,
        )
        return dataset, starts

    @property
    def num_train_examples(self):
        return len(self.train_sentences)

    def train_dataset(self):
        return self._dataset(self.train_sentences, training=True)[0]

    def build_model(self, backbone):
        return BertTokenClassifier(
            backbone,
            num_labels=len(self.label_names),
            dropout=self.config.training.dropout,
            label_names=self.label_names,
        )

    def compile_args(self):
        return dict(
            loss=keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, ignore_class=tasks.IGNORED_LABEL
            )
        )

    def predict_tags(self, model, sentences, progress=True):
        """One predicted tag per word; words cut by max_seq_length get O."""
        dataset, starts = self._dataset(sentences, training=False)
        predicted, i = [], 0
        for logits in predict_batches(model, dataset, progress):
            for row in np.asarray(logits).argmax(axis=-1):
                predicted.append([self.label_names[row[p]] if p >= 0 else "O" for p in starts[i]])
                i += 1
        return predicted

    def evaluate(self, model, model_dir):
        predicted = self.predict_tags(model, self.dev_sentences)
        gold = [s.tags for s in self.dev_sentences]
        results = official.entity_scores(gold, predicted)
        results["eval_examples"] = len(self.dev_sentences)
        path = os.path.join(model_dir, "predictions.txt")

        def write(f):
            for sentence, tags in zip(self.dev_sentences, predicted):
                for word, gold_tag, tag in zip(sentence.words, sentence.tags, tags):
                    f.write(f"{word} {gold_tag} {tag}\n")
                f.write("\n")

        write_atomically(path, write)
        return results, path
