"""The student's loss: the teacher's outputs as soft targets, blended with
the task's labels where a sentence has one."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class StudentLoss(keras.losses.Loss):
    """`(1 - w) * soft + w * hard` for a batch of the transfer set.

    `soft` is `keras.distillation.LogitsDistillation`'s: the batch mean of
    KL(teacher || student) over the two softmax distributions at
    `temperature`, times its square (Hinton et al. 2015), or of the squared
    difference of the logits averaged over the classes (`mse`; a
    regression's score is its one logit). `hard` is the task's own loss
    (cross-entropy from the logits, or the squared error of the score)
    averaged over the batch's labelled sentences only (0 when it has
    none): augmented copies and unlabelled text carry no label.

    `LogitsDistillation` is used as a function here, not through
    `keras.distillation.Distiller`: the Distiller runs the teacher on every
    batch, with the student's inputs, and here the teacher labelled the
    transfer set once, with its own tokenizer.

    Args:
        soft_loss: `"kl_divergence"` or `"mse"`.
        temperature: float > 0. The KL divergence's (`mse` compares the
            logits themselves).
        hard_label_weight: float in [0, 1], `w`.
        regression: bool. The student outputs a score (B,), not logits.

    Call arguments:
        y_true: (B, C + 2) float: the teacher's C outputs, the label (a
            class index or a score) and 1 where the sentence has a label.
        y_pred: the student's logits (B, C), or its score (B,).
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
        if self.regression:
            y_pred = ops.reshape(y_pred, (-1, 1))  # (B, 1), as the teacher's
        teacher = y_true[:, :-2]  # (B, C)
        label, has_label = y_true[:, -2], y_true[:, -1]  # (B,)
        soft = self._soft.compute_loss(teacher, y_pred)
        if self.hard_label_weight == 0:
            return soft
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
