"""Serving latency of an exported SavedModel versus the Keras model, and the
cost of core-op tokenization versus tensorflow-text's.

    KERAS_BACKEND=tensorflow python -m bench.serving \
        [--config configs/model/bert_small.yaml] [--repeats 5]

Everything runs side by side in this one process on the same inputs: real
corpus paragraphs long enough to fill seq_len=128. Prints markdown tables
(milliseconds, min / median over `--repeats` timed calls after one warm-up).
"""

import argparse
import glob
import os
import statistics
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
import yaml  # noqa: E402

import pipelines  # noqa: E402
from bench.common import ROOT, VOCAB, markdown_table  # noqa: E402
from keras_bert import BertBackbone  # noqa: E402
from keras_bert.serving import CoreOpsBertTokenizer, export_for_serving  # noqa: E402

CORPUS = os.path.join(ROOT, "data", "corpus", "*", "*")  # the bundled books
SEQ_LEN = 128


def timed(fn, repeats):
    fn()  # Warm-up: tracing, table initialisation, allocator.
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        tf.nest.map_structure(lambda x: x.numpy() if hasattr(x, "numpy") else x, out)
        times.append(1000 * (time.perf_counter() - start))
    return min(times), statistics.median(times)


def paragraphs(count):
    """Corpus paragraphs of >= 600 characters (fill 128 pieces)."""
    found = []
    for path in sorted(glob.glob(CORPUS)):
        with open(path, encoding="utf-8") as f:
            for block in f.read().split("\n\n"):
                block = " ".join(block.split())
                if len(block) >= 600:
                    found.append(block)
                if len(found) == count:
                    return found
    return found


def corpus_lines(count):
    lines = []
    for path in sorted(glob.glob(CORPUS)):
        with open(path, encoding="utf-8") as f:
            lines += [line for line in f.read().splitlines() if line.strip()]
    return lines[:count]


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.serving", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--config", default=os.path.join(ROOT, "configs", "model", "bert_small.yaml")
    )
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    with open(args.config) as f:
        config = yaml.safe_load(f)
    with open(VOCAB, encoding="utf-8") as f:
        vocabulary = f.read().splitlines()
    backbone = BertBackbone(**config)
    backbone.vocabulary = vocabulary
    export_dir = tempfile.mkdtemp()
    start = time.perf_counter()
    path = export_for_serving(backbone, export_dir, seq_len=SEQ_LEN)
    export_seconds = time.perf_counter() - start
    served = tf.saved_model.load(path)
    serve_text = served.signatures["serve_text"]
    serve_ids = served.signatures["serve_token_ids"]
    keras_graph = tf.function(lambda x: backbone(x, training=False))

    texts = paragraphs(32)
    results = {}
    for batch in (1, 32):
        text = tf.constant(texts[:batch])
        features = serve_text(text_a=text)  # Same ids for every path.
        ids = {
            "token_ids": tf.cast(features["token_ids"], tf.int32),
            "segment_ids": tf.zeros_like(features["token_ids"]),
            "padding_mask": features["padding_mask"],
        }
        assert int(tf.reduce_min(tf.reduce_sum(ids["padding_mask"], 1))) == SEQ_LEN
        results[("Keras model, eager call (ids)", batch)] = timed(
            lambda: backbone(ids, training=False), args.repeats
        )
        results[("Keras model in tf.function (ids)", batch)] = timed(
            lambda: keras_graph(ids), args.repeats
        )
        results[("SavedModel `serve_token_ids` (ids)", batch)] = timed(
            lambda: serve_ids(**ids), args.repeats
        )
        results[("SavedModel `serve_text` (raw text: tokenize + pack + model)", batch)] = timed(
            lambda: serve_text(text_a=text), args.repeats
        )
    rows = [
        f"### Serving latency, {os.path.basename(args.config)}, seq_len "
        f"{SEQ_LEN} (ms, min / median of {args.repeats})",
        "",
        markdown_table(
            ["path", "batch 1", "batch 32"],
            [
                [name]
                + [f"{results[(name, b)][0]:.1f} / {results[(name, b)][1]:.1f}" for b in (1, 32)]
                for name in dict.fromkeys(k for k, _ in results)
            ],
        ),
    ]
    rows += [
        "",
        f"Export (`export_for_serving`, incl. Unicode tables and tracing): {export_seconds:.1f} s",
        "",
    ]

    core = CoreOpsBertTokenizer(vocabulary)
    core_fn = tf.function(lambda x: core.tokenize(x)["token_ids"], autograph=False)
    tf_text = pipelines.BertTokenizer(VOCAB)
    tf_text_fn = tf.function(lambda x: tf_text.tokenize(x), autograph=False)
    lines = corpus_lines(4096)
    tokenization = []
    for name, batch in (
        ("1 paragraph", texts[:1]),
        ("32 paragraphs", texts),
        ("4096 corpus lines", lines),
    ):
        x = tf.constant(batch)
        assert core_fn(x).to_list() == tf_text_fn(x).to_list()
        a = timed(lambda: core_fn(x), args.repeats)
        b = timed(lambda: tf_text_fn(x), args.repeats)
        tokenization.append(
            [name, f"{a[0]:.1f} / {a[1]:.1f}", f"{b[0]:.1f} / {b[1]:.1f}", f"{a[1] / b[1]:.1f}x"]
        )
    rows += [
        f"### Tokenization (ms, min / median of {args.repeats})",
        "",
        markdown_table(
            [
                "input",
                "core ops (`CoreOpsBertTokenizer`)",
                "tensorflow-text (`pipelines.BertTokenizer`)",
                "ratio",
            ],
            tokenization,
        ),
    ]
    print("\n".join(rows))
    print(f"\nload average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
