"""Writes a versioned TF Serving SavedModel, atomically.

TF Serving watches `EXPORT_DIR/<integer version>/`; it ignores other names.
The model is written to a hidden sibling `EXPORT_DIR/.tmp-<version>-*`,
checked, and renamed into place in one rename, so a failed or killed
export never leaves a half-written version for the server to load. On an
object store (`gs://`), which cannot rename a directory, the files move
one by one and `saved_model.pb`, the file a server reads first, moves last
(`keras_bert.file_io.atomic_directory`).

The graph is always built under the TensorFlow backend, where a Keras model
traces to plain TensorFlow ops. A model living under JAX or PyTorch is
saved to a temporary `.keras` archive (weights are backend-neutral) and
exported by `python -m keras_bert.export` in a child process with
`KERAS_BACKEND=tensorflow`.
"""

import errno
import importlib
import logging
import os
import pkgutil
import re
import subprocess
import sys
import tempfile
import time

import tensorflow as tf

from keras_bert.errors import ExportError
from keras_bert.file_io import (
    archive_problem,
    atomic_directory,
    listdir,
    makedirs,
    removed_if_left_empty,
)
from keras_bert.serving.converted_check import QUANTIZATIONS
from keras_bert.serving.onnx_export import ONNX_FILE, onnx_model
from keras_bert.serving.tflite_export import TFLITE_FILE, tflite_flatbuffer
from pipelines import limits
from pipelines.text_files import read_text
from pipelines.vocabulary import infer_lower_case

logger = logging.getLogger(__name__)

MODEL_FILES = ("model.keras", "pretrainer.keras", "backbone.keras")
SMOKE_TEXTS = ["", " \t\n", "Hello, World!", "\x00\ufffd\u200f中文 😀", "a" * 300]


def find_model_file(model_dir):
    """The model to export in a training output dir.

    `model.keras` (a fine-tuned task model) first, then `pretrainer.keras`,
    then `backbone.keras`. Whether the folder holds one run (a fine-tuning
    rerun may be unfinished there) is for the caller to ask first
    (`python -m keras_bert.export` does).
    """
    for name in MODEL_FILES:
        path = os.path.join(model_dir, name)
        if tf.io.gfile.exists(path):
            return path
    raise FileNotFoundError(
        f"`model_dir` must contain one of {', '.join(MODEL_FILES)}. "
        f"Received: model_dir={model_dir!r} with "
        f"{sorted(listdir(model_dir)) if tf.io.gfile.isdir(model_dir) else 'no such directory'}"
    )


def next_version(output_dir):
    """1 + the highest integer version under `output_dir` (1 when none)."""
    versions = [
        int(name)
        for name in (listdir(output_dir) if tf.io.gfile.isdir(output_dir) else [])
        if re.fullmatch(r"[0-9]+", name)
    ]
    return max(versions, default=0) + 1


def _import_models():
    """Registers every keras_bert model class for `.keras` deserialisation."""
    import keras_bert.models as models

    for info in pkgutil.iter_modules(models.__path__):
        importlib.import_module(f"keras_bert.models.{info.name}")


def load_model(path):
    """Loads a `.keras` archive with keras_bert's classes registered.

    Raises:
        ValueError: the file is missing, not a zip, damaged, or holds
            something Keras cannot rebuild; one line naming the file.
    """
    import keras

    _import_models()
    try:
        return keras.saving.load_model(path, compile=False)
    except Exception as error:  # Keras raises many types for bad archives.
        first = (str(error).strip() or type(error).__name__).splitlines()[0]
        problem = archive_problem(path) or f"cannot load: {first}"
        raise ExportError(f"{path}: {problem}") from None


def _backbone_of(model):
    return getattr(model, "backbone", model)


def finetuned_export_options(config, backbone):
    """`export_for_serving`'s keyword arguments for a fine-tuning run's
    model: the `FinetuneConfig` `config` it was trained with, so the
    SavedModel tokenizes, truncates and windows requests as `predict` does
    its input (`data.lower_case` None is inferred from the vocabulary by
    the same rule on both sides)."""
    return dict(
        lower_case=config.data.lower_case,
        seq_len=min(
            config.export.seq_len or config.data.max_seq_length,
            backbone.max_sequence_length,
        ),
        max_query_length=config.data.max_query_length,
        doc_stride=config.data.doc_stride,
        n_best_size=config.squad.n_best_size,
        max_answer_length=config.squad.max_answer_length,
        jit_compile=config.export.jit_compile,
    )


def _read_vocabulary(path):
    return [line.strip() for line in read_text(path, ExportError).splitlines()]


def export_for_serving(
    model,
    output_dir,
    *,
    vocabulary=None,
    lower_case=None,
    seq_len=None,
    version=None,
    overwrite=False,
    top_k=limits.FILL_MASK_TOP_K,
    max_masks=limits.FILL_MASK_MAX_MASKS,
    max_answer_length=limits.SQUAD_MAX_ANSWER_LENGTH,
    max_query_length=limits.SQUAD_MAX_QUERY_LENGTH,
    doc_stride=limits.SQUAD_DOC_STRIDE,
    n_best_size=limits.SQUAD_N_BEST_SIZE,
    jit_compile=False,
    tflite=None,
    onnx=None,
):
    """Exports `model` for TF Serving as `output_dir/<version>/`.

    The SavedModel answers raw UTF-8 text with tokenization built from core
    TensorFlow ops (no tensorflow-text kernels needed; see
    `CoreOpsBertTokenizer`) and carries the vocabulary as the asset
    `vocab.txt`. Signatures are described in `bert_serving_module.py`;
    outputs per model class in `task_adapters.py`.

    Args:
        model: a Keras `BertBackbone`, `BertPretrainer` or task model (any
            backend), or a str path to a `.keras` archive of one.
        output_dir: str. The TF Serving model base path.
        vocabulary: list of str or a str path to `vocab.txt`. Defaults to
            the backbone's `vocabulary` attribute.
        lower_case: bool or None. Uncased tokenization; None infers it from
            the vocabulary (cased vocabularies have upper-case tokens).
        seq_len: int or None. Requests are truncated to this many pieces;
            at most the backbone's `max_sequence_length`. None (the
            default): 128, or the backbone's `max_sequence_length` when it
            is shorter.
        version: int >= 0 or None. Defaults to 1 + the highest existing
            version.
        overwrite: bool. Replace `version` if it exists (else an error):
            the new one is written and checked beside it and takes its
            place in one rename, so a failed export leaves it as it was.
        top_k: int. Fill-mask candidates per `[MASK]` (pretrainers).
        max_masks: int. `[MASK]` tokens answered per request (pretrainers).
        max_answer_length, max_query_length, doc_stride, n_best_size: ints.
            Span labelers answer as SQuAD fine-tuning evaluates
            (`run_squad.py`): the question cut to `max_query_length`
            pieces, the context split into windows of the `seq_len` pieces
            left, `doc_stride` apart; the best of every window's
            `n_best_size` starts and ends, at most `max_answer_length`
            pieces long, with its start in its max-context window. Pass the
            values fine-tuning used (`data.max_seq_length` as `seq_len`,
            `data.doc_stride`, `data.max_query_length`, `squad.*`);
            `max_query_length` must leave room for a context piece
            (at most `seq_len - 4`).
        jit_compile: bool. The model's forward pass compiled by XLA
            (`BertServingModule`): faster on CPUs; stock TF Serving then
            needs `--xla_cpu_compilation_enabled=true`.
        tflite: None, or one of `converted_check.QUANTIZATIONS`
            ("float32", "dynamic_int8"): the version directory also holds
            `model.tflite`, the token-id model for TFLite / LiteRT
            (`tflite_export.py`), checked against `serve_token_ids` before
            anything is written.
        onnx: None, or one of `converted_check.QUANTIZATIONS`: likewise
            `model.onnx`, the token-id model for ONNX Runtime
            (`onnx_export.py`; needs tf2onnx, onnx and onnxruntime).

    Returns:
        str, the path of the version directory written.

    Example (`classifier` a fine-tuned `BertClassifier`):

        export_for_serving(classifier, "/models/sst2")  # "/models/sst2/1"
    """
    options = dict(
        seq_len=seq_len,
        top_k=top_k,
        max_masks=max_masks,
        max_answer_length=max_answer_length,
        max_query_length=max_query_length,
        doc_stride=doc_stride,
        n_best_size=n_best_size,
        jit_compile=jit_compile,
        tflite=tflite,
        onnx=onnx,
    )
    for name, value in options.items():
        if name == "seq_len" and value is None:  # The model's, once loaded.
            continue
        if name in ("tflite", "onnx"):
            if value not in (None, *QUANTIZATIONS):
                raise ExportError(
                    f"`{name}` must be None or one of {', '.join(QUANTIZATIONS)}. "
                    f"Received: {name}={value!r}"
                )
            continue
        if name == "jit_compile":
            if not isinstance(value, bool):
                raise ExportError(f"`jit_compile` must be a bool. Received: {value!r}")
            continue
        if not isinstance(value, int) or value < 1:
            raise ExportError(f"`{name}` must be a positive int. Received: {name}={value!r}")
    # Imported here: serving needs no tensorflow-text (CoreOpsBertTokenizer),
    # and `pipelines` imports it.
    from pipelines.limits import MIN_SEQ_LEN

    if seq_len is not None and seq_len < MIN_SEQ_LEN:
        raise ExportError(
            f"`seq_len` must be at least {MIN_SEQ_LEN} ([CLS] A [SEP] B "
            f"[SEP]). Received: seq_len={seq_len}"
        )
    # TF Serving only loads versions named by non-negative integers.
    if version is not None and (
        isinstance(version, bool) or not isinstance(version, int) or version < 0
    ):
        raise ExportError(f"`version` must be a non-negative int. Received: version={version!r}")
    model_path = os.fspath(model) if isinstance(model, (str, os.PathLike)) else None
    # Checked here too, before a JAX/PyTorch process hands it to a child.
    problem = model_path and archive_problem(model_path)
    if problem:
        raise ExportError(f"{model_path}: {problem}")
    created = makedirs(output_dir)
    # Tracing the serving graph takes a while and prints nothing.
    logger.info("Exporting a TF Serving SavedModel into %s ...", output_dir)
    start = time.time()
    with removed_if_left_empty(output_dir, created):
        path = _export_version(
            model, model_path, output_dir, version, overwrite, vocabulary, lower_case, options
        )
    logger.info("Exported %s in %.0fs.", path, time.time() - start)
    return path


def _export_version(
    model, model_path, output_dir, version, overwrite, vocabulary, lower_case, options
):
    """`export_for_serving` once the arguments are checked and
    `output_dir` exists."""
    import keras

    version = next_version(output_dir) if version is None else version
    final_dir = os.path.join(output_dir, str(version))
    if tf.io.gfile.exists(final_dir) and not overwrite:
        raise FileExistsError(
            f"`version` must be new (--overwrite replaces it); {final_dir!r} already exists. "
            f"Received: version={version}"
        )
    if isinstance(vocabulary, (str, os.PathLike)):
        vocabulary = _read_vocabulary(vocabulary)

    if keras.backend.backend() != "tensorflow":
        if model_path is None:  # Else the child checks it, after loading.
            _check_span_options(model, _with_seq_len(model, options))
        return _export_in_subprocess(
            model_path or model, output_dir, version, overwrite, vocabulary, lower_case, options
        )
    if model_path:
        model = load_model(model_path)

    vocabulary = vocabulary or _backbone_of(model).vocabulary
    if not vocabulary:
        raise ExportError(
            "`vocabulary` must be given when the model carries none. "
            f"Received: vocabulary=None and {type(model).__name__} whose "
            "backbone.vocabulary is None"
        )
    vocabulary = [token.strip() for token in vocabulary]
    if lower_case is None:
        lower_case = infer_lower_case(vocabulary)
    options = _with_seq_len(model, options)
    seq_len = options["seq_len"]
    _check_span_options(model, options)
    backbone = _backbone_of(model)
    if seq_len > backbone.max_sequence_length:
        raise ExportError(
            "`seq_len` must be at most the backbone's max_sequence_length "
            f"({backbone.max_sequence_length}). Received: seq_len={seq_len}"
        )
    vocab_size = getattr(backbone, "vocabulary_size", len(vocabulary))
    if len(vocabulary) != vocab_size:
        raise ExportError(
            "`vocabulary` must have one token per embedding row. Received: "
            f"{len(vocabulary)} tokens for vocabulary_size={vocab_size}"
        )
    is_pretrainer = any(c.__name__ == "BertPretrainer" for c in type(model).__mro__)
    if is_pretrainer and options["top_k"] > vocab_size:
        raise ExportError(
            f"`top_k` must be at most the vocabulary size ({vocab_size}). "
            f"Received: top_k={options['top_k']}"
        )
    missing = [t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if t not in vocabulary]
    if missing:
        raise ExportError(
            f"`vocabulary` must contain {missing}. Received: "
            f"{len(vocabulary)} tokens starting {vocabulary[:5]}"
        )

    with atomic_directory(final_dir, last="saved_model.pb") as staging:
        _write_saved_model(model, staging, vocabulary, lower_case, options)
    return final_dir


# The pieces a request is truncated to when `seq_len` is not given.
DEFAULT_SEQ_LEN = 128


def _with_seq_len(model, options):
    """`options` with `seq_len` set: as given, or `DEFAULT_SEQ_LEN` capped
    at the backbone's `max_sequence_length`."""
    if options["seq_len"] is not None:
        return options
    positions = _backbone_of(model).max_sequence_length
    return {**options, "seq_len": min(DEFAULT_SEQ_LEN, positions)}


def _check_span_options(model, options):
    """Span labelers: the question must leave a window of context."""
    if not any(c.__name__ == "BertSpanLabeler" for c in type(model).__mro__):
        return
    seq_len, max_query_length = options["seq_len"], options["max_query_length"]
    if max_query_length > seq_len - 4:
        raise ExportError(
            "`max_query_length` must leave room for a context piece in "
            "`[CLS] question [SEP] context [SEP]` (at most seq_len - 4). "
            f"Received: max_query_length={max_query_length}, seq_len={seq_len}"
        )


def _write_saved_model(model, path, vocabulary, lower_case, options):
    from keras_bert.serving.bert_serving_module import BertServingModule

    options = dict(options)
    tflite, onnx = options.pop("tflite"), options.pop("onnx")
    # The asset's source file lives outside the version directory.
    with tempfile.TemporaryDirectory() as scratch:
        vocab_file = os.path.join(scratch, "vocab.txt")
        with open(vocab_file, "w", encoding="utf-8") as f:
            f.write("".join(token + "\n" for token in vocabulary))
        module = BertServingModule(model, vocabulary, vocab_file, lower_case, **options)
        signatures = module.signatures()
        # Smoke-test the raw-text signature before anything is written.
        smoke = tf.constant(SMOKE_TEXTS)
        default = signatures["serving_default"]
        args = {"text_a": smoke}
        kind = module.adapter.text_inputs
        if kind == "choices":
            args["text_b"] = tf.reshape(
                tf.repeat(smoke, model.num_choices), [-1, model.num_choices]
            )
        elif kind != "single":
            args["text_b"] = smoke
        default(**args)
        converted = {}  # File name -> contents, each checked before any is written.
        if tflite:
            converted[TFLITE_FILE] = tflite_flatbuffer(module, tflite)
        if onnx:
            converted[ONNX_FILE] = onnx_model(module, onnx)
        tf.saved_model.save(module, path, signatures=signatures)
        for name, content in converted.items():
            with tf.io.gfile.GFile(os.path.join(path, name), "wb") as f:
                f.write(content)


def _export_in_subprocess(model, output_dir, version, overwrite, vocabulary, lower_case, options):
    """Re-runs the export under the TensorFlow backend in a child process."""
    with tempfile.TemporaryDirectory() as scratch:
        if isinstance(model, str):
            model_path = model
        else:
            model_path = os.path.join(scratch, "model.keras")
            model.save(model_path)
        command = [
            sys.executable,
            "-m",
            "keras_bert.export",
            "--model",
            model_path,
            "--output",
            output_dir,
            "--version",
            str(version),
        ]
        if overwrite:
            command.append("--overwrite")
        if vocabulary is not None:
            vocab_file = os.path.join(scratch, "vocab.txt")
            with open(vocab_file, "w", encoding="utf-8") as f:
                f.write("".join(token + "\n" for token in vocabulary))
            command += ["--vocab", vocab_file]
        if lower_case is not None:
            command += ["--lower_case" if lower_case else "--cased"]
        for name, value in options.items():
            if value is None:  # The default, resolved by the child.
                continue
            if isinstance(value, bool):  # A switch.
                command += [f"--{name}"] if value else []
            else:
                command += [f"--{name}", str(value)]
        env = dict(os.environ, KERAS_BACKEND="tensorflow")
        result = subprocess.run(command, env=env, capture_output=True, text=True)
    prefix = "python -m keras_bert.export: error: "
    user_errors = [
        line[len(prefix) :] for line in result.stderr.splitlines() if line.startswith(prefix)
    ]
    if result.returncode == 2 and user_errors:  # Bad arguments: the child's line.
        raise ExportError(user_errors[-1])
    if result.returncode == 1 and "no space left on device" in result.stderr.lower():
        # The child's full disk, raised here as one so the caller's harness
        # reports it as such.
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), output_dir)
    if result.returncode:
        raise RuntimeError(
            f"Export under the TensorFlow backend failed (exit "
            f"{result.returncode}):\n{result.stderr[-4000:]}"
        )
    return os.path.join(output_dir, str(version))
