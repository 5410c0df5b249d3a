"""The Keras backend `python -m keras_bert.pretrain` trains on, measured.

Which backend trains BERT fastest depends on the processor, and no rule on
its name or flags predicts it: on the 2-core machine of BENCHMARKS.md's
first training table JAX (XLA's CPU code) was 1.8x TensorFlow's kernels; on
an AMD EPYC (Zen 5, AVX512-BF16) TensorFlow is 1.2-1.9x JAX. So, unless
`KERAS_BACKEND` is set, the main command measures: it times a few BERT-Tiny
training steps (`PROBE`) under each of `CANDIDATES` in a subprocess, once
per machine, and keeps the answer in `~/.cache/keras_bert/` under a key of
the processor, core count, accelerators and package versions. PyTorch is
not a candidate: Keras runs it eagerly, 2-2.7x slower than TensorFlow on
that CPU (BENCHMARKS.md), and its GPU step is not compiled either. Delete
the cache file to measure again.
"""

import glob
import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
import time

CANDIDATES = ("tensorflow", "jax")
# The default run's second phase: BERT-Tiny, 128 tokens, batch 32.
PROBE = dict(num_layers=2, hidden_dim=128, num_heads=2, seq_len=128,
             batch_size=32, warmup_steps=2, timed_steps=6)
PROBE_COMMAND = ("from keras_bert.runtime.backend import PROBE, "
                 "probe_seconds_per_step; print(probe_seconds_per_step(**PROBE))")
CACHE_FILE = os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
    "keras_bert", "fastest_backend.json")


def machine_key():
    """What the measurement depends on: processor, cores, accelerators and
    the versions of the packages that compile the step."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = sorted({line for line in f
                          if line.startswith(("model name", "flags"))})
    except OSError:
        cpu = []
    versions = []
    for package in ("keras", "tensorflow", "jax", "jaxlib"):
        try:
            versions.append(f"{package}=={importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{package} absent")
    parts = cpu + versions + [f"cores={os.cpu_count()}"] + sorted(
        glob.glob("/dev/nvidia[0-9]*") + glob.glob("/dev/accel*"))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def pick_fastest(seconds_per_step):
    """The backend with the shortest step among those that ran (a failed
    probe is None); None when none ran."""
    measured = {b: s for b, s in seconds_per_step.items() if s is not None}
    return min(measured, key=measured.get) if measured else None


def measure_step(backend, timeout=600):
    """Seconds per `PROBE` training step under `backend`, or None when the
    backend is missing or fails (its last error line is printed)."""
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE_COMMAND],
            env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"  {backend}: no result within {timeout} s", file=sys.stderr)
        return None
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        reason = (done.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"  {backend}: probe failed ({reason})", file=sys.stderr)
        return None
    return float(lines[-1])


def read_cache(key):
    try:
        with open(CACHE_FILE, encoding="utf-8") as f:
            cached = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(cached, dict) or cached.get("machine") != key:
        return None
    return cached


def write_cache(record):
    """Written to a temporary name and renamed: a killed run leaves the old
    cache or none, never half a file. Not `file_io.write_json_atomically`:
    that imports TensorFlow, which must wait for the console's quiet import,
    and the cache is always local."""
    os.makedirs(os.path.dirname(CACHE_FILE), exist_ok=True)
    fd, partial = tempfile.mkstemp(dir=os.path.dirname(CACHE_FILE))
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2)
    os.replace(partial, CACHE_FILE)


def fastest_backend(measure=None):
    """`(backend, record)`: the cached choice for this machine, else one
    measured now (and cached). Falls back to Keras' default, TensorFlow,
    when no candidate runs."""
    key = machine_key()
    cached = read_cache(key)
    if cached is not None:
        return cached["backend"], cached
    print("Measuring which Keras backend trains fastest on this machine "
          f"(once; cached in {CACHE_FILE}) ...", file=sys.stderr, flush=True)
    measure = measure or measure_step
    seconds = {backend: measure(backend) for backend in CANDIDATES}
    backend = pick_fastest(seconds)
    record = {"machine": key, "backend": backend or "tensorflow",
              "seconds_per_step": seconds, "probe": PROBE}
    if backend is not None:
        try:
            write_cache(record)
        except OSError as error:  # A read-only home still trains.
            print(f"  not cached: {error}", file=sys.stderr)
    return record["backend"], record


def describe(record):
    times = ", ".join(
        f"{b} {s * 1000:.0f} ms" if s is not None else f"{b} failed"
        for b, s in record["seconds_per_step"].items())
    return (f"Keras backend: {record['backend']} (fastest here; BERT-Tiny "
            f"step: {times}; set KERAS_BACKEND to choose another)")


def use_fastest_backend():
    """Sets `KERAS_BACKEND` to the measured fastest backend unless the user
    has chosen one. Called by `python -m keras_bert.pretrain` once its
    arguments are parsed; it must come before Keras is imported, which reads
    the variable once, so once Keras is loaded it does nothing."""
    if "KERAS_BACKEND" in os.environ or "keras" in sys.modules:
        return
    backend, record = fastest_backend()
    os.environ["KERAS_BACKEND"] = backend
    print(describe(record), file=sys.stderr, flush=True)


def probe_seconds_per_step(num_layers, hidden_dim, num_heads, seq_len,
                           batch_size, warmup_steps, timed_steps,
                           precision="float32", jit_compile="auto"):
    """Seconds per pre-training step (forward, backward, AdamW) of a
    `BertPretrainer` on random ids, compiled as `keras_bert.pretraining` does."""
    import numpy as np
    import tensorflow as tf

    from keras_bert.models import BertBackbone, BertPretrainer
    from keras_bert.optimization import OptimizerConfig, create_optimizer
    from keras_bert.pretraining import compile_pretrainer
    from keras_bert.pretraining.pretraining import resolve_jit_compile

    vocabulary_size = 30522
    predictions = max(1, round(0.15 * seq_len))
    backbone = BertBackbone(vocabulary_size, num_layers, num_heads, hidden_dim,
                            4 * hidden_dim, dtype=precision)
    model = BertPretrainer(backbone)
    compile_pretrainer(model, create_optimizer(OptimizerConfig(), 10_000),
                       jit_compile=resolve_jit_compile(jit_compile))
    rng = np.random.default_rng(0)
    features = {
        "token_ids": rng.integers(1000, vocabulary_size, (batch_size, seq_len)),
        "segment_ids": np.zeros((batch_size, seq_len)),
        "padding_mask": np.ones((batch_size, seq_len)),
        "mask_positions": np.sort(rng.permuted(
            np.tile(np.arange(1, seq_len), (batch_size, 1)), axis=1
        )[:, :predictions], axis=1),
    }
    features = {k: v.astype("int32") for k, v in features.items()}
    labels = {"mlm": rng.integers(1000, vocabulary_size,
                                  (batch_size, predictions)).astype("int32"),
              "nsp": np.zeros((batch_size,), "int32")}
    weights = {"mlm": np.ones((batch_size, predictions), "float32"),
               "nsp": np.ones((batch_size,), "float32")}
    dataset = tf.data.Dataset.from_tensors(
        (features, labels, weights)).repeat()
    model.fit(dataset, steps_per_epoch=warmup_steps, epochs=1, verbose=0)
    start = time.perf_counter()
    model.fit(dataset, steps_per_epoch=timed_steps, epochs=1, verbose=0)
    return (time.perf_counter() - start) / timed_steps
