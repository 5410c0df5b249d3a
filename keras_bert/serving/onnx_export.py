"""The token-id model as an ONNX file, for ONNX Runtime servers.

ONNX Runtime's BERT tokenizer lives in an extension package servers rarely
load, so the raw-text tokenizer stays in the SavedModel and `model.onnx`
is `serve_token_ids` alone, with the same contract as `model.tflite`
(`tflite_export.py`): inputs `token_ids`, `segment_ids`, `padding_mask`
int32 (B, T) ((B, C, T) for multiple choice; pretrainers' `mask_positions`
(B, P)), outputs named as the signature's. The client tokenizes with the
SavedModel's `assets/vocab.txt` and packs `[CLS] A [SEP] B [SEP]` as
`predict` does. Converted by tf2onnx from the fused serving graph
(`fused_backbone.py`: GELU through `Erf`, which every opset has), and for
`dynamic_int8` quantised by ONNX Runtime's own `quantize_dynamic`.

tf2onnx, onnx and onnxruntime are optional (requirements-dev.txt pins
them): an export without `onnx` imports none of them.
"""

import contextlib
import io
import logging
import os
import tempfile

import numpy as np
import tensorflow as tf

from keras_bert.errors import ExportError
from keras_bert.serving.converted_check import check_answers, check_quantization

ONNX_FILE = "model.onnx"
# Opset 17 (ONNX 1.12, 2022): LayerNormalization's opset, run by every
# ONNX Runtime since 1.14.
OPSET = 17
PACKAGES = "tf2onnx==1.17.0 onnx==1.23.2 onnxruntime==1.32.0"


def onnx_model(module, quantization):
    """`module`'s token-id model converted to ONNX, its answers checked on
    a smoke batch against `serve_token_ids`' by ONNX Runtime.

    Args:
        module: the `BertServingModule` the SavedModel is saved from.
        quantization: one of `converted_check.QUANTIZATIONS`.

    Returns:
        bytes, the contents of a `.onnx` file.
    """
    check_quantization("onnx", quantization)
    try:
        import onnxruntime
        import tf2onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as error:
        raise ExportError(
            f"The ONNX export needs tf2onnx, onnx and onnxruntime ({error}): pip install {PACKAGES}"
        ) from None
    function = module.token_id_function(checked=False)
    specs = function.structured_input_signature[1]
    names = sorted(specs)
    # tf2onnx takes positional specs; their names become the ONNX inputs'.
    signature = [tf.TensorSpec(specs[n].shape, specs[n].dtype, name=n) for n in names]
    positional = tf.function(
        lambda *args: function(**dict(zip(names, args))), input_signature=signature
    )
    tf2onnx.logging.set_level(logging.ERROR)
    # tf2onnx prints its graph rewrites' notices; a user's console gets the
    # export's one line.
    with contextlib.redirect_stdout(io.StringIO()):
        proto, _ = tf2onnx.convert.from_function(
            positional,
            signature,
            opset=OPSET,
            custom_op_handlers={"Erfc": (_erfc_as_one_minus_erf, [])},
        )
    content = proto.SerializeToString()
    if quantization == "dynamic_int8":
        with tempfile.TemporaryDirectory() as scratch:
            target = os.path.join(scratch, ONNX_FILE)  # quantize_dynamic writes only files.
            # Its advice to run its shape pre-processing first is logged
            # as a warning on the root logger, every time: not the user's.
            logging.disable(logging.WARNING)
            try:
                # 7-bit weights (`reduce_range`), a scale per output column
                # (`per_channel`): full-range int8 x uint8 products saturate
                # on x86 processors without VNNI (the Zen 3), and a file is
                # served on processors its exporter does not know. Each
                # choice's SST-2 cost: BENCHMARKS.md#serving.
                quantize_dynamic(
                    proto,
                    target,
                    weight_type=QuantType.QInt8,
                    reduce_range=True,
                    per_channel=True,
                )
            finally:
                logging.disable(logging.NOTSET)
            with open(target, "rb") as f:
                content = f.read()
    session = onnxruntime.InferenceSession(content, providers=["CPUExecutionProvider"])

    def run(inputs):
        outputs = session.run(None, inputs)
        return {o.name: v for o, v in zip(session.get_outputs(), outputs)}

    check_answers("ONNX", run, function, module, quantization == "float32")
    return content


def _erfc_as_one_minus_erf(graph, node, name, args):
    """tf2onnx's handler for TensorFlow's `Erfc`, which `tf.nn.gelu` (the
    task heads' exact GELU) computes with: no ONNX opset has `Erfc` and
    tf2onnx 1.17 maps none, so it becomes `1 - Erf(x)`."""
    from onnx import helper
    from tf2onnx import utils

    node.type = "Erf"
    dtype = helper.tensor_dtype_to_np_dtype(graph.get_dtype(node.output[0]))
    one = graph.make_const(utils.make_name(f"{name}_one"), np.array(1, dtype))
    graph.insert_new_node_on_output("Sub", node.output[0], inputs=[one.output[0], node.output[0]])
