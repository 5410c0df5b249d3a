"""What the task handlers share: batch-by-batch prediction that keeps each
batch's own (dynamic) length, a seeded cut of the examples (`data.train_limit`,
`data.eval_limit`) and the class names a saved model carries.

Writing prediction files is `inference.run_prediction`'s job
(`python -m keras_bert.predict`).
"""

import numpy as np
from keras import tree

from keras_bert.errors import FinetuneError
from keras_bert.runtime.progress import StderrProgbar


def predict_batches(model, dataset, progress=True):
    """Model outputs as a list of per-batch NumPy trees, in dataset order.

    `model.predict` concatenates batches and so needs one sequence length;
    with dynamic padding every batch has its own. With `progress`, a
    progress bar counts the batches (as `model.predict`'s does).

    Raises:
        FinetuneError: an output holds NaN or inf.
    """
    outputs = []
    batches = int(dataset.cardinality())
    bar = StderrProgbar(batches if batches >= 0 else None, unit_name="batch") if progress else None
    # NumPy batches: the JAX and PyTorch backends do not take tf.Tensors.
    for batch in dataset.as_numpy_iterator():
        inputs = batch[0] if isinstance(batch, tuple) else batch
        result = tree.map_structure(np.asarray, model.predict_on_batch(inputs))
        # A metric of NaN predictions is a number that means nothing.
        if not all(
            np.isfinite(x).all()
            for x in tree.flatten(result)
            if np.issubdtype(x.dtype, np.floating)
        ):
            raise FinetuneError(
                f"the model predicts non-finite values (NaN or inf) for "
                f"dev batch {len(outputs) + 1}; no metric computed."
            )
        outputs.append(result)
        if bar:
            bar.add(1)
    return outputs


def take_limit(items, limit, seed):
    """`items` shuffled with `seed` and cut to `limit` (None: unchanged)."""
    if limit is None or limit >= len(items):
        return items
    order = np.random.default_rng(seed).permutation(len(items))[:limit]
    return [items[i] for i in sorted(order)]


def model_label_names(model):
    """The class names a fine-tuned model carries (the runner saves them)."""
    if not getattr(model, "label_names", None):
        raise FinetuneError(
            f"the {type(model).__name__} carries no label names, so its "
            "outputs cannot be named; fine-tune it with keras_bert.finetune"
        )
    return list(model.label_names)
