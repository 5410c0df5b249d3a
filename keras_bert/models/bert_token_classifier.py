"""Per-token tagging head: CoNLL-2003 NER (paper section 5.3).

Shape legend: B batch, T sequence length, H hidden size, N labels.
"""

import keras

from keras_bert.layers.bert_embeddings import bert_initializer
from keras_bert.models.bert_task_model import BertTaskModel


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifier(BertTaskModel):
    """Label logits for every WordPiece: sequence output → dropout → dense.

    Paper: https://arxiv.org/abs/1810.04805, section 5.3 (figure 4 d): each
    final hidden state is classified independently, without a CRF; only the
    first sub-token of each word carries a label, the readers in
    `pipelines.tasks` set the other positions to the ignored label -1.

    Args:
        backbone: `BertBackbone`.
        num_labels: int. Number of tags N (>= 2).
        dropout: float. Dropout on the sequence output. Defaults to 0.1.
        label_names: list of str or None. One tag per label id (for example
            `["O", "B-PER", ...]`), carried in the config. Defaults to None.
        dtype: dtype or `keras.DTypePolicy` for the head. Defaults to the
            backbone's policy.

    Inputs (dict): the backbone's `token_ids`, `segment_ids`, `padding_mask`,
        each int32 (B, T).

    Outputs:
        float32 (B, T, N) logits.

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertBackbone
    >>> backbone = BertBackbone(vocabulary_size=100, num_layers=2, num_heads=2,
    ...                         hidden_dim=8, intermediate_dim=32)
    >>> model = BertTokenClassifier(backbone, num_labels=3)
    >>> logits = model({"token_ids": np.ones((2, 5), "int32"),
    ...                 "segment_ids": np.zeros((2, 5), "int32"),
    ...                 "padding_mask": np.ones((2, 5), "int32")})
    >>> tuple(logits.shape)
    (2, 5, 3)
    """

    def __init__(
        self,
        backbone,
        num_labels,
        dropout=0.1,
        label_names=None,
        dtype=None,
        **kwargs,
    ):
        if not isinstance(num_labels, int) or num_labels < 2:
            raise ValueError(
                f"`num_labels` must be an integer >= 2. Received: num_labels={num_labels!r}"
            )
        if label_names is not None and len(label_names) != num_labels:
            raise ValueError(
                "`label_names` must have one name per label. Received: "
                f"num_labels={num_labels}, label_names={label_names!r}"
            )
        dtype = dtype or backbone.dtype_policy

        # === Layers ===
        output_dropout = keras.layers.Dropout(dropout, dtype=dtype, name="output_dropout")
        output_dense = keras.layers.Dense(
            num_labels,
            kernel_initializer=bert_initializer(),
            dtype=dtype,
            name="output_dense",
        )

        # === Functional Model ===
        inputs = dict(backbone.input)
        sequence = backbone(inputs)["sequence_output"]  # (B, T, H)
        logits = output_dense(output_dropout(sequence))  # (B, T, N)
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
        super().__init__(inputs=inputs, outputs=logits, dtype=dtype, **kwargs)
        # Attached after `super().__init__()` (the torch backend requires it).
        self.backbone = backbone
        self.output_dropout = output_dropout
        self.output_dense = output_dense

        # === Config ===
        self.num_labels = num_labels
        self.dropout = dropout
        self.label_names = list(label_names) if label_names else None

    def task_config(self):
        return {
            "num_labels": self.num_labels,
            "dropout": self.dropout,
            "label_names": self.label_names,
        }
