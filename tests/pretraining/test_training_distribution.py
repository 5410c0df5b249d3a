"""Strategies: TPU errors, MirroredStrategy on 2 logical CPUs, multi-worker
on localhost, JAX DataParallel on 2 host devices, XLA-compiled train step."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_bert.pretraining import ConfigError, create_distribution

ROOT = Path(__file__).resolve().parents[2]
BACKEND = keras.backend.backend()
tensorflow_only = pytest.mark.skipif(
    BACKEND != "tensorflow", reason="tf.distribute strategy: TensorFlow backend"
)


def test_unreachable_tpu_is_a_one_line_config_error():
    with pytest.raises(ConfigError, match="(?i)tpu") as error:
        create_distribution("tpu", tpu="no-such-tpu-anywhere")
    assert "\n" not in str(error.value)


@tensorflow_only
def test_unreachable_tpu_address_does_not_hang():
    port = _free_port()  # Nothing listens there.
    with pytest.raises(ConfigError, match="No TPU could be reached"):
        create_distribution("tpu", tpu=f"grpc://127.0.0.1:{port}")


def test_multi_worker_needs_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ConfigError, match="multi_worker"):
        create_distribution("multi_worker")


@pytest.mark.skipif(BACKEND == "torch", reason="TF_CONFIG: tensorflow and jax")
def test_tf_config_task_outside_its_cluster(monkeypatch):
    monkeypatch.setenv(
        "TF_CONFIG",
        json.dumps(
            {"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker", "index": 5}}
        ),
    )
    with pytest.raises(ConfigError) as error:
        create_distribution("multi_worker" if BACKEND == "tensorflow" else "auto")
    assert str(error.value) == (
        "TF_CONFIG's task worker:5 is not in its cluster (1 worker address(es)); "
        "task.index counts from 0."
    )


@pytest.mark.skipif(BACKEND != "jax", reason="the jax backend ignores TF_CONFIG")
def test_jax_refuses_a_tf_config_of_two_workers(monkeypatch):
    monkeypatch.setenv(
        "TF_CONFIG",
        json.dumps(
            {
                "cluster": {"worker": ["localhost:1", "localhost:2"]},
                "task": {"type": "worker", "index": 1},
            }
        ),
    )
    with pytest.raises(
        ConfigError, match="TF_CONFIG lists 2 workers, but the jax backend does not read it"
    ):
        create_distribution("auto")


def test_default_distribution_passes_global_batches():
    distribution = create_distribution("cpu" if BACKEND != "jax" else "auto")
    seen = []
    distribution.distribute_datasets(lambda batch, context: seen.append((batch, context)), 8)
    assert seen == [(8, None)]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_worker(args, env, log):
    return subprocess.Popen(
        [sys.executable, "-m", "tests.pretraining.distributed_worker", *args],
        cwd=ROOT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env},
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        text=True,
    )


def _result(process, log, timeout=560):
    process.wait(timeout=timeout)
    output = Path(log).read_text()
    assert process.returncode == 0, output[-4000:]
    line = [l for l in output.splitlines() if l.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT ") :])


@pytest.mark.slow
@tensorflow_only
def test_mirrored_strategy_on_two_logical_cpus(tmp_path, tiny_corpus):
    log = tmp_path / "log.txt"
    process = _run_worker(
        ["mirrored", str(tmp_path / "run"), tiny_corpus, "--logical_cpus", "2"],
        {"KERAS_BACKEND": "tensorflow"},
        log,
    )
    result = _result(process, log)
    assert result["strategy"] == "mirrored" and result["replicas"] == 2
    assert result["finished"] and result["step"] == 9
    assert (tmp_path / "run" / "pretrainer.keras").exists()


@pytest.mark.slow
@tensorflow_only
def test_multi_worker_mirrored_two_processes(tmp_path, tiny_corpus):
    ports = [_free_port(), _free_port()]
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    processes = []
    for index in range(2):
        tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        log = tmp_path / f"worker{index}.txt"
        processes.append(
            (
                _run_worker(
                    ["multi_worker", str(tmp_path / "run"), tiny_corpus],
                    {"KERAS_BACKEND": "tensorflow", "TF_CONFIG": tf_config},
                    log,
                ),
                log,
            )
        )
    results = [_result(p, log) for p, log in processes]
    assert [r["chief"] for r in results] == [True, False]
    for result in results:
        assert result["strategy"] == "multi_worker" and result["replicas"] == 2
        assert result["finished"] and result["step"] == 9
    # Workers agree on the held-out metrics (all-reduced evaluation).
    assert results[0]["eval"] == results[1]["eval"]
    assert (tmp_path / "run" / "checkpoints" / "ckpt-00000009").exists()


@pytest.mark.slow
@pytest.mark.skipif(
    BACKEND == "torch", reason="DataParallel runs on JAX; this test starts its own JAX process"
)
def test_jax_data_parallel_on_two_host_devices(tmp_path, tiny_corpus):
    log = tmp_path / "log.txt"
    process = _run_worker(
        ["mirrored", str(tmp_path / "run"), tiny_corpus],
        {"KERAS_BACKEND": "jax", "XLA_FLAGS": "--xla_force_host_platform_device_count=2"},
        log,
    )
    result = _result(process, log)
    assert result["strategy"] == "mirrored" and result["replicas"] == 2
    assert result["finished"] and result["step"] == 9


@pytest.mark.skipif(
    BACKEND == "torch", reason="jit_compile=True is XLA: TensorFlow and JAX backends"
)
def test_train_step_compiles_with_xla_and_static_shapes(tiny_corpus, tmp_path):
    """The TPU proxy: every input shape is static and the step runs under
    `jit_compile=True`."""
    from keras_bert.pretraining import build_pretraining
    from tests.pretraining.conftest import tiny_config

    config = tiny_config(tmp_path, tiny_corpus, jit_compile=True)
    pretraining = build_pretraining(config)
    dataset = pretraining.phases[0].dataset()
    for spec in keras.tree.flatten(dataset.element_spec):
        assert spec.shape.is_fully_defined(), spec
    history = pretraining.model.fit(dataset, steps_per_epoch=2, epochs=1, verbose=0, shuffle=False)
    assert pretraining.model.jit_compile is True
    assert np.isfinite(history.history["loss"][-1])
