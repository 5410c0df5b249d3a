"""The student's loss: the teacher's outputs as soft targets, blended with
the task's labels where a sentence (or a word) has one."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class StudentLoss(keras.losses.Loss):
    """`(1 - w) * soft + w * hard` over the targets of a transfer-set batch.

    A target is a sentence, or (token tagging) a word's first piece; the
    other positions of a tagged sentence (its other pieces, `[CLS]`,
    `[SEP]`, padding, a word cut by the sequence length) carry none.

    `soft` is `keras.distillation.LogitsDistillation`'s over the targets:
    the mean of KL(teacher || student) between the two softmax
    distributions at `temperature`, times its square (Hinton et al. 2015),
    or of the squared difference of the logits averaged over the classes
    (`mse`; a regression's score is its one logit). `hard` is the task's own
    loss (cross-entropy from the logits, or the squared error of the score)
    averaged over the targets that have a label (0 when none has):
    augmented copies and unlabelled text carry no label.

    `LogitsDistillation` is used as a function here, not through
    `keras.distillation.Distiller`: the Distiller runs the teacher on every
    batch, with the student's inputs, and here the teacher labelled the
    transfer set once, with its own tokenizer. It averages over every
    position it is given, so the positions without a target get the same
    logits on both sides (zeros: no divergence, no difference) and the mean
    is rescaled to the targets.

    Args:
        soft_loss: `"kl_divergence"` or `"mse"`.
        temperature: float > 0. The KL divergence's (`mse` compares the
            logits themselves).
        hard_label_weight: float in [0, 1], `w`.
        regression: bool. The student outputs a score (B,), not logits.

    Call arguments:
        y_true: (..., C + 3) float: the teacher's C outputs, the label (a
            class index or a score), 1 where there is a label, 1 where the
            position is a target. (B, C + 3) for sentences, (B, T, C + 3)
            for tagging.
        y_pred: the student's logits (..., C), or its score (B,).
    """

    def __init__(
        self,
        soft_loss="kl_divergence",
        temperature=1.0,
        hard_label_weight=0.0,
        regression=False,
        name="student_loss",
        **kwargs,
    ):
        super().__init__(name=name, **kwargs)
        if regression and soft_loss != "mse":
            raise ValueError(
                "A regression teacher's output is a score, not a distribution: its soft "
                f"loss must be 'mse'. Received: soft_loss={soft_loss!r}"
            )
        self.soft_loss = soft_loss
        self.temperature = temperature
        self.hard_label_weight = hard_label_weight
        self.regression = regression
        # An instance, not the name: `LogitsDistillation` applies the
        # softmax (and T^2) only for a `KLDivergence` instance, and would
        # take the KL divergence of the logits themselves given the string.
        self._soft = keras.distillation.LogitsDistillation(
            temperature=temperature if soft_loss == "kl_divergence" else 1.0,
            loss=keras.losses.KLDivergence() if soft_loss == "kl_divergence" else "mse",
        )

    def call(self, y_true, y_pred):
        y_true = ops.cast(y_true, "float32")
        y_pred = ops.cast(y_pred, "float32")
        width = y_true.shape[-1]
        y_true = ops.reshape(y_true, (-1, width))  # (N, C + 3), N targets or positions
        y_pred = ops.reshape(y_pred, (-1, width - 3))  # (N, C)
        teacher = y_true[:, :-3]
        label, has_label, is_target = y_true[:, -3], y_true[:, -2], y_true[:, -1]  # (N,)
        targets = ops.maximum(ops.sum(is_target), 1.0)
        keep = is_target[:, None]
        soft = self._soft.compute_loss(teacher * keep, y_pred * keep)
        soft = soft * ops.cast(ops.shape(is_target)[0], "float32") / targets
        if self.hard_label_weight == 0:
            return soft
        has_label = has_label * is_target
        if self.regression:
            hard = ops.square(y_pred[:, 0] - label)
        else:
            hard = keras.losses.sparse_categorical_crossentropy(
                ops.cast(label, "int32"), y_pred, from_logits=True
            )
        hard = ops.sum(hard * has_label) / ops.maximum(ops.sum(has_label), 1.0)
        return (1.0 - self.hard_label_weight) * soft + self.hard_label_weight * hard

    def get_config(self):
        return {
            **super().get_config(),
            "soft_loss": self.soft_loss,
            "temperature": self.temperature,
            "hard_label_weight": self.hard_label_weight,
            "regression": self.regression,
        }
