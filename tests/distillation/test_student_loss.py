"""`StudentLoss` against the formulas written out in NumPy."""

import keras
import numpy as np
import pytest

from keras_bert.distillation.student_loss import StudentLoss

RNG = np.random.default_rng(0)
TEACHER = RNG.normal(size=(5, 3)).astype("float32") * 3
STUDENT = RNG.normal(size=(5, 3)).astype("float32")
LABELS = np.array([2, 0, 1, 0, 0], "float32")
HAS_LABEL = np.array([1, 0, 1, 0, 0], "float32")


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def targets(teacher, labels=LABELS, has_label=HAS_LABEL, is_target=None):
    is_target = np.ones(len(teacher), "float32") if is_target is None else is_target
    return np.concatenate(
        [teacher, labels[:, None], has_label[:, None], is_target[:, None]], axis=1
    )


def loss(y_true, y_pred, **kwargs):
    return float(keras.ops.convert_to_numpy(StudentLoss(**kwargs)(y_true, y_pred)))


@pytest.mark.parametrize("temperature", [1.0, 2.5])
def test_kl_divergence_at_a_temperature_times_its_square(temperature):
    p = softmax(TEACHER / temperature)
    q = softmax(STUDENT / temperature)
    expected = np.mean(np.sum(p * np.log(p / q), axis=-1)) * temperature**2
    got = loss(targets(TEACHER), STUDENT, temperature=temperature)
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_mse_compares_the_logits_whatever_the_temperature():
    expected = np.mean((TEACHER - STUDENT) ** 2)
    got = loss(targets(TEACHER), STUDENT, soft_loss="mse", temperature=4.0)
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_hard_labels_count_only_where_a_sentence_has_one():
    p, q = softmax(TEACHER), softmax(STUDENT)
    soft = np.mean(np.sum(p * np.log(p / q), axis=-1))
    log_q = np.log(q)
    cross_entropy = -log_q[np.arange(5), LABELS.astype(int)]
    hard = np.sum(cross_entropy * HAS_LABEL) / HAS_LABEL.sum()
    got = loss(targets(TEACHER), STUDENT, hard_label_weight=0.3)
    np.testing.assert_allclose(got, 0.7 * soft + 0.3 * hard, rtol=1e-5)


def test_a_batch_without_labels_is_the_soft_loss_alone_weighted():
    p, q = softmax(TEACHER), softmax(STUDENT)
    soft = np.mean(np.sum(p * np.log(p / q), axis=-1))
    got = loss(targets(TEACHER, has_label=np.zeros(5, "float32")), STUDENT, hard_label_weight=0.3)
    np.testing.assert_allclose(got, 0.7 * soft, rtol=1e-5)


def test_a_regression_student_learns_the_teachers_score():
    teacher, student = TEACHER[:, :1], STUDENT[:, 0]
    scores = np.array([4.0, 0.0, 1.5, 0.0, 0.0], "float32")
    soft = np.mean((teacher[:, 0] - student) ** 2)
    hard = np.sum((student - scores) ** 2 * HAS_LABEL) / HAS_LABEL.sum()
    got = loss(
        targets(teacher, labels=scores),
        student,
        soft_loss="mse",
        hard_label_weight=0.5,
        regression=True,
    )
    np.testing.assert_allclose(got, 0.5 * soft + 0.5 * hard, rtol=1e-5)


def test_tagging_counts_the_targets_only():
    # Two sentences of 4 positions; the targets are the words' first pieces.
    is_target = np.array([0, 1, 1, 0, 0, 1, 0, 0], "float32")
    teacher = np.concatenate([TEACHER, TEACHER[:3]])
    student = np.concatenate([STUDENT, STUDENT[:3]])
    labels = np.array([0, 2, 1, 0, 0, 0, 0, 0], "float32")
    has_label = np.array([1, 1, 0, 0, 0, 1, 1, 0], "float32")  # One off-target.
    keep = is_target == 1
    p, q = softmax(teacher[keep]), softmax(student[keep])
    soft = np.mean(np.sum(p * np.log(p / q), axis=-1))
    log_q = np.log(softmax(student))
    labelled = keep & (has_label == 1)
    hard = np.mean(-log_q[labelled, labels[labelled].astype(int)])
    y_true = targets(teacher, labels, has_label, is_target).reshape(2, 4, -1)
    got = loss(y_true, student.reshape(2, 4, 3), hard_label_weight=0.5)
    np.testing.assert_allclose(got, 0.5 * soft + 0.5 * hard, rtol=1e-5)


@pytest.mark.backend_independent
def test_a_regression_takes_no_distribution_loss():
    with pytest.raises(ValueError, match="must be 'mse'"):
        StudentLoss(soft_loss="kl_divergence", regression=True)


@pytest.mark.backend_independent
def test_round_trips_through_its_config():
    original = StudentLoss(soft_loss="mse", temperature=2.0, hard_label_weight=0.25)
    restored = keras.losses.deserialize(keras.losses.serialize(original))
    assert isinstance(restored, StudentLoss)
    assert restored.get_config() == original.get_config()
