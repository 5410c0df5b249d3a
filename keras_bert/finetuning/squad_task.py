"""SQuAD v1.1 / v2.0 extractive question answering (paper 4.2, 4.3)."""

import json
import os

import keras
import numpy as np

import pipelines.tasks as tasks
from keras_bert.file_io import write_atomically
from keras_bert.finetuning import metrics as official
from keras_bert.finetuning.batch_prediction import predict_batches, take_limit
from keras_bert.finetuning.prediction_formats import SQUAD
from keras_bert.finetuning.squad_postprocess import squad_predictions
from keras_bert.models import BertSpanLabeler


class SquadTask:
    """Sliding-window span extraction scored with the official script.

    Files (relative to `--data_dir`): `train-v1.1.json`/`dev-v1.1.json`
    (`-v2.0` for squad_v2) unless `data.train_file`/`data.dev_file` say
    otherwise. With `data.split_train_from_dev` = f > 0 only the dev file is
    read: the first f of its paragraphs (in file order, so whole articles
    apart from the one at the cut) train, the rest are evaluated.
    """

    prediction_format = SQUAD

    def __init__(self, name, config, data_dir, tokenizer):
        self.name = name
        self.config = config
        self.tokenizer = tokenizer
        self.version_2 = name == "squad_v2"
        suffix = "v2.0" if self.version_2 else "v1.1"
        self.train_examples, self.dev_examples = [], []
        self._train_features = None
        if data_dir is None:  # No files read (see `use_eval_file`).
            return
        data = config.data
        dev_path = os.path.join(data_dir, data.dev_file or f"dev-{suffix}.json")
        if data.split_train_from_dev > 0:
            if not 0 < data.split_train_from_dev < 1:
                raise tasks.TaskDataError(
                    "data.split_train_from_dev must be in (0, 1). "
                    f"Received: {data.split_train_from_dev}"
                )
            train_all = tasks.read_squad(dev_path, self.version_2, training=True)
            eval_all = tasks.read_squad(dev_path, self.version_2, training=False)
            contexts = list(dict.fromkeys(e.context for e in eval_all))
            cut = set(contexts[: int(len(contexts) * data.split_train_from_dev)])
            train = [e for e in train_all if e.context in cut]
            dev = [e for e in eval_all if e.context not in cut]
        else:
            train_path = os.path.join(data_dir, data.train_file or f"train-{suffix}.json")
            train = tasks.read_squad(train_path, self.version_2, training=True)
            dev = tasks.read_squad(dev_path, self.version_2, training=False)
        self.train_examples = take_limit(train, data.train_limit, config.training.seed)
        self.dev_examples = take_limit(dev, data.eval_limit, 0)

    def use_eval_file(self, path, model):
        """Evaluation only: `path` (SQuAD JSON with answers) is the dev set."""
        self.dev_examples = tasks.read_squad(path, self.version_2, training=False)
        unanswered = sum(not e.answers for e in self.dev_examples)
        if unanswered and not self.version_2:
            raise tasks.TaskDataError(
                f"{path}: {unanswered} of {len(self.dev_examples)} questions "
                "have no answers to score against"
            )

    def _features(self, examples, training):
        data = self.config.data
        return tasks.squad_features(
            examples,
            self.tokenizer,
            max_seq_length=data.max_seq_length,
            doc_stride=data.doc_stride,
            max_query_length=data.max_query_length,
            training=training,
        )

    @property
    def num_train_examples(self):
        # Steps are counted in windows, not questions.
        if self._train_features is None:
            self._train_features = self._features(self.train_examples, training=True)
        return len(self._train_features)

    def train_dataset(self):
        features = self._train_features or self._features(self.train_examples, True)
        return tasks.make_dataset(
            {
                "token_ids": [f.token_ids for f in features],
                "segment_ids": [f.segment_ids for f in features],
            },
            {
                "start_logits": [f.start_position for f in features],
                "end_logits": [f.end_position for f in features],
            },
            batch_size=self.config.training.batch_size,
            training=True,
            seed=self.config.training.seed,
            pad_id=self.tokenizer.pad_id,
            group_by_length=self.config.training.group_by_length,
            # Windows are mostly full length: coarser buckets.
            bucket_boundaries=(64, 128, 192, 256, 320),
        )

    def build_model(self, backbone):
        return BertSpanLabeler(backbone)

    def compile_args(self):
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        # run_squad.py: total loss = (start loss + end loss) / 2.
        return dict(
            loss={"start_logits": loss, "end_logits": loss},
            loss_weights={"start_logits": 0.5, "end_logits": 0.5},
        )

    @property
    def model_class(self):
        return BertSpanLabeler

    def use_model(self, model):
        """Nothing to take: spans need no label names."""

    def read_unlabelled(self, path):
        """Questions to answer (SQuAD JSON; answers are not needed)."""
        return tasks.read_squad(path, self.version_2, training=False)

    def _answers(self, model, examples, starts=None, progress=True):
        features = self._features(examples, training=False)
        dataset = tasks.make_dataset(
            {
                "token_ids": [f.token_ids for f in features],
                "segment_ids": [f.segment_ids for f in features],
            },
            batch_size=self.config.training.eval_batch_size,
            pad_id=self.tokenizer.pad_id,
        )
        start_logits, end_logits = [], []
        for batch in predict_batches(model, dataset, progress):
            start_logits.extend(np.asarray(batch["start_logits"], np.float32))
            end_logits.extend(np.asarray(batch["end_logits"], np.float32))
        squad = self.config.squad
        predictions, null_odds = squad_predictions(
            examples,
            features,
            start_logits,
            end_logits,
            self.tokenizer.vocabulary,
            lower_case=self.tokenizer.lower_case,
            n_best_size=squad.n_best_size,
            max_answer_length=squad.max_answer_length,
            version_2=self.version_2,
            null_score_diff_threshold=squad.null_score_diff_threshold,
            starts=starts,
        )
        return predictions, null_odds, features

    def predict(self, model, examples, progress=True):
        """A row per question: id, answer text ("" for no answer) and its
        character offsets in the context (`answer_end` exclusive; None when
        there is no answer or it cannot be located)."""
        first_words = {}
        predictions, _, _ = self._answers(model, examples, first_words, progress)
        rows = []
        for example in examples:
            text = predictions[example.qid]
            start = None
            if text:
                _, char_to_word = tasks.split_words(example.context)
                word_start = char_to_word.index(first_words[example.qid])
                found = example.context.find(text, word_start)
                start = found if found >= 0 else None
            rows.append(
                {
                    "id": example.qid,
                    "answer": text,
                    "answer_start": start,
                    "answer_end": None if start is None else start + len(text),
                }
            )
        return rows

    def evaluate(self, model, model_dir):
        """Official EM/F1; writes `predictions.json` (and `null_odds.json`)."""
        predictions, null_odds, features = self._answers(model, self.dev_examples)
        gold = {e.qid: e.answers for e in self.dev_examples}
        if self.version_2:
            results = official.squad_v2_scores(gold, predictions)
        else:
            results = official.squad_v1_scores(gold, predictions)
        results["eval_examples"] = len(self.dev_examples)
        results["eval_features"] = len(features)
        path = os.path.join(model_dir, "predictions.json")
        write_atomically(path, lambda f: json.dump(predictions, f, ensure_ascii=False, indent=1))
        if self.version_2:
            write_atomically(
                os.path.join(model_dir, "null_odds.json"),
                lambda f: json.dump(null_odds, f, indent=1),
            )
        return results, path
