"""One fine-tuning run: checkpoint → task model → fit → official scores →
predictions → `.keras` → TF-Serving export.

Files written into `model_dir`, held with `finetune.lock` while it runs:
`config.yaml` (the resolved config, before training), `vocab.txt`,
`model.keras`, `eval_results.json`, the task's predictions file, and
`export/<version>/` (SavedModel) when `keras_bert.export` is available.
A rerun into the folder sets the previous run's files aside when it starts
and removes them once it succeeds, or puts them back if it fails
(`run_dir.PreviousRun`): the folder never mixes two runs.
"""

import logging
import math
import os
import time

import keras
import tensorflow as tf
import yaml

from keras_bert.errors import FinetuneError
from keras_bert.file_io import (
    FILE_ERRORS,
    archive_problem,
    is_dir,
    is_file,
    makedirs,
    removed_if_left_empty,
    save_keras_atomically,
    write_atomically,
    write_json_atomically,
)
from keras_bert.finetuning.config import load_finetune_config
from keras_bert.finetuning.task_registry import TASKS
from keras_bert.optimization import create_optimizer
from keras_bert.run_dir import (
    FINETUNE_LOCK_FILE,
    PreviousRun,
    RunLock,
    record_outputs,
    refuse_another_run,
)

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


def infer_lower_case(vocabulary):
    """Uncased vocabularies have no upper-case letters outside [SPECIAL]."""
    return not any(token != token.lower() for token in vocabulary if not token.startswith("["))


def _tokenizer(backbone, vocab, model_dir, lower_case):
    import pipelines

    copy = os.path.join(model_dir, "vocab.txt")  # Carried either way.
    if vocab:
        vocab_path = vocab
        if not is_file(vocab_path):
            raise FinetuneError(f"--vocab {vocab_path}: no such file")
    elif backbone.vocabulary:
        vocab_path = copy
        write_atomically(
            vocab_path, lambda f: f.write("".join(t + "\n" for t in backbone.vocabulary))
        )
    else:
        raise FinetuneError("The checkpoint carries no vocabulary: pass --vocab vocab.txt")
    vocabulary = pipelines.load_vocabulary(vocab_path)
    if len(vocabulary) != backbone.vocabulary_size:
        raise FinetuneError(
            f"{vocab_path}: {len(vocabulary)} tokens, but the checkpoint's "
            f"vocabulary_size is {backbone.vocabulary_size}"
        )
    if vocab:
        # Read, then written whole: safe when `vocab` is the copy itself.
        with tf.io.gfile.GFile(vocab, "rb") as f:
            content = f.read()
        write_atomically(copy, lambda f: f.write(content))
    if lower_case is None:
        lower_case = infer_lower_case(vocabulary)
    backbone.vocabulary = list(vocabulary)
    return pipelines.BertTokenizer(vocab_path, lower_case=lower_case)


def _export(model, model_dir, config):
    try:
        from keras_bert.serving import export_for_serving
    except ImportError:
        logger.warning("export skipped: keras_bert.serving.export_for_serving is unavailable")
        return None
    seq_len = min(
        config.export.seq_len or config.data.max_seq_length,
        model.backbone.max_sequence_length,
    )
    return export_for_serving(
        model,
        os.path.join(model_dir, "export"),
        vocabulary=model.backbone.vocabulary,
        seq_len=seq_len,
        # A span labeler serves with the windows and n-best it was
        # evaluated with.
        max_query_length=config.data.max_query_length,
        doc_stride=config.data.doc_stride,
        n_best_size=config.squad.n_best_size,
        max_answer_length=config.squad.max_answer_length,
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

    A rerun replaces the run in `model_dir` (`PreviousRun`); a run of
    another task there is refused, or replaced the same way with
    `overwrite`."""
    if task not in TASKS:
        raise FinetuneError(f"Unknown task {task!r}. Known: {', '.join(sorted(TASKS))}")
    if not is_dir(data_dir):
        raise FinetuneError(f"--data_dir {data_dir}: no such directory")
    config = load_finetune_config(task, config_file, overrides)
    if tf.io.gfile.exists(model_dir) and not tf.io.gfile.isdir(model_dir):
        raise FinetuneError(f"--model_dir {model_dir}: is a file, not a folder")
    refuse_another_run(model_dir, task, overwrite)
    try:
        created = makedirs(model_dir)
    except FILE_ERRORS as error:
        raise FinetuneError(f"--model_dir {model_dir}: cannot write: {error}") from None
    with removed_if_left_empty(model_dir, created):
        return _run_in(task, data_dir, init_checkpoint, model_dir, vocab, config)


def _run_in(task, data_dir, init_checkpoint, model_dir, vocab, config):
    """Holds the run lock of `model_dir`, sets a previous run aside, trains;
    puts the previous run back if this one fails."""
    with RunLock(model_dir, FINETUNE_LOCK_FILE, "fine-tuning", error=FinetuneError):
        previous = PreviousRun(model_dir)
        recovered = previous.recover()
        if recovered:
            logger.warning(recovered)
        if previous.set_aside():
            logger.info(
                "A rerun: the previous run's %s set aside in %s until the new model is saved",
                ", ".join(previous.names),
                previous.folder,
            )
        try:
            results = _run_locked(
                task, data_dir, init_checkpoint, model_dir, vocab, config, previous
            )
        except BaseException:
            previous.restore()
            raise
        if previous.names:
            previous.discard()  # Only now: the rerun has finished.
            logger.info("Removed the previous run's %s", ", ".join(previous.names))
        return results


def _run_locked(task, data_dir, init_checkpoint, model_dir, vocab, config, previous):
    keras.utils.set_random_seed(config.training.seed)
    backbone = with_dropout(load_backbone(previous.path(init_checkpoint)), config.training.dropout)
    # What it trains under, as pre-training records it (`trained_under`).
    trained_under = {"backend": keras.backend.backend(), "precision": backbone.dtype_policy.name}
    try:  # The first write: an unwritable model_dir fails before training.
        write_atomically(
            os.path.join(model_dir, "config.yaml"),
            lambda f: yaml.safe_dump(
                {
                    **config.to_dict(),
                    "init_checkpoint": init_checkpoint,
                    "data_dir": data_dir,
                    "trained_under": trained_under,
                },
                f,
                sort_keys=False,
            ),
        )
        # What predict and evaluate add to the folder by default goes here.
        record_outputs(model_dir, [])
    except FILE_ERRORS as error:
        raise FinetuneError(f"--model_dir {model_dir}: cannot write: {error}") from None
    if config.data.max_seq_length > backbone.max_sequence_length:
        raise FinetuneError(
            f"data.max_seq_length={config.data.max_seq_length} exceeds the "
            f"checkpoint's max_sequence_length={backbone.max_sequence_length}"
        )
    tokenizer = _tokenizer(
        backbone, vocab and previous.path(vocab), model_dir, config.data.lower_case
    )
    handler_class = TASKS[task]
    handler = handler_class(task, config, data_dir, tokenizer)
    if handler.num_train_examples == 0:
        raise FinetuneError(f"--data_dir {data_dir}: the training file holds no examples")
    model = handler.build_model(backbone)

    batch_size = config.training.batch_size
    steps_per_epoch = max(1, math.ceil(handler.num_train_examples / batch_size))
    total_steps = max(1, math.ceil(config.training.epochs * steps_per_epoch))
    epochs = max(1, math.ceil(config.training.epochs))
    model.compile(
        optimizer=create_optimizer(config.optimizer, total_steps),
        **handler.compile_args(),
    )
    logger.info(
        "%s: %d training examples, %d steps (batch %d), lr %g",
        task,
        handler.num_train_examples,
        total_steps,
        batch_size,
        config.optimizer.learning_rate,
    )
    start = time.time()
    history = model.fit(
        handler.train_dataset().repeat(),
        epochs=epochs,
        steps_per_epoch=math.ceil(total_steps / epochs),
        verbose=config.training.verbose,
        callbacks=[keras.callbacks.TerminateOnNaN()],
    )
    train_seconds = time.time() - start
    final_loss = float(history.history["loss"][-1])
    # A diverged model is neither saved nor scored: its predictions are NaN.
    if not math.isfinite(final_loss):
        raise FinetuneError(
            f"training loss became {final_loss} in epoch "
            f"{len(history.history['loss'])}; nothing saved. Check the labels "
            "or lower optimizer.learning_rate. Received: "
            f"optimizer.learning_rate={config.optimizer.learning_rate}"
        )
    # Saved before evaluation, so a failing evaluation keeps the training.
    save_keras_atomically(model, os.path.join(model_dir, "model.keras"))

    logger.info("%s: scoring the dev set", task)
    start = time.time()
    results, predictions_path = handler.evaluate(model, model_dir)
    results.update(
        task=task,
        train_examples=handler.num_train_examples,
        train_steps=total_steps,
        train_seconds=round(train_seconds, 1),
        eval_seconds=round(time.time() - start, 1),
        final_train_loss=final_loss,
        predictions_file=os.path.basename(predictions_path),
    )
    if config.export.enabled:
        export_path = _export(model, model_dir, config)
        if export_path:
            results["export_dir"] = os.path.relpath(export_path, model_dir)
    write_json_atomically(results, os.path.join(model_dir, "eval_results.json"))
    return results
