"""One distillation run: a fine-tuned teacher labels the transfer set once,
a student learns the labels, and the student's folder is a fine-tuning run
folder (`predict`, `evaluate`, `export` and `convert` take it as it is).

The run is `finetuning.runner`'s, step for step (`FinetuneRun`), with what
it trains on replaced: the transfer set and the teacher's outputs instead
of the task's labels (`DistillRun`). Besides a fine-tuning run's files, the
folder holds `transfer_set/`, the teacher's labels (`transfer_set`).
"""

import logging
import os

from keras_bert.distillation.config import READ_A_MASKED_LM, load_distill_config
from keras_bert.distillation.intermediate import IntermediateDistiller, check_intermediate
from keras_bert.distillation.masked_lm_words import MaskedLmAndNeighbourWords, MaskedLmWords
from keras_bert.distillation.neighbour_words import NeighbourWords
from keras_bert.distillation.student_loss import StudentLoss
from keras_bert.distillation.teacher import Teacher
from keras_bert.distillation.transfer_set import (
    TRANSFER_SET,
    TransferSet,
    expand_text_files,
    label_transfer_set,
    labelling_seconds,
    read_text_file,
)
from keras_bert.errors import ConfigError, FinetuneError
from keras_bert.finetuning.run_kind import FinetuningRun
from keras_bert.finetuning.runner import FinetuneRun, check_run_inputs, run_in_folder
from pipelines.transfer_set import student_batches

logger = logging.getLogger("keras_bert.distill")
# A student's run folder: a fine-tuning run's that keeps its transfer set.
DISTILLATION_RUN = FinetuningRun(kept=[TRANSFER_SET])


def run_distillation(
    teacher,
    init_checkpoint,
    model_dir,
    data_dir=None,
    text_files=(),
    vocab=None,
    config_file=None,
    overrides=(),
    overwrite=False,
):
    """Distils the fine-tuning run `teacher` into a student made from
    `init_checkpoint` (anything `finetune --init_checkpoint` takes), a
    fine-tuning run in `model_dir`; returns its results dict.

    Args:
        teacher: str. A fine-tuning run folder of a sentence(-pair) or a
            tagging task.
        init_checkpoint: str. The student's backbone.
        model_dir: str. The student's run folder.
        data_dir: str or None. The task's files; None: those the teacher
            was fine-tuned on.
        text_files: sequence of str. Unlabelled text for the transfer set
            (files or globs),
            a sentence (a pair: two, tab-separated; tagging: its words) a
            line.
        vocab, config_file, overrides, overwrite: as `run_finetune`'s; the
            config is `load_distill_config`'s.
    """
    teacher_run = Teacher(teacher)
    if data_dir is None:
        data_dir = teacher_run.data_dir
        if data_dir is None:
            raise FinetuneError(
                f"--teacher {teacher}: its config.yaml names no data_dir; pass --data_dir"
            )
    check_run_inputs(
        model_dir,
        data_dir,
        init_checkpoint,
        vocab,
        config_file,
        teacher=teacher,
        text_files=text_files,
    )
    config = load_distill_config(teacher_run.task, config_file, overrides)
    distillation = config.distillation
    distillation.teacher, distillation.text_files = teacher, list(text_files)
    regression = teacher_run.label_names is None
    if distillation.loss == "auto":
        distillation.loss = "mse" if regression else "kl_divergence"
    elif regression and distillation.loss != "mse":
        raise ConfigError(
            f"distillation.loss={distillation.loss}: the teacher is a regression, whose "
            "output is a score, not a distribution; use mse (or auto)"
        )
    return run_in_folder(
        teacher_run.task,
        model_dir,
        overwrite,
        lambda folder: DistillRun(teacher_run, data_dir, init_checkpoint, folder, vocab, config),
        DISTILLATION_RUN,
    )


class DistillRun(FinetuneRun):
    """`FinetuneRun` whose student trains on the teacher's outputs for the
    transfer set, labelled (or taken up from an earlier labelling) once the
    task's files are read (`prepare_training_data`).

    Args:
        teacher: `Teacher`.
        data_dir, init_checkpoint, folder, vocab: as `FinetuneRun`'s.
        config: `DistillConfig`.
    """

    def __init__(self, teacher, data_dir, init_checkpoint, folder, vocab, config):
        super().__init__(teacher.task, data_dir, init_checkpoint, folder, vocab, config)
        self.teacher = teacher
        self.shards = None
        self.transfer_examples = 0
        self.labelling_seconds = 0.0
        self.layer_map = None  # With intermediate losses: `check_intermediate`'s.
        self.handler = None  # The task's, whose compile arguments the student is saved with.

    def load_backbone(self):
        backbone = super().load_backbone()
        if backbone.count_params() > self.teacher.parameters:
            logger.warning(
                "The student's backbone (%s weights) is larger than the teacher's (%s): "
                "distillation usually makes a smaller model",
                f"{backbone.count_params():,}",
                f"{self.teacher.parameters:,}",
            )
        return backbone

    @property
    def intermediate(self):
        """Whether an intermediate loss is on (`IntermediateConfig`)."""
        intermediate = self.config.distillation.intermediate
        return bool(intermediate.hidden_weight or intermediate.attention_weight)

    def check_fit(self, backbone, tokenizer):
        """With intermediate losses, the student's layers and tokenizer
        against the teacher's, before anything is labelled."""
        super().check_fit(backbone, tokenizer)
        if self.intermediate:
            self.layer_map = check_intermediate(
                self.config.distillation.intermediate,
                backbone,
                tokenizer,
                self.teacher.model.backbone,
                self.teacher.tokenizer,
                self.config.data.max_seq_length,
            )

    def prepare_training_data(self, handler):
        """The transfer set made from the task's training file and the text
        files, labelled by the teacher (or taken up from an earlier
        labelling), once the task's classes are found to be the teacher's."""
        if handler.label_names != self.teacher.label_names:
            raise FinetuneError(
                f"--teacher {self.teacher.run_dir}: classifies into {self.teacher.label_names}, "
                f"but the task's files in {self.data_dir} have the classes {handler.label_names}"
            )
        labelled, kind = self._labelled_rows(handler)
        unlabelled = [
            row
            for path in expand_text_files(self.config.distillation.text_files)
            for row in read_text_file(path, kind)
        ]
        transfer = self.config.distillation.transfer
        seed = self.config.training.seed if transfer.seed is None else transfer.seed
        transfer_set = TransferSet(labelled, unlabelled, transfer, seed, self._word_replacer())
        self.shards = label_transfer_set(
            transfer_set, self.teacher, self.model_dir, progress=self.config.training.verbose > 0
        )
        self.labelling_seconds = labelling_seconds(self.model_dir)
        self.transfer_examples = len(transfer_set)
        logger.info(
            "Transfer set: %d sentences (%d labelled, %d lines of text, each with %d copies)",
            len(transfer_set),
            len(labelled),
            len(unlabelled),
            self.config.distillation.transfer.copies,
        )
        self.handler = handler

    def _word_replacer(self):
        """What replaces the words the augmentation marks
        (`transfer.replace_by`), or None when it marks none."""
        transfer = self.config.distillation.transfer
        if transfer.replace_probability == 0:
            return None
        masked_lm = neighbours = None
        if transfer.replace_by in READ_A_MASKED_LM:
            masked_lm = MaskedLmWords(
                transfer.masked_lm,
                transfer.replace_top_k,
                transfer.batch_size,
                transfer.masked_lm_context,
            )
        if transfer.replace_by != "masked_lm":
            neighbours = NeighbourWords(
                self.teacher.model.backbone, self.teacher.tokenizer, transfer.replace_top_k
            )
        if masked_lm and neighbours:
            return MaskedLmAndNeighbourWords(masked_lm, neighbours)
        return masked_lm or neighbours

    def _labelled_rows(self, handler):
        """`(rows, kind)`: the task's training examples as transfer-set rows,
        and the kind of row a text file's line makes (`read_text_file`)."""
        if self.teacher.tagging:
            index = {name: i for i, name in enumerate(handler.label_names)}
            rows = [
                {"words": s.words, "labels": [index[t] for t in s.tags]}
                for s in handler.train_sentences
            ]
            return rows, "words"
        examples = handler.train_examples
        rows = [
            {"text_a": e.text_a, "text_b": e.text_b, "label": label}
            for e, label in zip(examples, handler.label_values(examples))
        ]
        return rows, "pair" if examples[0].text_b is not None else "sentence"

    def num_train_examples(self, handler):
        return self.transfer_examples

    def training_model(self, model):
        if not self.intermediate:
            return model
        intermediate = self.config.distillation.intermediate
        return IntermediateDistiller(
            model,
            self.teacher.model.backbone,
            self.layer_map,
            intermediate.hidden_weight,
            intermediate.attention_weight,
        )

    def compile_args(self, handler):
        distillation = self.config.distillation
        return dict(
            loss=StudentLoss(
                soft_loss=distillation.loss,
                temperature=distillation.temperature,
                hard_label_weight=distillation.hard_label_weight,
                regression=getattr(handler, "regression", False),
            )
        )

    def save(self, model):
        # `StudentLoss` reads the transfer set's targets, which no one who
        # loads the student has: it is saved as `finetune` saves a task
        # model, with the task's loss and metrics, so that `import
        # keras_bert` alone loads it and its `fit` takes the task's labels.
        # (Trained inside `IntermediateDistiller`, it was never compiled and
        # is saved as it is.)
        if model.compiled:
            model.compile(optimizer=model.optimizer, **self.handler.compile_args())
        super().save(model)

    def train_dataset(self, handler):
        training = self.config.training
        return student_batches(
            self.shards,
            self.teacher.num_outputs,
            handler.tokenizer,
            self.config.data.max_seq_length,
            training.batch_size,
            training.seed,
            tagging=self.teacher.tagging,
            group_by_length=training.group_by_length,
        )

    def evaluate(self, model, handler):
        results, path = super().evaluate(model, handler)
        results.update(
            teacher=os.path.abspath(self.teacher.run_dir),
            labelling_seconds=round(self.labelling_seconds, 1),
        )
        if self.layer_map:
            results["layer_map"] = self.layer_map
        return results, path
