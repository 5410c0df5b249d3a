import keras
import numpy as np

from keras_bert.pretraining import masked_lm_losses, masked_lm_metrics


def numpy_cross_entropy(labels, logits):
    logits = logits - logits.max(-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]


def test_mlm_loss_averages_over_real_predictions_only():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 4, 7)).astype("float32")  # (B, P, V)
    labels = rng.integers(0, 7, (3, 4)).astype("int32")
    weights = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], "float32")
    loss = masked_lm_losses()["mlm"](labels, logits, sample_weight=weights)
    ce = numpy_cross_entropy(labels, logits)
    expected = (ce * weights).sum() / weights.sum()
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(loss)), expected, rtol=1e-5)
    # Padded slots (weight 0) must not change it, whatever their labels.
    labels[weights == 0] = 0
    again = masked_lm_losses()["mlm"](labels, logits, sample_weight=weights)
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(again)), expected, rtol=1e-5)


def test_nsp_loss_is_batch_mean():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(5, 2)).astype("float32")
    labels = rng.integers(0, 2, (5,)).astype("int32")
    loss = masked_lm_losses()["nsp"](labels, logits, sample_weight=np.ones(5))
    np.testing.assert_allclose(
        float(keras.ops.convert_to_numpy(loss)),
        numpy_cross_entropy(labels, logits).mean(),
        rtol=1e-5,
    )


def test_mlm_accuracy_is_weighted():
    metric = masked_lm_metrics()["mlm"][0]
    logits = np.zeros((1, 4, 3), "float32")
    logits[0, :, 1] = 1.0  # predicts 1 everywhere
    labels = np.array([[1, 1, 0, 0]], "int32")
    metric.update_state(labels, logits, sample_weight=np.array([[1, 1, 1, 0]], "float32"))
    np.testing.assert_allclose(float(metric.result()), 2 / 3, rtol=1e-6)


def _trained_head_weights(next_sentence_prediction):
    """Pooler + next-sentence head weights before and after two updates on
    all-IsNext labels, and the logged losses."""
    from keras_bert.optimization import create_optimizer
    from keras_bert.pretraining import OptimizerConfig, compile_pretrainer
    from tests.optimization.test_optimizers import batch, tiny_pretrainer

    keras.utils.set_random_seed(0)
    model = tiny_pretrainer()
    optimizer = create_optimizer(
        OptimizerConfig(learning_rate=1e-2, warmup_steps=0, weight_decay=0.0), total_steps=10
    )
    compile_pretrainer(model, optimizer, next_sentence_prediction=next_sentence_prediction)
    features, labels, weights = batch()
    labels["nsp"] = np.zeros_like(labels["nsp"])  # contiguous text only
    heads = lambda: [
        np.array(w)
        for w in (model.backbone.pooler_dense.get_weights() + model.nsp_head.get_weights())
    ]
    before = heads()
    for _ in range(2):
        logs = model.train_on_batch(features, labels, sample_weight=weights, return_dict=True)
    return before, heads(), logs


def test_without_next_sentence_task_the_pooler_is_not_trained():
    # next_sentence_rate=0: constant labels must not train the pooler into
    # a constant answer; the total loss is the masked-LM loss alone.
    before, after, logs = _trained_head_weights(False)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(logs["loss"], logs["mlm_loss"], rtol=1e-6)
    assert "nsp_accuracy" not in logs


def test_with_next_sentence_task_the_pooler_is_trained():
    before, after, logs = _trained_head_weights(True)
    assert any(not np.array_equal(a, b) for a, b in zip(before, after))
    assert logs["loss"] > logs["mlm_loss"]
    assert "nsp_accuracy" in logs
