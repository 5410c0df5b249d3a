"""Where a run trains: one interface over tf.distribute and JAX DataParallel.

`--strategy` names: `auto`, `cpu`, `gpu`, `mirrored`, `multi_worker`, `tpu`.
On the TensorFlow backend they map to tf.distribute strategies (TPUStrategy
through `TPUClusterResolver`, MirroredStrategy, MultiWorkerMirroredStrategy
from `TF_CONFIG`, the default strategy); on JAX, `mirrored` (and `auto`
with several devices) is `keras.distribution.DataParallel`; on PyTorch
only a single device.
"""

import contextlib
import json
import os
import socket

import keras

from keras_bert.errors import ConfigError


class TrainingDistribution:
    """A resolved strategy: scope, replica count, chief flag, input sharding.

    Batch sizes in configs are global. With a tf.distribute strategy each
    input pipeline (one per worker) is built by `distribute_datasets` with
    the per-replica batch and its `InputContext`, so
    `pipelines.pretraining_dataset` shards the corpus files per worker;
    Keras then feeds one per-replica batch to each replica. Without one
    (default strategy, JAX) the dataset yields global batches and JAX's
    `DataParallel` splits them over devices.

    Args:
        name: str. The resolved strategy name.
        strategy: `tf.distribute.Strategy` or None.
        num_replicas: int. Devices that each take a slice of the batch.
        is_chief: bool. Whether this process writes checkpoints, logs and
            exports (worker 0 of a multi-worker run).
        processes: int. The processes that train together (one per worker).
    """

    def __init__(self, name, strategy=None, num_replicas=1, is_chief=True, processes=1):
        self.name = name
        self.strategy = strategy
        self.num_replicas = num_replicas
        self.is_chief = is_chief
        self.processes = processes

    def scope(self):
        """Context under which the model and optimizer must be created."""
        if self.strategy is None:
            return contextlib.nullcontext()
        return self.strategy.scope()

    def distribute_datasets(self, dataset_fn, global_batch_size):
        """Builds the input for `fit`/`evaluate`.

        Args:
            dataset_fn: callable `(batch_size, input_context) -> tf.data.Dataset`.
            global_batch_size: int, divisible by `num_replicas`.
        """
        if global_batch_size % self.num_replicas:
            raise ConfigError(
                f"The global batch size must be divisible by the number of "
                f"replicas. Received: batch_size={global_batch_size}, "
                f"replicas={self.num_replicas} ({self.name})"
            )
        if self.strategy is None or self.name in ("default", "cpu", "gpu"):
            return dataset_fn(global_batch_size, None)
        return self.strategy.distribute_datasets_from_function(
            lambda context: dataset_fn(
                context.get_per_replica_batch_size(global_batch_size), context
            )
        )

    def __repr__(self):
        return (
            f"TrainingDistribution({self.name!r}, replicas="
            f"{self.num_replicas}, chief={self.is_chief})"
        )


def create_distribution(name="auto", tpu=None):
    """Resolves a `--strategy` name on the current Keras backend.

    Call it before building any model or dataset: multi-worker and TPU
    strategies must configure the TensorFlow runtime first.

    Raises:
        ConfigError: the strategy does not exist on this backend, or its
            devices (GPU, TPU, TF_CONFIG cluster) cannot be found.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        return _tensorflow_distribution(name, tpu)
    if backend == "jax":
        return _jax_distribution(name)
    if name == "tpu":
        raise ConfigError(
            f"No TPU could be reached: the {backend} backend trains on one "
            "device; use the tensorflow or jax backend for TPUs."
        )
    if name not in ("auto", "cpu", "gpu"):
        raise ConfigError(
            f"strategy={name!r} needs the tensorflow or jax backend; the "
            f"{backend} backend trains on one device (auto, cpu or gpu)."
        )
    return TrainingDistribution(name if name != "auto" else "default")


def _tf_config_workers():
    """Processes TF_CONFIG's cluster lists (0 without TF_CONFIG), once its
    `task` is checked against the cluster."""
    try:
        tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    except json.JSONDecodeError as error:
        raise ConfigError(f"TF_CONFIG is not valid JSON: {error}") from None
    cluster = tf_config.get("cluster", {}) if isinstance(tf_config, dict) else {}
    workers = len(cluster.get("worker", [])) + len(cluster.get("chief", []))
    task = tf_config.get("task") if isinstance(tf_config, dict) else None
    if workers and task is not None:
        kind, index = task.get("type"), task.get("index", 0)
        members = len(cluster.get(kind, [])) if isinstance(kind, str) else 0
        if not isinstance(index, int) or not 0 <= index < members:
            raise ConfigError(
                f"TF_CONFIG's task {kind}:{index} is not in its cluster "
                f"({members} {kind!s} address(es)); task.index counts from 0."
            )
    return workers


def _tensorflow_distribution(name, tpu):
    import tensorflow as tf

    if name == "auto":
        if _tf_config_workers() > 1:
            name = "multi_worker"
        elif tpu or os.environ.get("TPU_NAME") or os.environ.get("COLAB_TPU_ADDR"):
            name = "tpu"
        elif len(tf.config.list_physical_devices("GPU")) > 1:
            name = "mirrored"
        else:
            name = "default"
    if name == "tpu":
        strategy = tf.distribute.TPUStrategy(_connect_tpu(tpu))
        return TrainingDistribution("tpu", strategy, strategy.num_replicas_in_sync)
    if name == "multi_worker":
        workers = _tf_config_workers()
        if workers < 1:
            raise ConfigError(
                "strategy=multi_worker needs TF_CONFIG with a `cluster` of "
                "workers and this process's `task`."
            )
        from keras_bert.pretraining import multi_worker_compat

        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        multi_worker_compat.apply()
        resolver = strategy.cluster_resolver
        is_chief = resolver.task_type == "chief" or (
            resolver.task_type == "worker"
            and resolver.task_id == 0
            and "chief" not in resolver.cluster_spec().as_dict()
        )
        return TrainingDistribution(
            "multi_worker",
            strategy,
            strategy.num_replicas_in_sync,
            is_chief,
            processes=workers,
        )
    if name == "mirrored":
        strategy = tf.distribute.MirroredStrategy()
        return TrainingDistribution("mirrored", strategy, strategy.num_replicas_in_sync)
    if name == "gpu":
        if not tf.config.list_physical_devices("GPU"):
            raise ConfigError("strategy=gpu but TensorFlow sees no GPU.")
        return TrainingDistribution("gpu", tf.distribute.OneDeviceStrategy("/gpu:0"))
    if name == "cpu":
        return TrainingDistribution("cpu", tf.distribute.OneDeviceStrategy("/cpu:0"))
    return TrainingDistribution("default")


def _connect_tpu(tpu):
    """`TPUClusterResolver` + initialisation, or a one-line `ConfigError`."""
    import tensorflow as tf

    tpu = tpu or os.environ.get("TPU_NAME") or os.environ.get("COLAB_TPU_ADDR")
    if tpu and ":" in tpu:
        # A gRPC address that nothing answers would make TensorFlow wait
        # forever; probe it first.
        address = tpu.removeprefix("grpc://")
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=10).close()
        except (OSError, ValueError) as error:
            raise ConfigError(f"No TPU could be reached at {tpu!r}: {error}") from None
        tpu = f"grpc://{address}"
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except Exception as error:  # The resolver raises many unrelated types.
        message = (
            str(error).strip().splitlines()[0] if str(error).strip() else (type(error).__name__)
        )
        raise ConfigError(
            f"No TPU could be reached (tpu={tpu!r}): {message}. Pass --tpu "
            "NAME_OR_ADDRESS, or run where TPU_NAME is set (Cloud TPU VM, "
            "Colab TPU runtime)."
        ) from None
    return resolver


def _jax_distribution(name):
    import jax

    workers = _tf_config_workers()
    if workers > 1 and jax.process_count() == 1:
        # Else every worker would train alone and write the same outputs.
        raise ConfigError(
            f"TF_CONFIG lists {workers} workers, but the jax backend does not "
            "read it: start every process with jax.distributed.initialize() "
            "(then strategy=mirrored), or train multi-worker on the "
            "tensorflow backend (strategy=multi_worker)."
        )
    devices = jax.devices()
    platform = devices[0].platform
    if name == "auto":
        name = "mirrored" if len(devices) > 1 else "default"
    if name == "multi_worker":
        raise ConfigError(
            "strategy=multi_worker is TensorFlow's MultiWorkerMirroredStrategy; "
            "on JAX start every process with jax.distributed.initialize() and "
            "use strategy=mirrored (DataParallel over all devices)."
        )
    if name == "tpu" and platform != "tpu":
        raise ConfigError(f"No TPU could be reached: JAX sees only {platform} devices.")
    if name == "gpu" and platform != "gpu":
        raise ConfigError(f"strategy=gpu but JAX sees no GPU ({platform}).")
    if name in ("mirrored", "tpu", "gpu") and len(devices) > 1:
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
        return TrainingDistribution(
            name,
            num_replicas=len(devices),
            is_chief=jax.process_index() == 0,
            processes=jax.process_count(),
        )
    return TrainingDistribution(name if name != "auto" else "default")
