"""One fine-tuning run: checkpoint → task model → fit → official scores →
predictions → `.keras` → TF-Serving export.

Files written into `model_dir`, held with `finetune.lock` while it runs:
`config.yaml` (the resolved config, before training), `vocab.txt`,
`model.keras`, `eval_results.json`, the task's predictions file, `logs/`
(TensorBoard scalars), and `export/<version>/` (SavedModel) when
`keras_bert.export` is available. While it trains, `unfinished/` holds its
checkpoints: a run stopped (Ctrl-C, SIGTERM: a checkpoint at the next
step) or killed resumes there when the same command runs again
(`finetuning.resume`).
A rerun into the folder sets the previous run's files aside when it starts
and removes them once it succeeds, or puts them back if it fails
(`RunFolder.previous`): the folder never mixes two runs.

`FinetuneRun` is the run as named steps; a command that trains a task
model another way (distillation) subclasses it and replaces a step.
"""

import logging
import math
import os
import signal
import tempfile
import threading
import time

import keras
import tensorflow as tf

from keras_bert.errors import FinetuneError
from keras_bert.file_io import (
    FILE_ERRORS,
    archive_problem,
    is_dir,
    is_file,
    makedirs,
    removed_if_left_empty,
    write_json_atomically,
)
from keras_bert.finetuning.config import load_finetune_config, refuse_run_over_inputs
from keras_bert.finetuning.resume import UnfinishedRun, resume_key
from keras_bert.finetuning.run_kind import FINETUNING_RUN, VOCABULARY
from keras_bert.finetuning.task_registry import TASKS
from keras_bert.optimization import create_optimizer, create_schedule
from keras_bert.pretraining.training_monitor import TrainingMonitor
from keras_bert.runs.checkpoints import TrainingCheckpoint
from keras_bert.runs.replaced_run import ReplacedRun
from keras_bert.runs.run_folder import RunFolder
from keras_bert.runs.run_record import trained_under
from pipelines.vocabulary import infer_lower_case

logger = logging.getLogger("keras_bert.finetune")


def load_backbone(init_checkpoint):
    """A `BertBackbone` from a `.keras` archive (backbone, pretrainer or
    task model), from anything `keras_bert.convert` reads (Hugging Face,
    Google, keras-hub), or `random:<model config>` for random weights."""
    from keras_bert.models import BertBackbone

    if init_checkpoint.startswith("random:"):
        from keras_bert.model_configs import load_model_config

        try:
            config = load_model_config(init_checkpoint[len("random:") :])
        except ValueError as error:  # An unknown name or a bad YAML file.
            raise FinetuneError(f"--init_checkpoint {init_checkpoint}: {error}") from None
        return BertBackbone(**config)
    if init_checkpoint.endswith(".keras") and is_file(init_checkpoint):
        model = load_keras_model(init_checkpoint)
        if isinstance(model, BertBackbone):
            return model
        if isinstance(getattr(model, "backbone", None), BertBackbone):
            return model.backbone
        raise FinetuneError(f"{init_checkpoint}: holds a {type(model).__name__}, not a BERT model")
    if not (tf.io.gfile.exists(init_checkpoint) or tf.io.gfile.exists(init_checkpoint + ".index")):
        raise FinetuneError(f"{init_checkpoint}: no such checkpoint file or folder")
    from keras_bert.conversion import read_checkpoint

    return read_checkpoint(init_checkpoint).to_model(heads=False)


def load_keras_model(path):
    """A `.keras` archive's model, or a `FinetuneError` saying what is wrong."""
    try:
        return keras.saving.load_model(path, compile=False)
    except Exception as error:  # Keras raises many types for bad files.
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        problem = archive_problem(path) or f"cannot load: {first}"
        raise FinetuneError(f"{path}: {problem}") from None


def with_dropout(backbone, rate):
    """`backbone`, rebuilt with `dropout=rate` when it has another rate.

    The paper fine-tunes with dropout 0.1 in the encoder too; a backbone
    pre-trained without dropout (`configs/pretrain/budget.yaml`) would
    otherwise fine-tune without it, and compare unfairly with random init.
    """
    from keras_bert.models import BertBackbone

    if backbone.dropout == rate:
        return backbone
    rebuilt = BertBackbone.from_config({**backbone.get_config(), "dropout": rate})
    rebuilt.set_weights(backbone.get_weights())
    rebuilt.vocabulary = backbone.vocabulary
    return rebuilt


def _tokenizer(backbone, vocab, folder, lower_case):
    """The tokenizer of `vocab` (a file; None: the checkpoint's vocabulary),
    whose copy the run `folder` carries either way."""
    import pipelines

    copy = os.path.join(folder.model_dir, VOCABULARY)
    if vocab:
        if not is_file(vocab):
            raise FinetuneError(f"--vocab {vocab}: no such file")
    elif backbone.vocabulary:
        folder.kind.write_vocabulary(folder, backbone.vocabulary)
    else:
        raise FinetuneError("The checkpoint carries no vocabulary: pass --vocab vocab.txt")
    vocab_path = vocab or copy
    vocabulary = pipelines.load_vocabulary(vocab_path)
    if len(vocabulary) != backbone.vocabulary_size:
        raise FinetuneError(
            f"{vocab_path}: {len(vocabulary)} tokens, but the checkpoint's "
            f"vocabulary_size is {backbone.vocabulary_size}"
        )
    if vocab:
        # Read, then written whole: safe when `vocab` is the copy itself.
        with tf.io.gfile.GFile(vocab, "rb") as f:
            folder.kind.write_vocabulary(folder, f.read())
    if lower_case is None:
        lower_case = infer_lower_case(vocabulary)
    backbone.vocabulary = list(vocabulary)
    return pipelines.BertTokenizer(vocab_path, lower_case=lower_case)


def _export(model, model_dir, config):
    try:
        from keras_bert.serving import export_for_serving
        from keras_bert.serving.serving_export import finetuned_export_options
    except ImportError:
        logger.warning("export skipped: keras_bert.serving.export_for_serving is unavailable")
        return None
    return export_for_serving(
        model,
        os.path.join(model_dir, "export"),
        vocabulary=model.backbone.vocabulary,
        **finetuned_export_options(config, model.backbone),
    )


def run_finetune(
    task,
    data_dir,
    init_checkpoint,
    model_dir,
    vocab=None,
    config_file=None,
    overrides=(),
    overwrite=False,
):
    """Fine-tunes, evaluates, predicts and exports; returns the results dict.

    A rerun replaces the run in `model_dir` (`RunFolder.previous`); a run
    of another task there is refused, or replaced the same way with
    `overwrite`."""
    if task not in TASKS:
        raise FinetuneError(f"Unknown task {task!r}. Known: {', '.join(sorted(TASKS))}")
    check_run_inputs(model_dir, data_dir, init_checkpoint, vocab, config_file)
    config = load_finetune_config(task, config_file, overrides)
    return run_in_folder(
        task,
        model_dir,
        overwrite,
        lambda folder: FinetuneRun(task, data_dir, init_checkpoint, folder, vocab, config),
    )


def check_run_inputs(model_dir, data_dir, *inputs, **distill_inputs):
    """Refuses, for `run_finetune` and `run_distillation` (local or remote
    paths), a `data_dir` that is no folder and a `model_dir` over the
    run's inputs (`refuse_run_over_inputs`, which takes the rest)."""
    if not is_dir(data_dir):
        raise FinetuneError(f"--data_dir {data_dir}: no such directory")
    refuse_run_over_inputs(model_dir, data_dir, *inputs, **distill_inputs)


def run_in_folder(task, model_dir, overwrite, make_run, kind=FINETUNING_RUN):
    """Runs `make_run(folder)` (a `FinetuneRun`) in `model_dir`, the folder
    of a run of `kind` (a `FinetuningRun`), locked and replacing the run
    there; returns its results. A run of another task in `model_dir` is
    refused, or replaced with `overwrite`."""
    if tf.io.gfile.exists(model_dir) and not tf.io.gfile.isdir(model_dir):
        raise FinetuneError(f"--model_dir {model_dir}: is a file, not a folder")
    folder = RunFolder(model_dir, kind)
    folder.refuse_another_run(task, overwrite)
    try:
        created = makedirs(model_dir)
    except FILE_ERRORS as error:
        raise FinetuneError(f"--model_dir {model_dir}: cannot write: {error}") from None
    run = make_run(folder)
    replaced = ReplacedRun(folder, replace=True, until="this run has finished", say=logger.info)
    with removed_if_left_empty(model_dir, created), folder.lock(), replaced:
        left = folder.take_over()
        if left:
            logger.warning(
                "Removed what a first pre-training run killed before its first checkpoint "
                "left in %s: %s",
                model_dir,
                ", ".join(left),
            )
        replaced.start()
        results = run.run()
        replaced.stands_alone()  # Only now: the model is saved, scored and exported.
        return results


class FinetuneRun:
    """One fine-tuning run as named steps, each a method: `load_backbone`,
    `record`, `tokenizer`, `check_fit`, `task_handler`,
    `prepare_training_data`, `build_model`, `compile`, `fit`, `save`,
    `evaluate`, `export` (`run` calls them in that order);
    what it trains on is `num_train_examples`, `compile_args`,
    `train_dataset` and `training_model`, the task's own (distillation
    trains on the teacher's outputs instead, and may add losses).

    Args:
        task: str. A key of `TASKS`.
        data_dir: str. The task's files.
        init_checkpoint: str. What `load_backbone` reads.
        folder: `RunFolder`. The run folder, locked, a previous run set aside.
        vocab: str or None. A vocabulary file; None: the checkpoint's.
        config: `FinetuneConfig`.
    """

    def __init__(self, task, data_dir, init_checkpoint, folder, vocab, config):
        self.task = task
        self.data_dir = data_dir
        self.init_checkpoint = init_checkpoint
        self.folder = folder
        self.model_dir = folder.model_dir
        self.vocab = vocab
        self.config = config
        self.unfinished = UnfinishedRun(self.model_dir, config.checkpoint.keep)
        self.schedule = None  # `compile`'s learning rate, a function of the step.
        self.state = None  # `fit`'s `TrainingState`: the step, the data position.
        self.monitor = None  # `fit`'s `TrainingMonitor`: the TensorBoard scalars.

    def run(self):
        """Every step; returns the results `eval_results.json` holds."""
        keras.utils.set_random_seed(self.config.training.seed)
        backbone = self.load_backbone()
        self.record(backbone)
        tokenizer = self.tokenizer(backbone)
        self.check_fit(backbone, tokenizer)
        handler = self.task_handler(tokenizer)
        self.prepare_training_data(handler)
        model = self.build_model(handler, backbone)
        trained = self.training_model(model)
        total_steps = self.compile(trained, handler)
        final_loss = self.fit(trained, handler, total_steps)
        self.save(model)
        start = time.time()
        results, predictions_path = self.evaluate(model, handler)
        results.update(
            task=self.task,
            train_examples=self.num_train_examples(handler),
            train_steps=total_steps,
            train_seconds=round(self.state.train_seconds, 1),
            eval_seconds=round(time.time() - start, 1),
            final_train_loss=final_loss,
            predictions_file=os.path.basename(predictions_path),
        )
        export_path = self.export(model)
        if export_path:
            results["export_dir"] = os.path.relpath(export_path, self.model_dir)
        write_json_atomically(results, os.path.join(self.model_dir, "eval_results.json"))
        self.unfinished.finish()
        return results

    def load_backbone(self):
        """The checkpoint's backbone at the recipe's dropout; a checkpoint of
        the run this one replaces is read where it was set aside."""
        path = self.folder.previous.path(self.init_checkpoint)
        return with_dropout(load_backbone(path), self.config.training.dropout)

    def record(self, backbone):
        """The run's `config.yaml` and record (`RunFolder.record_run`): the first
        write, so an unwritable folder fails before training."""
        try:
            self.folder.kind.write_config(
                self.folder,
                self.config,
                self.init_checkpoint,
                self.data_dir,
                trained_under(backbone),
            )
        except FILE_ERRORS as error:
            raise FinetuneError(f"--model_dir {self.model_dir}: cannot write: {error}") from None

    def tokenizer(self, backbone):
        """The tokenizer of the run's vocabulary, copied into the folder."""
        vocab = self.vocab and self.folder.previous.path(self.vocab)
        return _tokenizer(backbone, vocab, self.folder, self.config.data.lower_case)

    def task_handler(self, tokenizer):
        """The task's `FinetuningTask`: its data, head, losses and scores."""
        handler = TASKS[self.task](self.task, self.config, self.data_dir, tokenizer)
        if handler.num_train_examples == 0:
            raise FinetuneError(f"--data_dir {self.data_dir}: the training file holds no examples")
        return handler

    def check_fit(self, backbone, tokenizer):
        """Refuses, before the task's files are read, parts of the run that
        do not fit together: the recipe's sequence length and the
        checkpoint's (distillation: the student's and the teacher's)."""
        max_seq_length = self.config.data.max_seq_length
        if max_seq_length > backbone.max_sequence_length:
            raise FinetuneError(
                f"data.max_seq_length={max_seq_length} exceeds the "
                f"checkpoint's max_sequence_length={backbone.max_sequence_length}"
            )

    def prepare_training_data(self, handler):
        """What the run trains on, made before the model is built: the
        task's files, which `handler` has read (distillation labels its
        transfer set here)."""

    def build_model(self, handler, backbone):
        """The model trained: the task's head on `backbone`."""
        return handler.build_model(backbone)

    def training_model(self, model):
        """What `fit` trains: `model` itself (distillation may wrap it to
        add losses; `model` alone is saved)."""
        return model

    def compile(self, model, handler):
        """Compiles `model` with the recipe's optimizer over the run's
        length; returns that length in updates."""
        training = self.config.training
        examples = self.num_train_examples(handler)
        total_steps = max(1, math.ceil(training.epochs * self.steps_per_epoch(handler)))
        self.schedule = create_schedule(self.config.optimizer, total_steps)
        model.compile(
            optimizer=create_optimizer(self.config.optimizer, total_steps, self.schedule),
            **self.compile_args(handler),
        )
        logger.info(
            "%s: %d training examples, %d steps (batch %d), lr %g",
            self.task,
            examples,
            total_steps,
            training.batch_size,
            self.config.optimizer.learning_rate,
        )
        return total_steps

    def num_train_examples(self, handler):
        """The examples an epoch trains on: the task's training file's."""
        return handler.num_train_examples

    def steps_per_epoch(self, handler):
        """Updates an epoch: its examples in batches."""
        return max(1, math.ceil(self.num_train_examples(handler) / self.config.training.batch_size))

    def compile_args(self, handler):
        """`model.compile`'s arguments besides the optimizer: the task's."""
        return handler.compile_args()

    def train_dataset(self, handler):
        """One shuffled epoch of `(inputs, targets)` batches: the task's."""
        return handler.train_dataset()

    def fit(self, model, handler, total_steps):
        """Trains `total_steps` updates, from where an unfinished run of the
        same recipe stopped (`finetuning.resume`); returns the mean loss of
        the last `training.log_every_steps` (None when it had finished
        training). Saves a checkpoint every `checkpoint.every_steps`, and
        on Ctrl-C or SIGTERM at the next step, then raises
        `KeyboardInterrupt`. A diverged model is neither saved nor scored:
        its predictions are NaN."""
        training = self.config.training
        key = resume_key(self.resume_inputs(handler), total_steps)
        self.unfinished.take_up(key)
        _, self.state = self.unfinished.checkpoints.restore_newest(model)
        if self.state.step:
            logger.info("Resumed at step %d of %d", self.state.step, total_steps)
        checkpointer = TrainingCheckpoint(
            self.unfinished.checkpoints, self.state, self.config.checkpoint.every_steps
        )
        checkpointer.start_phase(total_steps)
        self.monitor = TrainingMonitor(
            self.unfinished.logs,
            self.state,
            logged=None,
            learning_rate_fn=lambda step: float(keras.ops.convert_to_numpy(self.schedule(step))),
            total_steps=total_steps,
            verbose=training.verbose > 0,
        )
        self.monitor.start_phase(None, training.batch_size, None)
        window = min(training.log_every_steps, total_steps)
        windows = math.ceil((total_steps - self.state.step) / window)
        if windows == 0:
            return None
        epoch_scores = EpochScores(
            lambda: self.scores(model, handler),
            self.state,
            self.steps_per_epoch(handler),
            total_steps,
            self.monitor,
        )
        start, before = time.time(), self.state.train_seconds

        def count_train_seconds(batch, logs):
            # Before the checkpointer saves the state: a resumed run's
            # training time includes the runs before it.
            self.state.train_seconds = before + time.time() - start - epoch_scores.seconds

        stop_handlers = (
            checkpointer.install_signal_handlers()
            if threading.current_thread() is threading.main_thread()
            else {}
        )
        try:
            history = model.fit(
                self.train_dataset(handler).repeat().skip(self.state.step),
                epochs=windows,
                steps_per_epoch=window,
                shuffle=False,  # The task's pipeline shuffles, seeded.
                verbose=0,
                callbacks=[
                    keras.callbacks.LambdaCallback(on_train_batch_end=count_train_seconds),
                    checkpointer,
                    self.monitor,
                    epoch_scores,
                    keras.callbacks.TerminateOnNaN(),
                ],
            )
        finally:
            for signum, handler_before in stop_handlers.items():
                signal.signal(signum, handler_before)
        if checkpointer.preempted:
            logger.warning(
                "Stopped at step %d of %d, saved in %s: the same command resumes there",
                self.state.step,
                total_steps,
                self.unfinished.folder,
            )
            raise KeyboardInterrupt
        final_loss = float(history.history["loss"][-1])
        if not math.isfinite(final_loss):
            self.unfinished.discard()  # Its checkpoints lead to the same loss.
            epoch = (self.state.step - 1) // self.steps_per_epoch(handler) + 1
            raise FinetuneError(
                f"training loss became {final_loss} in epoch {epoch}; nothing saved. Check "
                "the labels or lower optimizer.learning_rate. Received: "
                f"optimizer.learning_rate={self.config.optimizer.learning_rate}"
            )
        if checkpointer.last_saved_step != self.state.step:
            checkpointer.save()  # A run that fails scoring or exporting trains no more.
        return final_loss

    def resume_inputs(self, handler):
        """What a run that takes up another's checkpoints must share with
        it besides the recipe: its inputs, as the command named them, and
        how many examples the task's files hold."""
        return {
            **self.config.to_dict(),
            "init_checkpoint": self.init_checkpoint,
            "data_dir": self.data_dir,
            "vocab": self.vocab,
            "train_examples": self.num_train_examples(handler),
        }

    def scores(self, model, handler):
        """The task's official scores on the dev set, its predictions
        written nowhere that lasts (the scores of an epoch's end)."""
        with tempfile.TemporaryDirectory() as scratch:
            results, _ = handler.evaluate(model, scratch)
        return results

    def save(self, model):
        """`model.keras`, before evaluation: a failing evaluation keeps the
        training."""
        self.folder.kind.save_model(self.folder, model)

    def evaluate(self, model, handler):
        """`(official scores, predictions file)` on the dev set; the scores
        are the TensorBoard eval scalars of the last step too."""
        logger.info("%s: scoring the dev set", self.task)
        results, path = handler.evaluate(model, self.model_dir)
        self.monitor.write_scalars("eval", dev_scalars(results), self.state.step)
        return results, path

    def export(self, model):
        """The TF-Serving export (`export/<version>`), or None when the
        recipe turns it off or the serving package is unavailable."""
        if not self.config.export.enabled:
            return None
        return _export(model, self.model_dir, self.config)


def dev_scalars(results):
    """The scores of a task's `evaluate` results, as TensorBoard scalars:
    its numbers but the example count."""
    return {
        name: value
        for name, value in results.items()
        if isinstance(value, (int, float))
        and not isinstance(value, bool)
        and name != "eval_examples"
    }


class EpochScores(keras.callbacks.Callback):
    """Scores the dev set at the end of each epoch but the last (`evaluate`
    scores that one), into the monitor's eval scalars and the log.

    Args:
        score: callable returning the task's results dict.
        state: `TrainingState`, whose step the checkpointer advances.
        steps_per_epoch: int.
        total_steps: int.
        monitor: `TrainingMonitor`.

    Attributes:
        seconds: float. Time spent scoring (not training).
    """

    def __init__(self, score, state, steps_per_epoch, total_steps, monitor):
        super().__init__()
        self.score = score
        self.state = state
        self.steps_per_epoch = steps_per_epoch
        self.total_steps = total_steps
        self.monitor = monitor
        self.seconds = 0.0

    def on_train_batch_end(self, batch, logs=None):
        step = self.state.step
        if step % self.steps_per_epoch or step >= self.total_steps:
            return
        _ = self.model  # Under JAX, reading it brings the trained weights into the model.
        start = time.time()
        scores = dev_scalars(self.score())
        self.seconds += time.time() - start
        self.monitor.write_scalars("eval", scores, step)
        logger.info(
            "epoch %d: %s",
            step // self.steps_per_epoch,
            "  ".join(f"{name} {value:.4g}" for name, value in scores.items()),
        )
