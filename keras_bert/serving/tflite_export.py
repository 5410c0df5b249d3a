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

import tensorflow as tf

from keras_bert.serving.converted_check import check_answers, check_quantization

TFLITE_FILE = "model.tflite"


def tflite_flatbuffer(module, quantization):
    """`module`'s token-id model converted to TFLite, its answers checked
    on a smoke batch against `serve_token_ids`'.

    Args:
        module: the `BertServingModule` the SavedModel is saved from.
        quantization: one of `converted_check.QUANTIZATIONS`.

    Returns:
        bytes, the contents of a `.tflite` file.
    """
    check_quantization("tflite", quantization)
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
    check_answers(
        "TFLite", _run_in_interpreter(flatbuffer), function, module, quantization == "float32"
    )
    return flatbuffer


def _run_in_interpreter(flatbuffer):
    """The flatbuffer's `serve_token_ids`, run by TensorFlow's TFLite
    interpreter."""
    with warnings.catch_warnings():
        # tf.lite.Interpreter's notice that LiteRT replaces it: servers run
        # LiteRT (tests/serving/test_converted_exports.py); the pinned
        # TensorFlow's interpreter is the same runtime.
        warnings.simplefilter("ignore")
        interpreter = tf.lite.Interpreter(model_content=flatbuffer)
    runner = interpreter.get_signature_runner("serve_token_ids")
    return lambda inputs: runner(**inputs)
