"""Sentence-pair regression head: STS-B (paper section 4.1, GLUE).

Shape legend: B batch, T sequence length, H hidden size.
"""

import keras

from keras_bert.layers.bert_embeddings import bert_initializer
from keras_bert.models.bert_task_model import BertTaskModel


@keras.saving.register_keras_serializable(package="keras_bert")
class BertRegressor(BertTaskModel):
    """One real-valued score per input from the pooled `[CLS]` vector.

    Paper: https://arxiv.org/abs/1810.04805, section 4.1 (STS-B is scored
    by a single linear output trained with mean squared error). Same
    pooled → dropout → dense path as `BertClassifier`, with one unit and no
    activation; the trailing unit axis is dropped, so the output is (B,).

    Args:
        backbone: `BertBackbone`.
        dropout: float. Dropout on the pooled output. Defaults to 0.1.
        dtype: dtype or `keras.DTypePolicy` for the head. Defaults to the
            backbone's policy.

    Inputs (dict): the backbone's `token_ids`, `segment_ids`, `padding_mask`,
        each int32 (B, T).

    Outputs:
        float32 (B,) scores (shape (B,), not (B, 1)).

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertBackbone
    >>> backbone = BertBackbone(vocabulary_size=100, num_layers=2, num_heads=2,
    ...                         hidden_dim=8, intermediate_dim=32)
    >>> model = BertRegressor(backbone)
    >>> scores = model({"token_ids": np.ones((2, 5), "int32"),
    ...                 "segment_ids": np.zeros((2, 5), "int32"),
    ...                 "padding_mask": np.ones((2, 5), "int32")})
    >>> tuple(scores.shape)
    (2,)
    """

    def __init__(self, backbone, dropout=0.1, dtype=None, **kwargs):
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
        inputs = dict(backbone.input)
        pooled = backbone(inputs)["pooled_output"]  # (B, H)
        score = output_dense(output_dropout(pooled))  # (B, 1)
        score = keras.layers.Activation("linear", dtype="float32", name="score")(
            score[:, 0]
        )  # (B,)
        super().__init__(inputs=inputs, outputs=score, dtype=dtype, **kwargs)
        # Attached after `super().__init__()` (the torch backend requires it).
        self.backbone = backbone
        self.output_dropout = output_dropout
        self.output_dense = output_dense

        # === Config ===
        self.dropout = dropout

    def task_config(self):
        return {
            "dropout": self.dropout,
        }
