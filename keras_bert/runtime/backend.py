"""The Keras backend the training commands run on, measured.

Which backend trains BERT fastest depends on the processor, and no rule on
its name or flags predicts it: JAX (XLA's CPU code) wins on some CPUs,
TensorFlow's kernels on others (BENCHMARKS.md#findings-behind-the-defaults).
So, unless `KERAS_BACKEND` is set, `python -m keras_bert.pretrain` and
`python -m keras_bert.finetune` measure: each of `CANDIDATES` runs a few
training steps of the default run's model (`PROBE`, `keras_bert.pretraining.step_probe`) in
a subprocess, the subprocesses taking turns for `ROUNDS` timed rounds, once
per machine, and the answer is kept in `~/.cache/keras_bert/` under a key
of the processor, core count, accelerators, package versions, the probe
and the default run's config. Delete the cache file to measure again.

The rule (`pick_backend`): each candidate's slowest round is set aside
(one round disturbed by other work, or still warming up, is not the
step's speed), then the candidate with the shortest step wins, unless
another is within the probe's own spread of it (their rounds' ranges
overlap), in which case
the measurements cannot tell them apart and `PREFERRED` (TensorFlow) is
kept: BENCHMARKS.md#training-step-speed finds it the fastest Keras backend
on a CPU. Where the cache cannot be written, nothing is measured and
`PREFERRED` is used: a choice that cannot be kept would be made again by
every run, costing the probe's time each time and flipping between
backends on noise.

PyTorch is not a candidate: Keras runs its step eagerly, slower than
TensorFlow's on every CPU measured (BENCHMARKS.md#training-step-speed), and
its GPU step is not compiled either.
"""

import ctypes
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

from keras_bert.paths import CONFIGS
from keras_bert.runtime.hardware import accelerator_devices

CANDIDATES = ("tensorflow", "jax")
# What a measurement cannot tell apart from the fastest is this one.
PREFERRED = "tensorflow"
# What `KERAS_BACKEND` may name: the backends Keras can load (each the name
# of the package it needs), how this project installs it, and those that
# cannot train.
KERAS_BACKENDS = ("tensorflow", "jax", "torch", "numpy", "openvino")
INSTALL = {
    "tensorflow": "pip install -r requirements.txt",
    "jax": "pip install -r requirements.txt",
    "torch": "pip install -r requirements-torch.txt",
}
INFERENCE_ONLY = ("numpy", "openvino")
# The default run as it trains: its config's model (`compiled_model`:
# BERT-Tiny without dropout, whose masks cost JAX a fifth of a step on a
# CPU, or the next-sentence task, on its sampled softmax) at both phases'
# shapes. A round times `timed_steps` steps at each and answers seconds per
# recipe step (weighted by the phases' steps): the backends' order differs
# between the shapes. The probe's JAX programs are the run's, so it also
# fills the compilation cache the run loads them from
# (`runtime.compilation_cache`).
PROBE = dict(config="default", warmup_steps=2, timed_steps=4)
PROBE_CONFIG = CONFIGS / "pretrain" / f"{PROBE['config']}.yaml"
ROUNDS = 3
# The probe starts as a command does (`runtime.command.start_up`): JAX's
# steps are timed with the allocator setting its runs get.
PROBE_COMMAND = (
    "from keras_bert.runtime.allocator import keep_freed_memory_for_jax; "
    "keep_freed_memory_for_jax(); "
    "from keras_bert.runtime.backend import PROBE; "
    "from keras_bert.pretraining.step_probe import serve_rounds; serve_rounds(**PROBE)"
)
CACHE_FILE = os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
    "keras_bert",
    "fastest_backend.json",
)


def machine_key():
    """What the measurement depends on: processor, cores, accelerators, the
    versions of the packages that compile the step and the probe itself."""
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
    # A changed probe, or a changed default run, measures again.
    probe = f"probe={PROBE_COMMAND} {sorted(PROBE.items())} rounds={ROUNDS}"
    try:
        probe += PROBE_CONFIG.read_text(encoding="utf-8")
    except OSError:
        pass  # The probe then fails and says why.
    parts = cpu + versions + [f"cores={os.cpu_count()}", probe] + accelerator_devices()
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def pick_backend(seconds_per_step):
    """`(backend, tie)` from measured rounds.

    Args:
        seconds_per_step: dict of backend to its rounds' seconds per step
            (a list), or None for a probe that failed.

    Returns:
        The backend whose best round is the shortest, and False; or, when
        another backend's best round is within that backend's spread (no
        slower than its slowest round: their ranges of rounds overlap),
        `PREFERRED` and True: a difference the probe's own rounds show as
        noise decides nothing, and BENCHMARKS.md#training-step-speed
        favours TensorFlow on a CPU. `(None, False)` when no probe ran.
        Of three rounds or more, each backend's slowest is set aside first:
        on a Zen 3 one slow JAX round made a tie of a clear lead, and the
        run kept TensorFlow's slower step (BENCHMARKS.md#the-default-run).
    """
    measured = {
        b: sorted(rounds)[:-1] if len(rounds) >= 3 else rounds
        for b, rounds in seconds_per_step.items()
        if rounds
    }
    if not measured:
        return None, False
    fastest = min(measured, key=lambda b: min(measured[b]))
    tied = [b for b in measured if b != fastest and min(measured[b]) <= max(measured[fastest])]
    if tied and PREFERRED in (fastest, *tied):
        return PREFERRED, True
    return fastest, False


def measure_rounds(backends=CANDIDATES, rounds=ROUNDS, timeout=600):
    """`{backend: [seconds per step of each round] or None}`.

    One subprocess per backend builds and compiles the probe (all at once),
    then they take turns: every backend's round r before any backend's
    round r + 1, so load that comes and goes on the machine falls on all of
    them alike. A backend that is missing, fails or does not answer within
    `timeout` seconds (the warm-up, or a round) gets None and its reason
    on stderr.
    """
    env = {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": "3",
        # Probes that share a GPU must not each take all of its memory.
        "TF_FORCE_GPU_ALLOW_GROWTH": "true",
        "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
    }
    probes = {}
    results = {}
    try:
        for backend in backends:
            errors = tempfile.TemporaryFile()
            process = subprocess.Popen(
                [sys.executable, "-c", PROBE_COMMAND],
                env={**env, "KERAS_BACKEND": backend},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                bufsize=0,
                preexec_fn=end_with_parent if sys.platform.startswith("linux") else None,
            )
            probes[backend] = (process, errors)
            results[backend] = []
        for round_index in range(rounds + 1):  # Round 0: "probe ready".
            for backend, (process, errors) in probes.items():
                if results[backend] is None:
                    continue
                try:
                    if round_index:
                        process.stdin.write(b"go\n")
                    answer = _read_answer(process, timeout)
                except BrokenPipeError:  # It exited.
                    answer = ""
                if isinstance(answer, str):
                    process.kill()
                    print(f"  {backend}: {answer or _last_line(errors)}", file=sys.stderr)
                    results[backend] = None
                elif round_index:
                    results[backend].append(answer)
    finally:
        for process, errors in probes.values():
            _stop(process)
            errors.close()
    return results


def end_with_parent():
    """Runs in a probe's process before it starts (Linux): the kernel sends
    it SIGKILL when the command that started it dies, `kill -9` included,
    so a killed command leaves no probe compiling on for a minute. The
    probe starts before TensorFlow or Keras, while this process has no
    other threads for `preexec_fn` to trouble."""
    PR_SET_PDEATHSIG = 1  # <sys/prctl.h>
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _read_answer(process, timeout):
    """The probe's next `probe ...` line: a float, None for `ready`, or a
    str saying why there is none ("" when the probe's stderr says why)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([process.stdout], [], [], left)[0]:
            return f"no result within {timeout} s"
        line = process.stdout.readline().decode(errors="replace").strip()
        if not line:
            return ""  # It exited.
        if line.startswith("probe "):
            value = line[len("probe ") :]
            return None if value == "ready" else float(value)


def _last_line(errors):
    errors.seek(0)
    lines = errors.read().decode(errors="replace").strip().splitlines()
    return f"probe failed ({lines[-1] if lines else 'no output'})"


def _stop(process):
    """Kills a probe: it holds nothing to keep, and letting TensorFlow or
    JAX shut down cost seconds of the first command's wall time."""
    process.kill()
    process.wait()
    process.stdin.close()
    process.stdout.close()


def read_cache(key):
    """This machine's cached record, or None when the file is missing, not
    JSON, of another machine or not a record this module writes (then it
    is measured again and rewritten)."""
    try:
        with open(CACHE_FILE, encoding="utf-8") as f:
            cached = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(cached, dict) or cached.get("machine") != key:
        return None
    seconds = cached.get("seconds_per_step")
    valid = (
        cached.get("backend") in CANDIDATES
        and isinstance(cached.get("tie"), bool)
        and isinstance(seconds, dict)
        and set(seconds) <= set(CANDIDATES)
        and all(
            rounds is None
            or (
                isinstance(rounds, list)
                and rounds
                and all(isinstance(s, (int, float)) and s > 0 for s in rounds)
            )
            for rounds in seconds.values()
        )
    )
    return cached if valid else None


def cache_problem():
    """Why the cache cannot be written here (a str), or None."""
    directory = os.path.dirname(CACHE_FILE)
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as error:
        return error.strerror or str(error)
    return None


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
    measured now (and cached). `PREFERRED`, unmeasured, when the cache
    cannot be written; `PREFERRED` when no candidate runs.

    Args:
        measure: callable returning `measure_rounds`'s dict; None for
            `measure_rounds`.
    """
    key = machine_key()
    cached = read_cache(key)
    if cached is not None:
        return cached["backend"], cached
    problem = cache_problem()
    if problem is not None:
        return PREFERRED, {"backend": PREFERRED, "not_measured": f"{CACHE_FILE}: {problem}"}
    print(
        "Measuring which Keras backend trains fastest on this machine "
        f"(once; cached in {CACHE_FILE}) ...",
        file=sys.stderr,
        flush=True,
    )
    seconds = (measure or measure_rounds)()
    backend, tie = pick_backend(seconds)
    record = {
        "machine": key,
        "backend": backend or PREFERRED,
        "tie": tie,
        "seconds_per_step": seconds,
        "probe": {**PROBE, "rounds": ROUNDS},
    }
    if backend is not None:
        try:
            write_cache(record)
        except OSError as error:  # Writable a moment ago; still trains.
            print(f"  not cached: {error}", file=sys.stderr)
    return record["backend"], record


def describe(record):
    """The one line the commands print about their backend choice."""
    backend = record["backend"]
    advice = "set KERAS_BACKEND to choose another"
    if "not_measured" in record:
        return (
            f"Keras backend: {backend} (not measured: the choice could not "
            f"be cached in {record['not_measured']}, and measuring every run "
            "costs its time and may flip on noise; BENCHMARKS.md"
            f"#training-step-speed favours {backend} on a CPU; {advice})"
        )
    times = ", ".join(
        f"{b} {min(rounds) * 1000:.0f}-{max(rounds) * 1000:.0f} ms" if rounds else f"{b} failed"
        for b, rounds in record["seconds_per_step"].items()
    )
    if record["tie"]:
        why = (
            "a tie: the others are within the probe's spread, and "
            f"BENCHMARKS.md#training-step-speed favours {backend} on a CPU"
        )
    elif any(record["seconds_per_step"].values()):
        why = "fastest here"
    else:
        why = "no candidate's probe ran"
    return f"Keras backend: {backend} ({why}; BERT-Tiny step by round: {times}; {advice})"


def backend_variable_problem(training=False):
    """A one-line message when `KERAS_BACKEND` names no backend Keras can
    load, one whose package is not installed (Keras would raise a traceback
    on import), or, for a command that trains (`training`), one that cannot
    train; else None."""
    name = os.environ.get("KERAS_BACKEND")
    if not name:  # Keras ignores an empty one.
        return None
    if name not in KERAS_BACKENDS:
        return (
            f"KERAS_BACKEND={name!r} is not a Keras backend; set one of {', '.join(KERAS_BACKENDS)}"
        )
    if importlib.util.find_spec(name) is None:
        return (
            f"KERAS_BACKEND={name} needs the {name!r} package, which is not installed: "
            + INSTALL.get(name, f"pip install {name}")
        )
    if training and name in INFERENCE_ONLY:
        return (
            f"KERAS_BACKEND={name}: Keras' {name} backend runs inference only and cannot "
            f"train; set one of {', '.join(b for b in KERAS_BACKENDS if b not in INFERENCE_ONLY)}"
        )
    return None


def use_fastest_backend():
    """Sets `KERAS_BACKEND` to the measured fastest backend unless the user
    has chosen one. Called by the training commands once their arguments
    are parsed; it must come before Keras is imported, which reads the
    variable once, so once Keras is loaded it does nothing."""
    if "KERAS_BACKEND" in os.environ or "keras" in sys.modules:
        return
    backend, record = fastest_backend()
    os.environ["KERAS_BACKEND"] = backend
    print(describe(record), file=sys.stderr, flush=True)
