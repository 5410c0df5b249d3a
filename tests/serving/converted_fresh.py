"""Runs exported `model.tflite` / `model.onnx` files in a process without
TensorFlow: LiteRT for the first, ONNX Runtime for the second.

    python tests/serving/converted_fresh.py REQUESTS.json RESULTS.json

REQUESTS.json is a list of {"path", "inputs"}: a file and the int32 inputs
(nested lists) of its `serve_token_ids` contract. RESULTS.json gets each
call's outputs by name, or {"error": message} when the runtime refuses the
call. Only the runtimes and numpy are imported: at the end neither
`tensorflow` nor `keras_bert` may be in `sys.modules`.
"""

import json
import sys

import numpy as np


def tflite_runner(path):
    from ai_edge_litert.interpreter import Interpreter

    return Interpreter(model_path=path).get_signature_runner("serve_token_ids")


def onnx_runner(path):
    import onnxruntime

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return lambda **inputs: dict(zip(names, session.run(None, inputs)))


def main(requests_path, results_path):
    with open(requests_path) as f:
        requests = json.load(f)
    results = []
    for request in requests:
        path = request["path"]
        runner = (onnx_runner if path.endswith(".onnx") else tflite_runner)(path)
        inputs = {k: np.array(v, np.int32) for k, v in request["inputs"].items()}
        try:
            outputs = runner(**inputs)
        except Exception as error:  # Each runtime raises its own class.
            results.append({"error": f"{type(error).__name__}: {error}"})
            continue
        results.append({k: v.tolist() for k, v in outputs.items()})
    leaked = sorted({"tensorflow", "keras_bert", "keras"} & set(sys.modules))
    assert not leaked, f"imported {leaked}"
    with open(results_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
