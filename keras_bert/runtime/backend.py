"""The Keras backend `python -m keras_bert.pretrain` trains on, measured.

Which backend trains BERT fastest depends on the processor, and no rule on
its name or flags predicts it: JAX (XLA's CPU code) wins on some CPUs,
TensorFlow's kernels on others (BENCHMARKS.md#findings-behind-the-defaults).
So, unless `KERAS_BACKEND` is set, the main command measures: it times a
few BERT-Tiny training steps (`PROBE`, run by
`keras_bert.pretraining.step_probe`) under each of `CANDIDATES` in a
subprocess, once per machine, and keeps the answer in
`~/.cache/keras_bert/` under a key of the processor, core count,
accelerators and package versions. PyTorch is not a candidate: Keras runs
its step eagerly, slower than TensorFlow's on every CPU measured
(BENCHMARKS.md#training-step-speed), and its GPU step is not compiled
either. Delete the cache file to measure again.
"""

import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile

from keras_bert.runtime.hardware import accelerator_devices

CANDIDATES = ("tensorflow", "jax")
# The default run's second phase: BERT-Tiny, 128 tokens, batch 32.
PROBE = dict(
    num_layers=2,
    hidden_dim=128,
    num_heads=2,
    seq_len=128,
    batch_size=32,
    warmup_steps=2,
    timed_steps=6,
)
PROBE_COMMAND = (
    "from keras_bert.runtime.backend import PROBE; "
    "from keras_bert.pretraining.step_probe import "
    "probe_seconds_per_step; print(probe_seconds_per_step(**PROBE))"
)
CACHE_FILE = os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
    "keras_bert",
    "fastest_backend.json",
)


def machine_key():
    """What the measurement depends on: processor, cores, accelerators and
    the versions of the packages that compile the step."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = sorted({line for line in f if line.startswith(("model name", "flags"))})
    except OSError:
        cpu = []
    versions = []
    for package in ("keras", "tensorflow", "jax", "jaxlib"):
        try:
            versions.append(f"{package}=={importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{package} absent")
    parts = cpu + versions + [f"cores={os.cpu_count()}"] + accelerator_devices()
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
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
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
    print(
        "Measuring which Keras backend trains fastest on this machine "
        f"(once; cached in {CACHE_FILE}) ...",
        file=sys.stderr,
        flush=True,
    )
    measure = measure or measure_step
    seconds = {backend: measure(backend) for backend in CANDIDATES}
    backend = pick_fastest(seconds)
    record = {
        "machine": key,
        "backend": backend or "tensorflow",
        "seconds_per_step": seconds,
        "probe": PROBE,
    }
    if backend is not None:
        try:
            write_cache(record)
        except OSError as error:  # A read-only home still trains.
            print(f"  not cached: {error}", file=sys.stderr)
    return record["backend"], record


def describe(record):
    times = ", ".join(
        f"{b} {s * 1000:.0f} ms" if s is not None else f"{b} failed"
        for b, s in record["seconds_per_step"].items()
    )
    return (
        f"Keras backend: {record['backend']} (fastest here; BERT-Tiny "
        f"step: {times}; set KERAS_BACKEND to choose another)"
    )


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
