import numpy as np
import keras

from keras_bert.training import pretraining_losses, pretraining_metrics


def numpy_cross_entropy(labels, logits):
    logits = logits - logits.max(-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]


def test_mlm_loss_averages_over_real_predictions_only():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 4, 7)).astype("float32")  # (B, P, V)
    labels = rng.integers(0, 7, (3, 4)).astype("int32")
    weights = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], "float32")
    loss = pretraining_losses()["mlm"](labels, logits, sample_weight=weights)
    ce = numpy_cross_entropy(labels, logits)
    expected = (ce * weights).sum() / weights.sum()
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(loss)),
                               expected, rtol=1e-5)
    # Padded slots (weight 0) must not change it, whatever their labels.
    labels[weights == 0] = 0
    again = pretraining_losses()["mlm"](labels, logits, sample_weight=weights)
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(again)),
                               expected, rtol=1e-5)


def test_nsp_loss_is_batch_mean():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(5, 2)).astype("float32")
    labels = rng.integers(0, 2, (5,)).astype("int32")
    loss = pretraining_losses()["nsp"](labels, logits, sample_weight=np.ones(5))
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(loss)),
                               numpy_cross_entropy(labels, logits).mean(),
                               rtol=1e-5)


def test_mlm_accuracy_is_weighted():
    metric = pretraining_metrics()["mlm"][0]
    logits = np.zeros((1, 4, 3), "float32")
    logits[0, :, 1] = 1.0  # predicts 1 everywhere
    labels = np.array([[1, 1, 0, 0]], "int32")
    metric.update_state(labels, logits,
                        sample_weight=np.array([[1, 1, 1, 0]], "float32"))
    np.testing.assert_allclose(float(metric.result()), 2 / 3, rtol=1e-6)
