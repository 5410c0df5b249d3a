"""Runs `model.tflite` files with LiteRT in a process without TensorFlow.

    python tests/serving/tflite_fresh.py REQUESTS.json RESULTS.json

REQUESTS.json is a list of {"path", "inputs"}: a flatbuffer and the int32
inputs (nested lists) of its `serve_token_ids` signature. RESULTS.json gets
each call's outputs, or {"error": message} when the runtime refuses the
call. Only `ai_edge_litert` and numpy are imported: at the end neither
`tensorflow` nor `keras_bert` may be in `sys.modules`.
"""

import json
import sys

import numpy as np
from ai_edge_litert.interpreter import Interpreter


def main(requests_path, results_path):
    with open(requests_path) as f:
        requests = json.load(f)
    results = []
    for request in requests:
        runner = Interpreter(model_path=request["path"]).get_signature_runner("serve_token_ids")
        inputs = {k: np.array(v, np.int32) for k, v in request["inputs"].items()}
        try:
            outputs = runner(**inputs)
        except (RuntimeError, ValueError) as error:
            results.append({"error": str(error)})
            continue
        results.append({k: v.tolist() for k, v in outputs.items()})
    leaked = sorted({"tensorflow", "keras_bert", "keras"} & set(sys.modules))
    assert not leaked, f"imported {leaked}"
    with open(results_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
