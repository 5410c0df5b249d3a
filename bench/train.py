"""Pre-training step throughput, side by side: keras_bert vs keras-hub vs HF.

    python bench/train.py [--configs tiny:32:128,tiny:128:32,mini:128,base:512]
        [--backends tensorflow,jax] [--steps 5] [--batch 8]
        [--bench_python .venv-bench/bin/python]

`--configs` items are size:tokens[:batch] (batch defaults to `--batch` at
128 tokens or fewer, a quarter of it above). For each it times full
training steps (forward, backward, AdamW update, global-norm clipping) on
random token ids of a fixed shape, each framework in its own subprocess
(so peak memory is per configuration), in float32 and `mixed_bfloat16`:

* `keras_bert`: `BertPretrainer` (MLM at P = 0.15·T positions + NSP),
  compiled as `keras_bert.training` does it, on each Keras backend in
  `--backends`, with BERT's attention dropout 0.1 and with 0 ("fused": the
  backend's `dot_product_attention`);
* keras-hub `BertMaskedLM` (MLM at the same P positions, no NSP head),
  `jit_compile` as for keras_bert, on the same backends;
* Hugging Face `BertForPreTraining` (MLM logits at every position, as HF
  computes them, + NSP), torch eager (bfloat16 by `torch.autocast`), in
  the benchmark-only virtualenv `--bench_python`.

Reported: sequences/s, tokens/s, model-FLOPs utilisation (the same useful
FLOPs for every framework: 6 x dense parameters x tokens + attention +
the MLM decoder at P positions, divided by step time and by a float32 /
bfloat16 matmul peak measured by TensorFlow in this run) and peak RSS.
Never run by the test suite.
"""

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = {  # name: (layers, hidden, heads)
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "base": (12, 768, 12),
}
VOCAB = 30522


def model_flops_per_sequence(size, seq_len, predictions):
    """Training FLOPs (3 x forward) of the useful BERT computation."""
    layers, hidden, _ = SIZES[size]
    inter = 4 * hidden
    dense = layers * (4 * hidden * hidden + 2 * hidden * inter)
    attention = layers * 4 * seq_len * seq_len * hidden  # QK^T and AV
    forward = (2 * dense * seq_len + attention
               + 2 * predictions * (hidden * hidden + hidden * VOCAB)
               + 2 * hidden * hidden + 2 * hidden * 2)  # pooler + NSP
    return 3 * forward


def random_batch(batch, seq_len, predictions, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    positions = np.sort(np.stack([
        rng.choice(seq_len - 1, predictions, replace=False) + 1
        for _ in range(batch)]), axis=1).astype("int32")
    return {
        "token_ids": rng.integers(1000, VOCAB, (batch, seq_len)).astype("int32"),
        "segment_ids": (np.arange(seq_len)[None] >= seq_len // 2).repeat(
            batch, 0).astype("int32"),
        "padding_mask": np.ones((batch, seq_len), "int32"),
        "mask_positions": positions,
        "mlm_labels": rng.integers(1000, VOCAB, (batch, predictions)).astype("int32"),
        "nsp_labels": rng.integers(0, 2, (batch,)).astype("int32"),
    }


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------- workers ---

def timed_steps(run_steps, steps, warmup, min_seconds):
    """Seconds per step: `warmup` untimed steps (compilation), a probe of
    `steps` to size the measurement, then one timed call of at least
    `min_seconds` (short measurements are noisy, and Keras' JAX trainer
    syncs its state back into the variables at the end of every `fit`)."""
    run_steps(warmup)
    start = time.perf_counter()
    run_steps(steps)
    probe = (time.perf_counter() - start) / steps
    timed = max(steps, math.ceil(min_seconds / probe))
    start = time.perf_counter()
    run_steps(timed)
    return (time.perf_counter() - start) / timed


def _keras_timing(model, dataset, args):
    def run_steps(n):
        model.fit(dataset, steps_per_epoch=n, epochs=1, verbose=0)

    return timed_steps(run_steps, args.steps, args.warmup, args.min_seconds)


def worker_keras_bert(args, precision):
    import keras
    import tensorflow as tf

    from keras_bert import BertBackbone, BertPretrainer
    from keras_bert.training import OptimizerConfig, compile_pretrainer
    from keras_bert.training import create_optimizer
    from keras_bert.training.pretraining import resolve_jit_compile

    layers, hidden, heads = SIZES[args.size]
    backbone = BertBackbone(VOCAB, layers, heads, hidden, 4 * hidden,
                            attention_dropout=args.attention_dropout,
                            dtype=precision)
    model = BertPretrainer(backbone)
    compile_pretrainer(
        model, create_optimizer(OptimizerConfig(warmup_steps=10), 1000),
        jit_compile=resolve_jit_compile(args.jit_compile))
    b = random_batch(args.batch, args.seq_len, args.predictions)
    features = {k: b[k] for k in ("token_ids", "segment_ids", "padding_mask",
                                  "mask_positions")}
    labels = {"mlm": b["mlm_labels"], "nsp": b["nsp_labels"]}
    weights = {"mlm": tf.ones(b["mlm_labels"].shape),
               "nsp": tf.ones(b["nsp_labels"].shape)}
    dataset = tf.data.Dataset.from_tensors((features, labels, weights)).repeat()
    return _keras_timing(model, dataset, args)


def worker_keras_hub(args, precision):
    import keras
    import keras_hub
    import tensorflow as tf

    from keras_bert.training.pretraining import resolve_jit_compile

    layers, hidden, heads = SIZES[args.size]
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=VOCAB, num_layers=layers, num_heads=heads,
        hidden_dim=hidden, intermediate_dim=4 * hidden,
        max_sequence_length=512, dtype=precision)
    model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
    optimizer = keras.optimizers.AdamW(1e-4, weight_decay=0.01, epsilon=1e-6,
                                       global_clipnorm=1.0)
    model.compile(optimizer=optimizer,
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True),
                  weighted_metrics=[],
                  jit_compile=resolve_jit_compile(args.jit_compile))
    b = random_batch(args.batch, args.seq_len, args.predictions)
    features = {k: b[k] for k in ("token_ids", "segment_ids", "padding_mask",
                                  "mask_positions")}
    dataset = tf.data.Dataset.from_tensors(
        (features, b["mlm_labels"], tf.ones(b["mlm_labels"].shape))).repeat()
    return _keras_timing(model, dataset, args)


def worker_hugging_face(args, precision):
    import torch
    from transformers import BertConfig, BertForPreTraining

    layers, hidden, heads = SIZES[args.size]
    config = BertConfig(vocab_size=VOCAB, hidden_size=hidden,
                        num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=4 * hidden)
    model = BertForPreTraining(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4,
                                  weight_decay=0.01, eps=1e-6)
    b = random_batch(args.batch, args.seq_len, args.predictions)
    labels = torch.full((args.batch, args.seq_len), -100, dtype=torch.long)
    labels.scatter_(1, torch.from_numpy(b["mask_positions"]).long(),
                    torch.from_numpy(b["mlm_labels"]).long())
    inputs = dict(
        input_ids=torch.from_numpy(b["token_ids"]).long(),
        token_type_ids=torch.from_numpy(b["segment_ids"]).long(),
        attention_mask=torch.from_numpy(b["padding_mask"]).long(),
        labels=labels,
        next_sentence_label=torch.from_numpy(b["nsp_labels"]).long())

    # bfloat16: torch's autocast, the usual way to train HF models in it.
    autocast = torch.autocast("cpu", dtype=torch.bfloat16,
                              enabled=precision == "mixed_bfloat16")

    def step():
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    def run_steps(n):
        for _ in range(n):
            step()

    return timed_steps(run_steps, args.steps, args.warmup, args.min_seconds)


def worker_matmul_peak(args, precision):
    """FLOP/s of a large square matmul in TensorFlow (best of several)."""
    import tensorflow as tf

    n = 2048
    dtype = tf.bfloat16 if precision == "mixed_bfloat16" else tf.float32
    a = tf.random.normal((n, n), dtype=tf.float32)
    a = tf.cast(a, dtype)
    matmul = tf.function(lambda x: tf.matmul(x, x))
    matmul(a).numpy()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        matmul(a).numpy()
        best = min(best, time.perf_counter() - start)
    return 2 * n ** 3 / best


WORKERS = {
    "keras_bert": worker_keras_bert,
    "keras_hub": worker_keras_hub,
    "hugging_face": worker_hugging_face,
    "matmul_peak": worker_matmul_peak,
}


def run_worker(args):
    value = WORKERS[args.worker](args, args.precision)
    print("RESULT " + json.dumps({"value": value, "peak_rss_mib": peak_rss_mib()}),
          flush=True)


# ---------------------------------------------------------------- driver ---

def spawn(python, worker, precision, size="mini", seq_len=128, batch=8,
          steps=5, warmup=2, jit_compile="auto", backend="tensorflow",
          min_seconds=20, timeout=1800, attention_dropout=0.1):
    command = [python, os.path.abspath(__file__), "--worker", worker,
               "--precision", precision, "--size", size,
               "--attention_dropout", str(attention_dropout),
               "--seq_len", str(seq_len), "--batch", str(batch),
               "--predictions", str(max(1, round(0.15 * seq_len))),
               "--steps", str(steps), "--warmup", str(warmup),
               "--min_seconds", str(min_seconds),
               "--jit_compile", str(jit_compile)]
    env = {**os.environ, "KERAS_BACKEND": backend,
           "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ROOT}
    done = subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)
    lines = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
    if not lines:
        print(f"  {worker} {backend} {precision} {size}:{seq_len} failed:\n"
              f"{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(lines[-1][len("RESULT "):])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="mini:128,small:128,base:128,base:512")
    parser.add_argument("--batch", type=int, default=8,
                        help="sequences per step at 128 tokens; a quarter at 512")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--min_seconds", type=float, default=20,
                        help="time rounds of --steps until this much is timed")
    parser.add_argument("--jit_compile", default="auto")
    parser.add_argument("--backends", default="tensorflow,jax",
                        help="Keras backends for the keras_bert and keras-hub rows")
    parser.add_argument("--bench_python",
                        default=os.path.join(ROOT, ".venv-bench", "bin", "python"))
    parser.add_argument("--out", help="also write the results as JSON here")
    # Worker mode (internal).
    parser.add_argument("--worker", choices=sorted(WORKERS))
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--size", default="mini")
    parser.add_argument("--seq_len", type=int, default=128)
    parser.add_argument("--predictions", type=int, default=20)
    parser.add_argument("--attention_dropout", type=float, default=0.1)
    args = parser.parse_args()
    if args.worker:
        return run_worker(args)

    python = sys.executable
    peaks = {p: spawn(python, "matmul_peak", p)["value"]
             for p in ("float32", "mixed_bfloat16")}
    print(f"matmul peak: float32 {peaks['float32'] / 1e9:.1f} GFLOP/s, "
          f"bfloat16 {peaks['mixed_bfloat16'] / 1e9:.1f} GFLOP/s", flush=True)
    rows = []
    precisions = ("float32", "mixed_bfloat16")
    for item in args.configs.split(","):
        size, seq_len, *batch = item.split(":")
        seq_len = int(seq_len)
        batch = int(batch[0]) if batch else (
            args.batch if seq_len <= 128 else max(1, args.batch // 4))
        predictions = max(1, round(0.15 * seq_len))
        flops = model_flops_per_sequence(size, seq_len, predictions)
        # keras_bert with BERT's attention dropout 0.1 (explicit softmax)
        # and with 0 ("fused": the backend's dot_product_attention).
        runs = [(framework, backend, precision, attention, python)
                for backend in args.backends.split(",")
                for framework, attention in (("keras_bert", 0.1),
                                             ("keras_bert", 0.0),
                                             ("keras_hub", 0.1))
                for precision in precisions]
        runs += [("hugging_face", "torch", precision, 0.1, args.bench_python)
                 for precision in precisions]
        for framework, backend, precision, attention, interpreter in runs:
            if interpreter is None or not os.path.exists(interpreter):
                continue
            result = spawn(interpreter, framework, precision, size, seq_len,
                           batch, args.steps, args.warmup, args.jit_compile,
                           backend, args.min_seconds,
                           attention_dropout=attention)
            if result is None:
                continue
            step = result["value"]
            sequences = batch / step
            row = dict(size=size, seq_len=seq_len, batch=batch,
                       framework=framework, backend=backend,
                       precision=precision, attention_dropout=attention,
                       step_s=step, sequences_per_s=sequences,
                       tokens_per_s=sequences * seq_len,
                       mfu=sequences * flops / peaks[precision],
                       peak_rss_mib=result["peak_rss_mib"])
            rows.append(row)
            label = framework + (" fused" if attention == 0 else "")
            print(f"{size}:{seq_len} b{batch} {label:18s} {backend:11s}"
                  f" {precision:15s}"
                  f" {sequences:7.2f} seq/s {row['tokens_per_s']:8.0f} tok/s"
                  f" MFU {100 * row['mfu']:5.1f}%"
                  f" RSS {row['peak_rss_mib']:6.0f} MiB", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"peaks": peaks, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
