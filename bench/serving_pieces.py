"""Where a served request's milliseconds go: the serving graph's pieces,
timed side by side for a teacher and its student.

    KERAS_BACKEND=tensorflow python -m bench.serving_pieces \
        [--teacher RUN_DIR] [--student RUN_DIR] [--calls 200] [--batches 5] [--rounds 3]

Models as `bench.distillation_serving`'s (default: a MiniLM-L6 classifier
and a BERT-Tiny one; speed depends on the architecture, not the weights).
Each model's `BertServingModule` (what `export` saves) is built in this
process, and these pieces of its graph are timed as tf.functions:

* `serve_text`: the whole raw-text signature (tokenize, pack, encoder, head);
* tokenize + pack: the raw text to packed (B, 128) ids alone;
* empty call: a tf.function taking the ids and returning one of them, the
  cost of calling a graph at all;
* encoder + head, Keras layers: the model called in a tf.function, the
  graph `export` wrote before the fused backbone;
* encoder + head, fused: `fused_backbone.fused_forward`, the graph it
  writes now (the same outputs, checked here within 1e-4);
* one GELU: a layer's feed-forward activation on its (B * 128, F) input,
  as `tf.nn.gelu` computes it (`Erfc`) and as the fused graph does (`Erf`).

Inputs: corpus paragraphs long enough to fill 128 pieces. The pieces take
turns for `--rounds` rounds and each piece's best round is reported (the
machine's other load moves all alike): batch 1 p50 over `--calls` calls,
batch 32 sentences/s from the median of `--batches` calls. Then the ratio
of the Keras graph's time to the fused one's.

Last, where the fused encoder's batch-1 call goes inside TensorFlow: its
calls traced by TensorFlow's profiler (`--calls` of them) and read back
from the trace, per call: the wall time, the kernels' summed time, and the
kernel types that take the most.
The wall time less the kernels' is what the runtime itself costs (op
dispatch, the executor), the part ONNX Runtime's fused kernels do not pay.
Never run by the test suite.
"""

import collections
import glob
import os
import statistics
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: E402

from bench.common import markdown_table, processor  # noqa: E402
from bench.distillation_serving import latencies, teacher_and_student  # noqa: E402
from bench.serving import paragraphs  # noqa: E402
from keras_bert.serving.bert_serving_module import BertServingModule  # noqa: E402
from keras_bert.serving.fused_backbone import exact_gelu, fused_forward  # noqa: E402

SEQ_LEN = 128
BATCHES = (1, 32)


def pieces(model, folder):
    """piece name -> {batch: a call}, for `model`'s serving graph."""
    vocabulary = model.backbone.vocabulary
    vocab_file = os.path.join(folder, f"vocab_{id(model)}.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("".join(token + "\n" for token in vocabulary))
    module = BertServingModule(model, vocabulary, vocab_file, lower_case=True, seq_len=SEQ_LEN)
    serve_text = module.signatures()["serve_text"]
    text = tf.TensorSpec([None], tf.string)
    pack = tf.function(lambda t: module.model_inputs(module.preprocess(t)), input_signature=[text])
    texts = paragraphs(max(BATCHES))
    texts = {b: tf.constant(texts[:b]) for b in BATCHES}
    ids = {b: pack(t) for b, t in texts.items()}
    for packed in ids.values():
        real = int(tf.reduce_min(tf.reduce_sum(packed["padding_mask"], 1)))
        assert real == SEQ_LEN, f"a paragraph fills {real} of {SEQ_LEN} pieces"
    spec = {k: tf.TensorSpec([None, None], tf.int32) for k in ids[1]}
    empty = tf.function(lambda x: x["token_ids"], input_signature=[spec])
    keras_graph = tf.function(
        lambda x: model(x, training=False), input_signature=[spec], autograph=False
    )
    fused_graph = tf.function(fused_forward(model), input_signature=[spec], autograph=False)
    for packed in ids.values():
        np.testing.assert_allclose(
            fused_graph(packed).numpy(), keras_graph(packed).numpy(), atol=1e-4
        )
    # The feed-forward activation of every layer, on its (B * T, F) input.
    width = model.backbone.intermediate_dim
    inner = {b: tf.random.normal([b * SEQ_LEN, width]) for b in BATCHES}
    gelu_erfc = tf.function(tf.nn.gelu)
    gelu_erf = tf.function(exact_gelu)
    return {
        "`serve_text` (raw text)": {
            b: (lambda t=t: serve_text(text_a=t)) for b, t in texts.items()
        },
        "tokenize + pack": {b: (lambda t=t: pack(t)) for b, t in texts.items()},
        "empty call (ids in)": {b: (lambda x=x: empty(x)) for b, x in ids.items()},
        "encoder + head, Keras layers": {b: (lambda x=x: keras_graph(x)) for b, x in ids.items()},
        "encoder + head, fused": {b: (lambda x=x: fused_graph(x)) for b, x in ids.items()},
        "one GELU, `tf.nn.gelu` (Erfc)": {b: (lambda x=x: gelu_erfc(x)) for b, x in inner.items()},
        "one GELU, the fused graph's (Erf)": {
            b: (lambda x=x: gelu_erf(x)) for b, x in inner.items()
        },
    }


def kernel_profile(call, calls, folder):
    """`(wall ms, kernel ms, {kernel type: ms})` per call of `call`, from
    TensorFlow's profiler trace of `calls` calls: the kernels are the
    trace's events named `<node>:<kernel type>`. (How many the trace holds
    varies from run to run with the machine's load, so no count is given.)"""
    call()
    logdir = tempfile.mkdtemp(dir=folder)
    tf.profiler.experimental.start(logdir)
    start = time.perf_counter()
    for _ in range(calls):
        call()
    wall = time.perf_counter() - start
    tf.profiler.experimental.stop()
    space = xplane_pb2.XSpace()
    (trace,) = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    with open(trace, "rb") as f:
        space.ParseFromString(f.read())
    by_type = collections.Counter()
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                # Not the runtime's `ExecutorState::Process`, `EagerLocalExecute: f`.
                if ":" in name and "::" not in name and ": " not in name:
                    by_type[name.rpartition(":")[2]] += event.duration_ps / 1e9 / calls
    return 1000 * wall / calls, sum(by_type.values()), by_type


def main():
    args, models = teacher_and_student("bench.serving_pieces", __doc__)
    folder = tempfile.mkdtemp()
    calls = {
        f"{name} {piece}": call
        for name, model in models.items()
        for piece, call in pieces(model, folder).items()
    }
    rounds = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, call in calls.items():
            rounds[name].append((latencies(call[1], args.calls), latencies(call[32], args.batches)))
    p50, per_second, rows = {}, {}, []
    for name, timed in rounds.items():
        p50[name] = 1000 * min(statistics.median(single) for single, _ in timed)
        per_second[name] = 32 / min(statistics.median(full) for _, full in timed)
        rows.append([name, f"{p50[name]:.2f}", f"{per_second[name]:.0f}"])
    print(
        f"### Serving pieces, seq_len {SEQ_LEN}, {processor()}: the best of {args.rounds} "
        f"rounds; batch 1 over {args.calls} calls, batch 32 over {args.batches}\n"
    )
    print(markdown_table(["piece", "batch 1 p50 (ms)", "batch 32 (sentences/s)"], rows))
    for name in models:
        keras_graph, fused = (f"{name} encoder + head, {g}" for g in ("Keras layers", "fused"))
        print(
            f"{name}: the fused encoder {p50[keras_graph] / p50[fused]:.2f}x faster at batch 1, "
            f"{per_second[fused] / per_second[keras_graph]:.2f}x the sentences/s at batch 32"
        )
    print("\n### Inside the fused encoder's batch-1 call, per call (TensorFlow's profiler)\n")
    rows = []
    for name in models:
        call = calls[f"{name} encoder + head, fused"][1]
        wall, kernel_ms, by_type = kernel_profile(call, args.calls, folder)
        top = ", ".join(f"{k} {ms:.2f}" for k, ms in by_type.most_common(5))
        rows.append([name, f"{wall:.2f}", f"{kernel_ms:.2f}", f"{wall - kernel_ms:.2f}", top])
    header = ["model", "wall ms", "kernel ms", "wall - kernels ms", "top kernels (ms)"]
    print(markdown_table(header, rows))
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
