"""The token-id model as a TFLite flatbuffer, for TFLite / LiteRT servers.

TFLite runs no string ops, so the raw-text tokenizer stays in the
SavedModel: `model.tflite` is `serve_token_ids` alone, with its inputs
(`token_ids`, `segment_ids`, `padding_mask` int32 (B, T), (B, C, T) for
multiple choice, pretrainers' `mask_positions` (B, P)) and its outputs, in
a signature of that name. The client tokenizes with the run's vocabulary
(the SavedModel's `assets/vocab.txt`) and packs `[CLS] A [SEP] B [SEP]`
as `predict` does. Written by TensorFlow's own converter from the fused
serving graph (`fused_backbone.py`), which lowers to TFLite's builtin ops
only; LiteRT (`ai-edge-litert`) runs it with XNNPACK, no TensorFlow.

TFLite has no assertions: an id outside its table is refused by the
runtime's own gather bounds check (the invocation fails) rather than by a
message naming the input, as `serve_token_ids` does.
"""

import tempfile
import warnings

import numpy as np
import tensorflow as tf

from keras_bert.errors import ExportError

TFLITE_FILE = "model.tflite"
# float32: the SavedModel's answers (within 1e-4). dynamic_int8: weights
# stored and multiplied as int8, activations quantised per call; its
# accuracy cost is measured in BENCHMARKS.md#serving.
QUANTIZATIONS = ("float32", "dynamic_int8")
# The float32 flatbuffer answers as the SavedModel does, within this.
TOLERANCE = 1e-4


def tflite_flatbuffer(module, quantization):
    """`module`'s token-id model converted to TFLite, its answers checked
    on a smoke batch against `serve_token_ids`'.

    Args:
        module: the `BertServingModule` the SavedModel is saved from.
        quantization: one of `QUANTIZATIONS`.

    Returns:
        bytes, the contents of a `.tflite` file.
    """
    if quantization not in QUANTIZATIONS:
        raise ExportError(
            f"`tflite` must be one of {', '.join(QUANTIZATIONS)}. Received: {quantization!r}"
        )
    function = module.token_id_function(checked=False)
    # The converter reads signatures (their input and output names) only
    # from a SavedModel; this one holds the id model alone, no tokenizer.
    holder = tf.Module()
    holder.weights = list(function.variables)
    with tempfile.TemporaryDirectory() as scratch:
        tf.saved_model.save(holder, scratch, signatures={"serve_token_ids": function})
        converter = tf.lite.TFLiteConverter.from_saved_model(
            scratch, signature_keys=["serve_token_ids"]
        )
        if quantization == "dynamic_int8":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        flatbuffer = converter.convert()
    _check_answers(flatbuffer, function, module, quantization)
    return flatbuffer


def _smoke_ids(function, module):
    """Id inputs of every kind `function` takes: two rows of real-looking
    ids, the second padded."""
    rng = np.random.default_rng(0)
    specs = function.structured_input_signature[1]
    seq_len = module.seq_len
    shape = [2, *[d for d in specs["token_ids"].shape[1:-1]], seq_len]
    padding = np.ones(shape, np.int32)
    padding[1, ..., seq_len // 2 :] = 0
    vocabulary_size = len(module.tokenizer.vocabulary)
    inputs = {
        "token_ids": rng.integers(0, vocabulary_size, shape).astype(np.int32) * padding,
        "segment_ids": np.zeros(shape, np.int32),
        "padding_mask": padding,
    }
    if "mask_positions" in specs:
        inputs["mask_positions"] = np.array([[1, 2], [3, 0]], np.int32)
    return inputs


def _check_answers(flatbuffer, function, module, quantization):
    """Runs the flatbuffer in TensorFlow's TFLite interpreter on a smoke
    batch: the same outputs as the SavedModel's (float32: within
    `TOLERANCE`; int8: the same shapes, finite)."""
    inputs = _smoke_ids(function, module)
    expected = function(**{k: tf.constant(v) for k, v in inputs.items()})
    with warnings.catch_warnings():
        # tf.lite.Interpreter's notice that LiteRT replaces it: servers run
        # LiteRT (tests/serving/test_tflite_export.py); the pinned
        # TensorFlow's interpreter is the same runtime.
        warnings.simplefilter("ignore")
        interpreter = tf.lite.Interpreter(model_content=flatbuffer)
    answers = interpreter.get_signature_runner("serve_token_ids")(**inputs)
    for name, value in expected.items():
        value = value.numpy()
        got = answers.get(name)
        if got is None or got.shape != value.shape:
            raise ExportError(
                f"The TFLite model's output {name!r} is "
                f"{'missing' if got is None else got.shape} where serve_token_ids gives "
                f"{value.shape}; nothing was written"
            )
        if not np.all(np.isfinite(got[np.isfinite(value)])):
            raise ExportError(f"The TFLite model's output {name!r} is not finite")
        if quantization == "float32" and value.dtype.kind == "f":
            gap = float(np.max(np.abs(got - value), initial=0.0))
            if gap > TOLERANCE:
                raise ExportError(
                    f"The TFLite model's output {name!r} differs from serve_token_ids' by "
                    f"{gap:.2g} (more than {TOLERANCE}); nothing was written"
                )
        elif value.dtype.kind != "f" and quantization == "float32":
            if not np.array_equal(got, value):
                raise ExportError(
                    f"The TFLite model's output {name!r} differs from serve_token_ids'; "
                    "nothing was written"
                )
