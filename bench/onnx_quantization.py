"""ONNX Runtime's dynamic int8 quantisation, each of its weight options
against the float32 file, on SST-2 dev: what `export --onnx dynamic_int8`
should pick.

    KERAS_BACKEND=tensorflow python -m bench.onnx_quantization --run RUN_DIR [--run ...] \
        [--dev ../shared/data/glue/SST-2/dev.tsv] [--calls 200] [--rounds 3]

Each `--run` (a fine-tuned SST-2 `BertClassifier`) is exported once with
`--onnx float32` (`export_for_serving`); that file is quantised by
`onnxruntime.quantization.quantize_dynamic` with int8 weights in full range,
in 7 bits (`reduce_range`), in 7 bits with a scale per output column
(`per_channel`, what the export writes), and with uint8 weights. Reported
per file: SST-2 dev accuracy from the export's packed ids, and batch-1 p50
over `--calls` calls (the files take turns for `--rounds` rounds; each
one's best round). Never run by the test suite.
"""

import argparse
import logging
import os
import statistics
import tempfile

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: E402

from bench.common import markdown_table, processor  # noqa: E402
from bench.distillation_serving import latencies, load, onnx_session  # noqa: E402
from bench.serving import paragraphs  # noqa: E402
from bench.serving_formats import DEV, SEQ_LEN, dev_set, packed_ids, predictions  # noqa: E402
from keras_bert.serving import export_for_serving  # noqa: E402

CHOICES = {
    "float32 (no quantisation)": None,
    "int8 weights, full range": dict(weight_type=QuantType.QInt8),
    "int8 weights, 7 bits": dict(weight_type=QuantType.QInt8, reduce_range=True),
    "int8 weights, 7 bits, per column (the export's)": dict(
        weight_type=QuantType.QInt8, reduce_range=True, per_channel=True
    ),
    "uint8 weights": dict(weight_type=QuantType.QUInt8),
}


def sessions(model, folder):
    """choice -> an onnxruntime session on all cores."""
    version = export_for_serving(
        model, os.path.join(folder, "export"), seq_len=SEQ_LEN, onnx="float32"
    )
    source = os.path.join(version, "model.onnx")
    found = {}
    for index, (choice, settings) in enumerate(CHOICES.items()):
        path = source
        if settings is not None:
            path = os.path.join(folder, f"{index}.onnx")
            logging.disable(logging.WARNING)  # Its pre-processing advice, every call.
            quantize_dynamic(source, path, **settings)
            logging.disable(logging.NOTSET)
        found[choice] = onnx_session(path)
    return found


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.onnx_quantization", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--run", action="append", required=True, help="a fine-tuned SST-2 run")
    parser.add_argument("--dev", default=os.path.join(DEV, "dev.tsv"))
    parser.add_argument("--calls", type=int, default=200, help="batch-1 calls timed a round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds the files alternate in")
    args = parser.parse_args()

    sentences, labels = dev_set(args.dev)
    scores, calls = {}, {}
    for run in args.run:
        model = load(run)
        folder = tempfile.mkdtemp()
        dev_ids = packed_ids(model, sentences, folder)
        timed = {k: v[:1] for k, v in packed_ids(model, paragraphs(1), folder).items()}
        for choice, session in sessions(model, folder).items():
            key = f"{os.path.basename(os.path.normpath(run))}: {choice}"
            logits = lambda ids, session=session: session.run(["logits"], ids)[0]  # noqa: E731
            predicted = predictions(logits, dev_ids, len(labels))
            scores[key] = 100 * float((predicted == labels).mean())
            calls[key] = lambda session=session, timed=timed: session.run(["logits"], timed)
    rounds = {key: [] for key in calls}
    for _ in range(args.rounds):
        for key, call in calls.items():
            rounds[key].append(statistics.median(latencies(call, args.calls)))
    rows = [[key, f"{scores[key]:.2f}", f"{1000 * min(rounds[key]):.2f}"] for key in calls]
    print(
        f"### ONNX dynamic int8 choices, seq_len {SEQ_LEN}, {processor()}: SST-2 dev "
        f"({len(labels)} sentences); batch 1 p50, the best of {args.rounds} rounds\n"
    )
    print(markdown_table(["run: weights", "SST-2 dev accuracy", "batch 1 p50 (ms)"], rows))
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
