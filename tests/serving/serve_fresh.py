"""Calls exported SavedModels in a process that has never seen tensorflow-text.

    python tests/serving/serve_fresh.py REQUESTS.json RESULTS.json

REQUESTS.json is a list of {"path", "signature", "inputs"}; string inputs
are lists of latin-1-decoded bytes (lossless, so invalid UTF-8 survives
JSON), numbers are nested lists. Only `tensorflow` is imported. Every op in
every graph must be registered in this process (core TensorFlow); at the end
`tensorflow_text` must be absent from `sys.modules`.
"""

import json
import sys

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import op_def_registry


def _tensor(value):
    array = np.array(value, dtype=object)
    if array.size and isinstance(array.flat[0], str):
        return tf.constant(np.vectorize(lambda s: s.encode("latin-1"), otypes=[object])(array))
    return tf.constant(np.array(value, dtype=np.int32))


def _jsonable(tensor):
    array = tensor.numpy()
    if array.dtype == object:
        return np.vectorize(lambda b: b.decode("latin-1"), otypes=[object])(array).tolist()
    return array.tolist()


def _op_types(path):
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(f"{path}/saved_model.pb", "rb") as f:
        proto.ParseFromString(f.read())
    ops, functions = set(), set()
    for meta in proto.meta_graphs:
        ops |= {node.op for node in meta.graph_def.node}
        for function in meta.graph_def.library.function:
            functions.add(function.signature.name)
            ops |= {node.op for node in function.node_def}
    return ops - functions  # A node may call a library function by name.


def main(requests_path, results_path):
    with open(requests_path) as f:
        requests = json.load(f)
    loaded, results = {}, []
    for request in requests:
        path = request["path"]
        if path not in loaded:
            unregistered = sorted(op for op in _op_types(path) if op_def_registry.get(op) is None)
            assert not unregistered, f"non-core ops: {unregistered}"
            loaded[path] = tf.saved_model.load(path)
        function = loaded[path].signatures[request["signature"]]
        inputs = {k: _tensor(v) for k, v in request["inputs"].items()}
        outputs = function(**inputs)
        results.append({k: _jsonable(v) for k, v in outputs.items()})
    assert "tensorflow_text" not in sys.modules, "tensorflow_text was imported"
    with open(results_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
