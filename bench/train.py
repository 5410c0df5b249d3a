"""Pre-training step throughput, side by side: keras_bert vs keras-hub vs HF.

    python -m bench.train [--configs tiny:32:128,tiny:128:32,mini:512,base:128]
        [--backends tensorflow,jax,torch] [--batch 8] [--rounds 3]
        [--processes 1] [--bench_python .venv-bench/bin/python]
        [--out results.json] [--markdown table.md]

`--configs` items are size:tokens[:batch] (batch defaults to `--batch` at
128 tokens or fewer, a quarter of it above). For each it times full
training steps (forward, backward, AdamW update, global-norm clipping) on
random token ids of a fixed shape, each framework in its own subprocess
(so peak memory is per configuration), in float32 and `mixed_bfloat16`:

* `keras_bert`: `BertPretrainer` (MLM at P = 0.15·T positions + NSP),
  compiled as `keras_bert.pretraining` does it, on each Keras backend in
  `--backends`, with BERT's attention dropout 0.1, and in float32 with 0
  (`keras_bert_fused`: the backend's `dot_product_attention`);
* keras-hub `BertMaskedLM` (MLM at the same P positions, no NSP head),
  `jit_compile` as for keras_bert, on the same backends;
* Hugging Face `BertForPreTraining` (MLM logits at every position, as HF
  computes them, + NSP), torch eager (bfloat16 by `torch.autocast`), in
  the benchmark-only virtualenv `--bench_python` (bench/README.md).

Each subprocess times `--rounds` calls after compilation; a cell reports
its best round (the machine's slow spells only slow rounds down) and the
JSON keeps every round. Reported: sequences/s, tokens/s, model-FLOPs
utilisation (the same useful FLOPs for every framework: 6 x dense
parameters x tokens + attention + the MLM decoder at P positions, divided
by step time and by a float32 / bfloat16 matmul peak measured by
TensorFlow in this run) and peak RSS. Never run by the test suite.
"""

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

from bench.common import ROOT, add_bench_python, markdown_table, module_command, subprocess_env

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
    forward = (
        2 * dense * seq_len
        + attention
        + 2 * predictions * (hidden * hidden + hidden * VOCAB)
        + 2 * hidden * hidden
        + 2 * hidden * 2
    )  # pooler + NSP
    return 3 * forward


def random_batch(batch, seq_len, predictions, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    positions = np.sort(
        np.stack([rng.choice(seq_len - 1, predictions, replace=False) + 1 for _ in range(batch)]),
        axis=1,
    ).astype("int32")
    return {
        "token_ids": rng.integers(1000, VOCAB, (batch, seq_len)).astype("int32"),
        "segment_ids": (np.arange(seq_len)[None] >= seq_len // 2).repeat(batch, 0).astype("int32"),
        "padding_mask": np.ones((batch, seq_len), "int32"),
        "mask_positions": positions,
        "mlm_labels": rng.integers(1000, VOCAB, (batch, predictions)).astype("int32"),
        "nsp_labels": rng.integers(0, 2, (batch,)).astype("int32"),
    }


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------- workers ---


def timed_steps(run_steps, steps, warmup, min_seconds, rounds):
    """Seconds per step in each of `rounds` timed calls: `warmup` untimed
    steps (compilation), a probe of `steps` to size the measurement, then
    `rounds` calls of at least `min_seconds / rounds` each (short
    measurements are noisy, and Keras' JAX trainer syncs its state back
    into the variables at the end of every `fit`)."""
    run_steps(warmup)
    start = time.perf_counter()
    run_steps(steps)
    probe = (time.perf_counter() - start) / steps
    timed = max(steps, math.ceil(min_seconds / rounds / probe))
    seconds = []
    for _ in range(rounds):
        start = time.perf_counter()
        run_steps(timed)
        seconds.append((time.perf_counter() - start) / timed)
    return seconds


def _keras_timing(model, dataset, args):
    def run_steps(n):
        model.fit(dataset, steps_per_epoch=n, epochs=1, verbose=0)

    return timed_steps(run_steps, args.steps, args.warmup, args.min_seconds, args.rounds)


def worker_keras_bert(args, precision):
    import tensorflow as tf

    from keras_bert import BertBackbone, BertPretrainer
    from keras_bert.optimization import create_optimizer
    from keras_bert.pretraining import OptimizerConfig, compile_pretrainer
    from keras_bert.pretraining.run_setup import resolve_jit_compile

    layers, hidden, heads = SIZES[args.size]
    backbone = BertBackbone(
        VOCAB,
        layers,
        heads,
        hidden,
        4 * hidden,
        attention_dropout=args.attention_dropout,
        dtype=precision,
    )
    model = BertPretrainer(backbone)
    compile_pretrainer(
        model,
        create_optimizer(OptimizerConfig(warmup_steps=10), 1000),
        jit_compile=resolve_jit_compile(args.jit_compile),
    )
    b = random_batch(args.batch, args.seq_len, args.predictions)
    features = {k: b[k] for k in ("token_ids", "segment_ids", "padding_mask", "mask_positions")}
    labels = {"mlm": b["mlm_labels"], "nsp": b["nsp_labels"]}
    weights = {"mlm": tf.ones(b["mlm_labels"].shape), "nsp": tf.ones(b["nsp_labels"].shape)}
    dataset = tf.data.Dataset.from_tensors((features, labels, weights)).repeat()
    return _keras_timing(model, dataset, args)


def worker_keras_hub(args, precision):
    import keras
    import keras_hub
    import tensorflow as tf

    from keras_bert.pretraining.run_setup import resolve_jit_compile

    layers, hidden, heads = SIZES[args.size]
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=VOCAB,
        num_layers=layers,
        num_heads=heads,
        hidden_dim=hidden,
        intermediate_dim=4 * hidden,
        max_sequence_length=512,
        dtype=precision,
    )
    model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
    optimizer = keras.optimizers.AdamW(1e-4, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0)
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[],
        jit_compile=resolve_jit_compile(args.jit_compile),
    )
    b = random_batch(args.batch, args.seq_len, args.predictions)
    features = {k: b[k] for k in ("token_ids", "segment_ids", "padding_mask", "mask_positions")}
    dataset = tf.data.Dataset.from_tensors(
        (features, b["mlm_labels"], tf.ones(b["mlm_labels"].shape))
    ).repeat()
    return _keras_timing(model, dataset, args)


def worker_hugging_face(args, precision):
    import torch
    from transformers import BertConfig, BertForPreTraining

    layers, hidden, heads = SIZES[args.size]
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
    )
    model = BertForPreTraining(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, eps=1e-6)
    b = random_batch(args.batch, args.seq_len, args.predictions)
    labels = torch.full((args.batch, args.seq_len), -100, dtype=torch.long)
    labels.scatter_(
        1, torch.from_numpy(b["mask_positions"]).long(), torch.from_numpy(b["mlm_labels"]).long()
    )
    inputs = dict(
        input_ids=torch.from_numpy(b["token_ids"]).long(),
        token_type_ids=torch.from_numpy(b["segment_ids"]).long(),
        attention_mask=torch.from_numpy(b["padding_mask"]).long(),
        labels=labels,
        next_sentence_label=torch.from_numpy(b["nsp_labels"]).long(),
    )

    # bfloat16: torch's autocast, the usual way to train HF models in it.
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "mixed_bfloat16")

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

    return timed_steps(run_steps, args.steps, args.warmup, args.min_seconds, args.rounds)


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
    return 2 * n**3 / best


WORKERS = {
    "keras_bert": worker_keras_bert,
    "keras_hub": worker_keras_hub,
    "hugging_face": worker_hugging_face,
    "matmul_peak": worker_matmul_peak,
}


def run_worker(args):
    value = WORKERS[args.worker](args, args.precision)
    print("RESULT " + json.dumps({"value": value, "peak_rss_mib": peak_rss_mib()}), flush=True)


# ---------------------------------------------------------------- driver ---

FRAMEWORKS = ("keras_bert", "keras_bert_fused", "keras_hub", "hugging_face")
LABELS = {
    "keras_bert": "keras_bert",
    "keras_bert_fused": "keras_bert fused",
    "keras_hub": "keras-hub",
    "hugging_face": "HF",
}
PRECISIONS = ("float32", "mixed_bfloat16")


def spawn(
    python,
    worker,
    precision,
    size="mini",
    seq_len=128,
    batch=8,
    steps=5,
    warmup=2,
    jit_compile="auto",
    backend="tensorflow",
    min_seconds=20,
    rounds=1,
    timeout=1800,
    attention_dropout=0.1,
):
    command = module_command(
        python,
        "bench.train",
        "--worker",
        worker,
        "--precision",
        precision,
        "--size",
        size,
        "--attention_dropout",
        attention_dropout,
        "--seq_len",
        seq_len,
        "--batch",
        batch,
        "--predictions",
        max(1, round(0.15 * seq_len)),
        "--steps",
        steps,
        "--warmup",
        warmup,
        "--min_seconds",
        min_seconds,
        "--rounds",
        rounds,
        "--jit_compile",
        jit_compile,
    )
    env = subprocess_env(KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    lines = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
    if not lines:
        print(
            f"  {worker} {backend} {precision} {size}:{seq_len} failed:\n{done.stderr[-2000:]}",
            file=sys.stderr,
        )
        return None
    return json.loads(lines[-1][len("RESULT ") :])


def planned_runs(args):
    """(framework, backend, precision, attention dropout, interpreter) of
    every cell of one configuration, in the order they are timed."""
    frameworks = args.frameworks.split(",")
    runs = [
        (
            framework,
            backend,
            precision,
            0.0 if framework == "keras_bert_fused" else 0.1,
            sys.executable,
        )
        for backend in args.backends.split(",")
        for framework in frameworks
        if framework != "hugging_face"
        for precision in PRECISIONS
        # Fused rows in float32 only: the fused path changes no matmul
        # on a CPU, and the hour goes to the cells the table needs.
        if framework != "keras_bert_fused" or precision == "float32"
    ]
    if "hugging_face" in frameworks and os.path.exists(args.bench_python):
        runs += [
            ("hugging_face", "torch", precision, 0.1, args.bench_python) for precision in PRECISIONS
        ]
    return runs


def measure_config(item, args, peaks):
    """Rows of one size:tokens[:batch] item: every planned cell timed in
    `args.processes` subprocesses, the passes interleaved so that a slow
    spell of the machine lands on different cells, not on all repeats of
    one."""
    size, seq_len, *batch = item.split(":")
    seq_len = int(seq_len)
    batch = int(batch[0]) if batch else (args.batch if seq_len <= 128 else max(1, args.batch // 4))
    predictions = max(1, round(0.15 * seq_len))
    flops = model_flops_per_sequence(size, seq_len, predictions)
    runs = planned_runs(args)
    timings = {run: [] for run in runs}
    rss = {run: 0.0 for run in runs}
    for _ in range(args.processes):
        for run in runs:
            framework, backend, precision, attention, interpreter = run
            worker = "keras_bert" if framework == "keras_bert_fused" else framework
            result = spawn(
                interpreter,
                worker,
                precision,
                size,
                seq_len,
                batch,
                args.steps,
                args.warmup,
                args.jit_compile,
                backend,
                args.min_seconds,
                args.rounds,
                attention_dropout=attention,
            )
            if result is None:
                continue
            timings[run].append(result["value"])
            rss[run] = max(rss[run], result["peak_rss_mib"])
            per_process = batch / min(result["value"])
            print(
                f"{size}:{seq_len} b{batch} {framework:17s} {backend:11s}"
                f" {precision:15s} {per_process:8.2f} seq/s"
                f" (rounds: {', '.join(f'{batch / t:.1f}' for t in result['value'])})",
                flush=True,
            )
    rows = []
    for run, processes in timings.items():
        if not processes:
            continue
        framework, backend, precision, attention, _ = run
        # The best round: this VM's CPU comes in slow spells (rounds of one
        # process differ by up to 1.5x, in steps), and a spell only ever
        # slows a round down (as `timeit` reports its minimum).
        step = min(t for rounds in processes for t in rounds)
        median_step = statistics.median(t for rounds in processes for t in rounds)
        process_rates = [batch / min(r) for r in processes]
        sequences = batch / step
        rows.append(
            dict(
                size=size,
                seq_len=seq_len,
                batch=batch,
                framework=framework,
                backend=backend,
                precision=precision,
                attention_dropout=attention,
                jit_compile=args.jit_compile,
                step_s=step,
                median_sequences_per_s=batch / median_step,
                sequences_per_s=sequences,
                tokens_per_s=sequences * seq_len,
                mfu=sequences * flops / peaks[precision],
                process_sequences_per_s=process_rates,
                spread=max(process_rates) / min(process_rates) - 1,
                step_s_per_round=processes,
                peak_rss_mib=rss[run],
            )
        )
    return rows


def speed_table(rows):
    """One line per configuration, one column per framework and backend;
    cells `float32 / mixed_bfloat16` seq/s with MFU in brackets."""

    def cell(row):
        if row is None:
            return "–"
        return f"{row['sequences_per_s']:.3g} ({100 * row['mfu']:.0f}%)"

    configs = list(dict.fromkeys((r["size"], r["seq_len"], r["batch"]) for r in rows))
    columns = list(dict.fromkeys((r["framework"], r["backend"]) for r in rows))
    index = {
        (r["size"], r["seq_len"], r["batch"], r["framework"], r["backend"], r["precision"]): r
        for r in rows
    }
    # Between subprocesses, when there were several.
    spread = any(len(r["process_sequences_per_s"]) > 1 for r in rows)
    header = (
        ["model:T × batch"]
        + [f"{LABELS[framework]} ({backend})" for framework, backend in columns]
        + ["widest spread"] * spread
    )
    lines = []
    for config in configs:
        cells = [
            " / ".join(cell(index.get((*config, *column, precision))) for precision in PRECISIONS)
            for column in columns
        ]
        if spread:
            widest = max(
                r["spread"] for r in rows if (r["size"], r["seq_len"], r["batch"]) == config
            )
            cells.append(f"{100 * widest:.0f}%")
        lines.append([f"{config[0]}:{config[1]} × {config[2]}"] + cells)
    return markdown_table(header, lines) + "\n"


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.train", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--configs", default="tiny:128,tiny:512,mini:128,mini:512,base:128,base:512"
    )
    parser.add_argument(
        "--batch", type=int, default=8, help="sequences per step at 128 tokens; a quarter at 512"
    )
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument(
        "--min_seconds",
        type=float,
        default=6,
        help="seconds timed per subprocess, over --rounds calls",
    )
    parser.add_argument("--rounds", type=int, default=3, help="timed calls per subprocess")
    parser.add_argument(
        "--processes", type=int, default=1, help="subprocesses per cell, in interleaved passes"
    )
    parser.add_argument("--jit_compile", default="auto")
    parser.add_argument(
        "--backends",
        default="tensorflow,jax,torch",
        help="Keras backends for the keras_bert and keras-hub rows",
    )
    parser.add_argument(
        "--frameworks", default=",".join(FRAMEWORKS), help="'keras_bert_fused': attention dropout 0"
    )
    add_bench_python(parser)
    parser.add_argument("--out", help="also write the results as JSON here")
    parser.add_argument("--markdown", help="also write the table here")
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

    peaks = {p: spawn(sys.executable, "matmul_peak", p)["value"] for p in PRECISIONS}
    print(
        f"matmul peak: float32 {peaks['float32'] / 1e9:.1f} GFLOP/s, "
        f"bfloat16 {peaks['mixed_bfloat16'] / 1e9:.1f} GFLOP/s",
        flush=True,
    )
    rows = []
    for item in args.configs.split(","):
        rows += measure_config(item, args, peaks)
        if args.out:  # After each configuration: a long run keeps its part.
            with open(args.out, "w") as f:
                json.dump({"peaks": peaks, "rows": rows}, f, indent=2)
    table = speed_table(rows)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table)


if __name__ == "__main__":
    main()
