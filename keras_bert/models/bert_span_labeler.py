"""Extractive question answering head: SQuAD v1.1 / v2.0 (paper 4.2, 4.3).

Shape legend: B batch, T sequence length, H hidden size.
"""

import keras

from keras_bert.layers.bert_embeddings import bert_initializer
from keras_bert.models.bert_task_model import BertTaskModel


@keras.saving.register_keras_serializable(package="keras_bert")
class BertSpanLabeler(BertTaskModel):
    """Start and end logits for every token of `[CLS] question [SEP] context`.

    Paper: https://arxiv.org/abs/1810.04805, section 4.2: a start vector S
    and an end vector E (one dense layer with two units, as
    `run_squad.py`'s `cls/squad/output_weights`) dotted with each final
    hidden state. No dropout on this head, as in the original code. For
    SQuAD v2.0 (section 4.3) the `[CLS]` position (index 0) scores "no
    answer"; the model is the same. Padding positions are not masked here:
    span post-processing only considers context tokens.

    Args:
        backbone: `BertBackbone`.
        dtype: dtype or `keras.DTypePolicy` for the head. Defaults to the
            backbone's policy.

    Inputs (dict): the backbone's `token_ids`, `segment_ids`, `padding_mask`,
        each int32 (B, T).

    Outputs (dict):
        start_logits: float32 (B, T).
        end_logits: float32 (B, T).

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertBackbone
    >>> backbone = BertBackbone(vocabulary_size=100, num_layers=2, num_heads=2,
    ...                         hidden_dim=8, intermediate_dim=32)
    >>> out = BertSpanLabeler(backbone)(
    ...     {"token_ids": np.ones((2, 5), "int32"),
    ...      "segment_ids": np.zeros((2, 5), "int32"),
    ...      "padding_mask": np.ones((2, 5), "int32")})
    >>> tuple(out["start_logits"].shape), tuple(out["end_logits"].shape)
    ((2, 5), (2, 5))
    """

    def __init__(self, backbone, dtype=None, **kwargs):
        dtype = dtype or backbone.dtype_policy

        # === Layers ===
        output_dense = keras.layers.Dense(
            2,
            kernel_initializer=bert_initializer(),
            dtype=dtype,
            name="output_dense",
        )

        # === Functional Model ===
        inputs = dict(backbone.input)
        sequence = backbone(inputs)["sequence_output"]  # (B, T, H)
        logits = output_dense(sequence)  # (B, T, 2)
        to_float32 = dict(activation="linear", dtype="float32")
        outputs = {
            "start_logits": keras.layers.Activation(**to_float32, name="start_logits")(
                logits[:, :, 0]
            ),  # (B, T)
            "end_logits": keras.layers.Activation(**to_float32, name="end_logits")(
                logits[:, :, 1]
            ),  # (B, T)
        }
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)
        # Attached after `super().__init__()` (the torch backend requires it).
        self.backbone = backbone
        self.output_dense = output_dense
