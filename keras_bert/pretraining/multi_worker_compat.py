"""Makes Keras 3's TensorFlow `fit`/`evaluate` work under
`MultiWorkerMirroredStrategy`.

Keras 3 (checked up to 3.15.1, the pinned version) fails there in two places,
for any model with metrics (tensorflow/tensorflow#72388):

1. At the start of `fit`/`evaluate`, `TensorFlowTrainer._maybe_symbolic_build`
   passes the whole first batch, a dict of per-replica values, to one
   `strategy.reduce` call; the collective all-reduce accepts only a single
   tensor ("Attempt to convert a value ({token_ids: PerReplica...})").
   Only the batch's shapes and dtypes are needed there, so the patched
   method takes this worker's local batch instead of all-reducing it.
2. After every step, `reduce_per_replica` averages each logged value
   across workers with `strategy.reduce("MEAN", value, axis=0)`, which is
   invalid for the scalar losses and metrics ("Invalid reduction dimension
   0 for input with 0 dimensions"). Scalars are averaged with `axis=None`.

Nothing else changes, and `apply()` is only called when a multi-worker
strategy is created, so single-worker runs use Keras unmodified.
"""

from keras.src import tree
from keras.src.backend.tensorflow import trainer as tf_trainer

_original_reduce_per_replica = tf_trainer.reduce_per_replica


def _reduce_per_replica(values, strategy, reduction):
    if reduction in ("auto", "mean") and tf_trainer._collective_all_reduce_multi_worker(strategy):
        return tree.map_structure(
            lambda v: strategy.reduce("MEAN", v, axis=None if v.shape.rank == 0 else 0), values
        )
    return _original_reduce_per_replica(values, strategy, reduction)


def _maybe_symbolic_build(self, iterator=None, data_batch=None):
    if self._distribute_strategy is None:
        return
    if iterator is not None:
        for _, _, it in iterator:
            data_batch = tree.map_structure(
                lambda v: self._distribute_strategy.experimental_local_results(v)[0], next(it)
            )
            break
    with self._distribute_strategy.scope():
        self._symbolic_build(data_batch=data_batch)


def apply():
    """Installs both fixes (idempotent)."""
    tf_trainer.reduce_per_replica = _reduce_per_replica
    tf_trainer.TensorFlowTrainer._maybe_symbolic_build = _maybe_symbolic_build
