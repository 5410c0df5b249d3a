"""Multiple-choice head: SWAG (paper section 4.4).

Shape legend: B batch, C choices, T sequence length, H hidden size.
"""

import keras

from keras_bert.layers.bert_embeddings import bert_initializer
from keras_bert.models.bert_task_model import BertTaskModel


@keras.saving.register_keras_serializable(package="keras_bert")
class FoldChoices(keras.layers.Layer):
    """(B, C, T) → (B·C, T), reading T at call time (dynamic padding)."""

    def call(self, x):
        return keras.ops.reshape(x, (-1, keras.ops.shape(x)[-1]))

    def compute_output_shape(self, input_shape):
        batch, choices, length = input_shape
        folded = None if batch is None or choices is None else batch * choices
        return (folded, length)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMultipleChoice(BertTaskModel):
    """Scores C `[CLS] context [SEP] ending [SEP]` sequences against each other.

    Paper: https://arxiv.org/abs/1810.04805, section 4.4: each of the C
    candidate sequences is encoded separately; a single vector dotted with
    each pooled `[CLS]` gives one score per choice, and a softmax over the
    C scores is trained with cross-entropy. Implemented by folding the
    choices into the batch, (B, C, T) → (B·C, T), running the backbone once
    and unfolding the scores to (B, C).

    Args:
        backbone: `BertBackbone`.
        num_choices: int. Candidates per example C (>= 2; SWAG has 4).
        dropout: float. Dropout on the pooled outputs. Defaults to 0.1.
        dtype: dtype or `keras.DTypePolicy` for the head. Defaults to the
            backbone's policy.

    Inputs (dict): `token_ids`, `segment_ids`, `padding_mask`, each int32
        (B, C, T).

    Outputs:
        float32 (B, C) logits.

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertBackbone
    >>> backbone = BertBackbone(vocabulary_size=100, num_layers=2, num_heads=2,
    ...                         hidden_dim=8, intermediate_dim=32)
    >>> model = BertMultipleChoice(backbone, num_choices=2)
    >>> logits = model({"token_ids": np.ones((1, 2, 5), "int32"),
    ...                 "segment_ids": np.zeros((1, 2, 5), "int32"),
    ...                 "padding_mask": np.ones((1, 2, 5), "int32")})
    >>> tuple(logits.shape)
    (1, 2)
    """

    def __init__(self, backbone, num_choices, dropout=0.1, dtype=None, **kwargs):
        if not isinstance(num_choices, int) or num_choices < 2:
            raise ValueError(
                f"`num_choices` must be an integer >= 2. Received: num_choices={num_choices!r}"
            )
        dtype = dtype or backbone.dtype_policy

        # === Layers ===
        output_dropout = keras.layers.Dropout(dropout, dtype=dtype, name="output_dropout")
        output_dense = keras.layers.Dense(
            1,
            kernel_initializer=bert_initializer(),
            dtype=dtype,
            name="output_dense",
        )

        # === Functional Model ===
        inputs = {
            name: keras.Input(shape=(num_choices, None), dtype="int32", name=name)
            for name in ("token_ids", "segment_ids", "padding_mask")
        }
        flat = {
            name: FoldChoices(dtype="int32", name=f"fold_{name}")(x) for name, x in inputs.items()
        }  # (B, C, T) -> (B * C, T)
        pooled = backbone(flat)["pooled_output"]  # (B * C, H)
        scores = output_dense(output_dropout(pooled))  # (B * C, 1)
        logits = keras.ops.reshape(scores, (-1, num_choices))  # (B, C)
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
        super().__init__(inputs=inputs, outputs=logits, dtype=dtype, **kwargs)
        # Attached after `super().__init__()` (the torch backend requires it).
        self.backbone = backbone
        self.output_dropout = output_dropout
        self.output_dense = output_dense

        # === Config ===
        self.num_choices = num_choices
        self.dropout = dropout

    def task_config(self):
        return {
            "num_choices": self.num_choices,
            "dropout": self.dropout,
        }
