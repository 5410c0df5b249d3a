"""The check every converted format passes before an export writes it: its
answers to a smoke batch of ids are `serve_token_ids`' own.

A converter (TFLite's, tf2onnx) rewrites the graph; a rewrite that changes
an answer must stop the export, not reach a server. float32 files answer
within `TOLERANCE`; quantised ones with the same names, shapes and finite
values (their accuracy cost is measured in BENCHMARKS.md#serving).
"""

import numpy as np
import tensorflow as tf

from keras_bert.errors import ExportError

# What a converted file may be: float32, the SavedModel's answers (within
# `TOLERANCE`); dynamic_int8, weights stored and multiplied as int8,
# activations quantised per call (accuracy cost: BENCHMARKS.md#serving).
QUANTIZATIONS = ("float32", "dynamic_int8")
# A float32 conversion answers as the SavedModel does, within this.
TOLERANCE = 1e-4


def check_quantization(format_name, quantization):
    """Raises `ExportError` unless `quantization` is one of `QUANTIZATIONS`
    (`format_name`: the export option, "tflite" or "onnx")."""
    if quantization not in QUANTIZATIONS:
        raise ExportError(
            f"`{format_name}` must be one of {', '.join(QUANTIZATIONS)}. Received: {quantization!r}"
        )


def smoke_ids(function, module):
    """Id inputs of every kind `function` (a `serve_token_ids` concrete
    function) takes, as int32 numpy arrays: two rows of real-looking ids,
    the second padded."""
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


def check_answers(format_name, run, function, module, exact):
    """Raises `ExportError` unless `run(inputs) -> {name: array}` answers
    the smoke batch as `function` does.

    Args:
        format_name: str, the format's name in the message ("TFLite").
        run: the converted model, called on `smoke_ids`' inputs.
        function: the `serve_token_ids` concrete function converted.
        module: the `BertServingModule` it comes from.
        exact: bool. float32 conversions: every output equal (floats
            within `TOLERANCE`); quantised ones: names, shapes, finiteness.
    """
    inputs = smoke_ids(function, module)
    expected = function(**{k: tf.constant(v) for k, v in inputs.items()})
    answers = run(inputs)
    for name, value in expected.items():
        value = value.numpy()
        got = answers.get(name)
        if got is None or got.shape != value.shape:
            raise ExportError(
                f"The {format_name} model's output {name!r} is "
                f"{'missing' if got is None else got.shape} where serve_token_ids gives "
                f"{value.shape}; nothing was written"
            )
        if not np.all(np.isfinite(got[np.isfinite(value)])):
            raise ExportError(f"The {format_name} model's output {name!r} is not finite")
        if not exact:
            continue
        if value.dtype.kind == "f":
            gap = float(np.max(np.abs(got - value), initial=0.0))
            if gap > TOLERANCE:
                raise ExportError(
                    f"The {format_name} model's output {name!r} differs from serve_token_ids' by "
                    f"{gap:.2g} (more than {TOLERANCE}); nothing was written"
                )
        elif not np.array_equal(got, value):
            raise ExportError(
                f"The {format_name} model's output {name!r} differs from serve_token_ids'; "
                "nothing was written"
            )
