"""Sentence(-pair) classification head: GLUE, SST-2 (paper section 4.1).

Shape legend: B batch, T sequence length, H hidden size, C classes.
"""

import keras

from keras_bert.layers.bert_embeddings import bert_initializer
from keras_bert.models.bert_task_model import BertTaskModel


@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(BertTaskModel):
    """`[CLS]` classifier on a `BertBackbone`: pooled → dropout → dense.

    Paper: https://arxiv.org/abs/1810.04805, section 4.1 and figure 4 (a, b).
    The classification layer is the only new weight matrix (C × H); the
    pooled `[CLS]` vector is the backbone's tanh pooler output, as in
    `run_classifier.py`'s `create_model`. Logits come out in float32 whatever
    the dtype policy.

    Args:
        backbone: `BertBackbone`.
        num_classes: int. Number of classes C (>= 2).
        dropout: float. Dropout on the pooled output. Defaults to 0.1.
        label_names: list of str or None. One name per class, in class-id
            order; carried in the config so a saved model can name its
            predictions. Defaults to None.
        dtype: dtype or `keras.DTypePolicy` for the head. Defaults to the
            backbone's policy.

    Inputs (dict): the backbone's `token_ids`, `segment_ids`, `padding_mask`,
        each int32 (B, T).

    Outputs:
        float32 (B, C) logits.

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertBackbone
    >>> backbone = BertBackbone(vocabulary_size=100, num_layers=2, num_heads=2,
    ...                         hidden_dim=8, intermediate_dim=32)
    >>> model = BertClassifier(backbone, num_classes=3)
    >>> logits = model({"token_ids": np.ones((2, 5), "int32"),
    ...                 "segment_ids": np.zeros((2, 5), "int32"),
    ...                 "padding_mask": np.ones((2, 5), "int32")})
    >>> tuple(logits.shape)
    (2, 3)
    """

    def __init__(
        self,
        backbone,
        num_classes,
        dropout=0.1,
        label_names=None,
        dtype=None,
        **kwargs,
    ):
        if not isinstance(num_classes, int) or num_classes < 2:
            raise ValueError(
                f"`num_classes` must be an integer >= 2. Received: num_classes={num_classes!r}"
            )
        if label_names is not None and len(label_names) != num_classes:
            raise ValueError(
                "`label_names` must have one name per class. Received: "
                f"num_classes={num_classes}, label_names={label_names!r}"
            )
        dtype = dtype or backbone.dtype_policy

        # === Layers ===
        output_dropout = keras.layers.Dropout(dropout, dtype=dtype, name="output_dropout")
        output_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=bert_initializer(),
            dtype=dtype,
            name="output_dense",
        )

        # === Functional Model ===
        inputs = dict(backbone.input)
        pooled = backbone(inputs)["pooled_output"]  # (B, H)
        logits = output_dense(output_dropout(pooled))  # (B, C)
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
        super().__init__(inputs=inputs, outputs=logits, dtype=dtype, **kwargs)
        # Attached after `super().__init__()` (the torch backend requires it).
        self.backbone = backbone
        self.output_dropout = output_dropout
        self.output_dense = output_dense

        # === Config ===
        self.num_classes = num_classes
        self.dropout = dropout
        self.label_names = list(label_names) if label_names else None

    def task_config(self):
        return {
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "label_names": self.label_names,
        }
