"""What XLA's CPU options change for an export compiled with `--jit_compile`:
the student's `serve_token_ids` under each `XLA_FLAGS` setting, beside the
same export without XLA.

    KERAS_BACKEND=tensorflow python -m bench.serving_xla_flags --run RUN_DIR \
        [--flags "" "--xla_cpu_use_thunk_runtime=false" ...] [--calls 200] [--rounds 3]

`--run`: a fine-tuned run folder. Its model is exported twice, as
`python -m keras_bert.export` writes it with and without `--jit_compile`.
XLA reads `XLA_FLAGS` once per process, so each setting is timed in a
process of its own (this script with `--worker`), the settings taking turns
for `--rounds` rounds; each one's best round is reported (the machine's
other load moves all alike). A setting this TensorFlow's XLA does not
accept is reported as such. Inputs: token ids filling the export's 128
positions (time depends on the shape, not the ids): batch 1 p50 over
`--calls` calls, batch 32 sentences/s from the median of 5 calls. Never run
by the test suite.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SEQ_LEN = 128
DEFAULT_FLAGS = [
    "",
    "--xla_cpu_use_thunk_runtime=false",
    "--xla_cpu_enable_fast_math=true",
    "--xla_cpu_multi_thread_eigen=false",
]
NO_XLA = "no XLA (the plain export)"


def worker(export, calls):
    """Times `export`'s `serve_token_ids` in this process; prints JSON."""
    import numpy as np
    import tensorflow as tf

    serve = tf.saved_model.load(export).signatures["serve_token_ids"]
    rng = np.random.default_rng(0)
    results = {}
    for batch in (1, 32):
        feed = {
            "token_ids": tf.constant(rng.integers(1000, 30000, (batch, SEQ_LEN)), tf.int32),
            "segment_ids": tf.zeros((batch, SEQ_LEN), tf.int32),
            "padding_mask": tf.ones((batch, SEQ_LEN), tf.int32),
        }
        serve(**feed)  # Warm-up: compilation.
        times = []
        for _ in range(calls if batch == 1 else 5):
            start = time.perf_counter()
            serve(**feed)["logits"].numpy()
            times.append(time.perf_counter() - start)
        if batch == 1:
            results["p50_ms"] = 1000 * statistics.median(times)
        else:
            results["sentences_per_s"] = batch / statistics.median(times)
    print(json.dumps(results))


def timed(export, flags, calls):
    """`(results, None)` of one worker process under `flags`, or `(None,
    the reason)` when it failed (an XLA_FLAGS entry this XLA refuses)."""
    env = {**os.environ, "XLA_FLAGS": flags}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.serving_xla_flags",
            "--worker",
            export,
            "--calls",
            str(calls),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        return None, lines[-1][:160] if lines else f"exit {done.returncode}"
    return json.loads(done.stdout.strip().splitlines()[-1]), None


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.serving_xla_flags", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--run", help="a fine-tuned run folder (model.keras)")
    parser.add_argument("--flags", nargs="+", default=DEFAULT_FLAGS, help="XLA_FLAGS settings")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.calls)
    if not args.run:
        parser.error("--run is required")

    from bench.common import markdown_table, processor
    from bench.distillation_serving import load
    from keras_bert.serving import export_for_serving

    model = load(args.run)
    folder = tempfile.mkdtemp()
    exports = {}
    for jit in (False, True):
        exports[jit] = export_for_serving(
            model,
            os.path.join(folder, "xla" if jit else "plain"),
            vocabulary=model.backbone.vocabulary,
            seq_len=SEQ_LEN,
            jit_compile=jit,
        )
    settings = [(NO_XLA, exports[False], "")] + [
        (f"XLA, XLA_FLAGS={flags!r}", exports[True], flags) for flags in args.flags
    ]
    best, failed = {}, {}
    for _ in range(args.rounds):
        for name, export, flags in settings:
            if name in failed:
                continue
            results, reason = timed(export, flags, args.calls)
            if results is None:
                failed[name] = reason
                continue
            if name not in best or results["p50_ms"] < best[name]["p50_ms"]:
                best[name] = {**best.get(name, {}), "p50_ms": results["p50_ms"]}
            best[name]["sentences_per_s"] = max(
                best[name].get("sentences_per_s", 0), results["sentences_per_s"]
            )
    reference = best.get(f"XLA, XLA_FLAGS={''!r}")
    rows = []
    for name, _, _ in settings:
        if name in failed:
            rows.append([name, "refused: " + failed[name], "", ""])
            continue
        ratio = f"{reference['p50_ms'] / best[name]['p50_ms']:.2f}x" if reference else ""
        rows.append(
            [name, f"{best[name]['p50_ms']:.2f}", f"{best[name]['sentences_per_s']:.0f}", ratio]
        )
    print(
        f"### `serve_token_ids` under XLA's CPU options, seq_len {SEQ_LEN}, {processor()}: "
        f"best of {args.rounds} rounds\n"
    )
    print(
        markdown_table(
            ["setting", "batch 1 p50 (ms)", "batch 32 (sentences/s)", "speed vs XLA default"],
            rows,
        )
    )


if __name__ == "__main__":
    main()
