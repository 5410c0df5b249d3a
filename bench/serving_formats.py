"""What each serving format costs per request, and what dynamic int8 costs
in accuracy, side by side.

    KERAS_BACKEND=tensorflow python -m bench.serving_formats --run RUN_DIR [--run ...] \
        [--dev ../shared/data/glue/SST-2/dev.tsv] [--calls 200] [--batches 5] [--rounds 3]

Each `--run` is a fine-tuned SST-2 run folder (a `BertClassifier`). It is
exported twice, as `python -m keras_bert.export --tflite float32 --onnx
float32` and `--tflite dynamic_int8 --onnx dynamic_int8` write it
(`export_for_serving`), and these are timed, taking turns for `--rounds` rounds (each one's best round reported;
the machine's other load moves all alike):

* SavedModel `serve_text`: raw text in (the export's own tokenizer);
* SavedModel `serve_token_ids`: ids in;
* TFLite float32 and dynamic int8: the same ids through `model.tflite`,
  run by LiteRT (`ai_edge_litert`, XNNPACK) on all cores;
* ONNX float32 and dynamic int8: the same ids through `model.onnx`, run
  by ONNX Runtime on all cores.

Timed inputs: corpus paragraphs long enough to fill 128 pieces (the
export's `seq_len`), as raw text or as the export's tokenizer packs them.
Batch 1: p50 over `--calls` calls; batch 32: sentences/s from the median
of `--batches` calls. Accuracy: every dev sentence through each format,
from the same ids (`serve_text`: from its text). Never run by the test
suite.
"""

import argparse
import csv
import os
import statistics
import tempfile

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from ai_edge_litert.interpreter import Interpreter  # noqa: E402

from bench.common import markdown_table, processor  # noqa: E402
from bench.distillation_serving import latencies, load, onnx_session  # noqa: E402
from bench.serving import paragraphs  # noqa: E402
from keras_bert.serving import export_for_serving  # noqa: E402
from keras_bert.serving.bert_serving_module import BertServingModule  # noqa: E402

SEQ_LEN = 128
BATCHES = (1, 32)
DEV = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "glue", "SST-2")


def dev_set(path):
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [r["sentence"] for r in rows], np.array([int(r["label"]) for r in rows])


def packed_ids(model, sentences, folder):
    """The dev sentences as the export's tokenizer packs them, (N, 128)
    int32 each: what a client of `serve_token_ids` sends."""
    vocabulary = model.backbone.vocabulary
    vocab_file = os.path.join(folder, "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("".join(token + "\n" for token in vocabulary))
    module = BertServingModule(model, vocabulary, vocab_file, lower_case=True, seq_len=SEQ_LEN)
    features = module.model_inputs(module.preprocess(tf.constant(sentences)))
    # Padded to the full length, as a fixed-shape client sends them.
    return {
        k: tf.pad(v, [[0, 0], [0, SEQ_LEN - tf.shape(v)[1]]]).numpy() for k, v in features.items()
    }


def litert_runner(path):
    """`serve_token_ids` logits of the flatbuffer at `path`."""
    runner = Interpreter(model_path=path, num_threads=os.cpu_count()).get_signature_runner(
        "serve_token_ids"
    )
    return lambda ids: runner(**ids)["logits"]


def formats(model, folder):
    """`[(format, takes raw text, fn(texts or ids) -> logits or label ids)]`
    for `model`, exported into `folder`."""
    exported = {
        quantization: export_for_serving(
            model,
            os.path.join(folder, quantization),
            seq_len=SEQ_LEN,
            tflite=quantization,
            onnx=quantization,
        )
        for quantization in ("float32", "dynamic_int8")
    }
    saved_model = tf.saved_model.load(exported["float32"])
    serve_text = saved_model.signatures["serve_text"]
    serve_ids = saved_model.signatures["serve_token_ids"]
    found = [
        (
            "SavedModel `serve_text` (raw text)",
            True,
            lambda texts: serve_text(text_a=tf.constant(texts))["label_id"].numpy(),
        ),
        (
            "SavedModel `serve_token_ids`",
            False,
            lambda ids: serve_ids(**{k: tf.constant(v) for k, v in ids.items()})["logits"].numpy(),
        ),
    ]
    for quantization in exported:
        path = os.path.join(exported[quantization], "model.tflite")
        # One interpreter per batch size: a resized input reallocates.
        runners = {b: litert_runner(path) for b in BATCHES}
        found.append(
            (
                f"TFLite {quantization.replace('_', ' ')} (LiteRT, ids in)",
                False,
                lambda ids, runners=runners: runners[1 if len(ids["token_ids"]) == 1 else 32](ids),
            )
        )
    for quantization, version in exported.items():
        session = onnx_session(os.path.join(version, "model.onnx"))
        found.append(
            (
                f"ONNX {quantization.replace('_', ' ')} (ONNX Runtime, ids in)",
                False,
                lambda ids, session=session: session.run(["logits"], ids)[0],
            )
        )
    return found


def predictions(call, inputs, count):
    """Label ids of `count` rows, 32 at a time."""
    found = []
    for start in range(0, count, 32):
        out = call(take(inputs, start, start + 32))
        found.append(out if out.ndim == 1 else out.argmax(-1))
    return np.concatenate(found)


def bound(call, inputs):
    return lambda: call(inputs)


def take(inputs, start, stop):
    """Rows `start:stop` of a text list or an id dict."""
    if isinstance(inputs, list):
        return inputs[start:stop]
    return {k: v[start:stop] for k, v in inputs.items()}


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.serving_formats", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--run", action="append", required=True, help="a fine-tuned SST-2 run")
    parser.add_argument("--dev", default=os.path.join(DEV, "dev.tsv"))
    parser.add_argument("--calls", type=int, default=200, help="batch-1 calls timed a round")
    parser.add_argument("--batches", type=int, default=5, help="batch-32 calls timed a round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds the formats alternate in")
    args = parser.parse_args()

    sentences, labels = dev_set(args.dev)
    texts = paragraphs(max(BATCHES))  # Long enough to fill 128 pieces.
    folder = tempfile.mkdtemp()
    calls, scores = {}, {}
    for run in args.run:
        model = load(run)
        run_folder = tempfile.mkdtemp(dir=folder)
        dev_ids, ids = (packed_ids(model, t, run_folder) for t in (sentences, texts))
        for name, takes_text, call in formats(model, run_folder):
            key = f"{os.path.basename(os.path.normpath(run))}: {name}"
            dev = sentences if takes_text else dev_ids
            scores[key] = float((predictions(call, dev, len(labels)) == labels).mean())
            timed = texts if takes_text else ids
            calls[key] = {b: bound(call, take(timed, 0, b)) for b in BATCHES}
    rounds = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, call in calls.items():
            rounds[name].append((latencies(call[1], args.calls), latencies(call[32], args.batches)))
    rows = []
    for name, timed in rounds.items():
        p50 = 1000 * min(statistics.median(single) for single, _ in timed)
        per_second = 32 / min(statistics.median(full) for _, full in timed)
        rows.append([name, f"{p50:.2f}", f"{per_second:.0f}", f"{100 * scores[name]:.2f}"])
    print(
        f"### Serving formats, seq_len {SEQ_LEN}, {processor()}: the best of {args.rounds} "
        f"rounds; batch 1 over {args.calls} calls, batch 32 over {args.batches}; "
        f"SST-2 dev ({len(labels)} sentences)\n"
    )
    print(
        markdown_table(
            ["run: format", "batch 1 p50 (ms)", "batch 32 (sentences/s)", "SST-2 dev accuracy"],
            rows,
        )
    )
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
