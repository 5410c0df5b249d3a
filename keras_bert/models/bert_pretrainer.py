"""BERT with its two pre-training heads: masked LM and next sentence.

Shape legend: B batch, T sequence length, P masked positions per sequence
(`max_predictions_per_seq`), H hidden size, V vocabulary size.
"""

import keras
from keras import ops
from keras_hub.layers import MaskedLMHead

from keras_bert.layers.bert_embeddings import bert_initializer
from keras_bert.layers.bert_encoder_block import get_activation
from keras_bert.layers.sampled_softmax import sampled_softmax_logits
from keras_bert.models.bert_task_model import BertTaskModel


def tied_masked_lm_head(backbone, dtype, name):
    """keras-hub's `MaskedLMHead` decoding with `backbone`'s token
    embeddings, in BERT's form (GELU transform, LayerNorm, output bias)."""
    return MaskedLMHead(
        token_embedding=backbone.token_embedding,
        intermediate_activation=get_activation(backbone.hidden_activation),
        layer_norm_epsilon=backbone.layer_norm_epsilon,
        kernel_initializer=bert_initializer(),
        dtype=dtype,
        name=name,
    )


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPretrainer(BertTaskModel):
    """Masked-LM and next-sentence heads on a `BertBackbone` (paper §3.1).

    The masked-LM head (`cls/predictions` in the original checkpoint) is a
    dense + GELU + LayerNorm transform evaluated only at `mask_positions`,
    followed by the transposed token-embedding matrix (tied weights) and a
    per-token output bias. The next-sentence head (`cls/seq_relationship`)
    is a 2-way dense layer on the pooled `[CLS]` output; class 0 = IsNext,
    1 = NotNext as in the original code. Logits come out in float32 whatever
    the dtype policy, so losses and their softmax run in float32.

    Args:
        backbone: `BertBackbone`.
        sampled_softmax_candidates: int or None. Train the masked LM on a
            sampled softmax: the batch's targets plus this many tokens drawn
            from the vocabulary (`layers.sampled_softmax_logits`), when a training
            batch carries `masked_lm_ids` and `masked_lm_weights` (see
            below). None (the default): the full softmax. Evaluation,
            prediction and export use the full softmax either way.
        dtype: dtype or `keras.DTypePolicy` for the heads. Defaults to the
            backbone's policy.

    Inputs (dict):
        The backbone's `token_ids`, `segment_ids`, `padding_mask`, plus
        mask_positions: int32 (B, P), indices into T of the chosen tokens.

    Outputs (dict):
        mlm: float32 (B, P, V) logits at `mask_positions`.
        nsp: float32 (B, 2) logits.

    Sampled-softmax training: with `sampled_softmax_candidates`, a call
    with `training=True` whose inputs also hold `masked_lm_ids` (B, P) and
    `masked_lm_weights` (B, P) returns `mlm` as (B, P, 1 + B·P + S) logits
    over the candidates, each slot's target in column 0: its label is 0
    (`pretraining.masked_lm_objective.to_keras_batch` arranges both).

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertBackbone
    >>> backbone = BertBackbone(vocabulary_size=100, num_layers=2, num_heads=2,
    ...                         hidden_dim=8, intermediate_dim=32)
    >>> model = BertPretrainer(backbone)
    >>> out = model({"token_ids": np.ones((2, 5), "int32"),
    ...              "segment_ids": np.zeros((2, 5), "int32"),
    ...              "padding_mask": np.ones((2, 5), "int32"),
    ...              "mask_positions": np.array([[1, 3], [2, 4]], "int32")})
    >>> tuple(out["mlm"].shape), tuple(out["nsp"].shape)
    ((2, 2, 100), (2, 2))
    """

    def __init__(self, backbone, sampled_softmax_candidates=None, dtype=None, **kwargs):
        dtype = dtype or backbone.dtype_policy

        # === Layers ===
        mlm_head = tied_masked_lm_head(backbone, dtype, "mlm_head")
        nsp_head = keras.layers.Dense(
            2, kernel_initializer=bert_initializer(), dtype=dtype, name="nsp_head"
        )

        # === Functional Model ===
        inputs = dict(backbone.input)
        inputs["mask_positions"] = keras.Input(shape=(None,), dtype="int32", name="mask_positions")
        encoded = backbone({key: inputs[key] for key in backbone.input})
        mlm_logits = mlm_head(
            encoded["sequence_output"], mask_positions=inputs["mask_positions"]
        )  # (B, P, V)
        nsp_logits = nsp_head(encoded["pooled_output"])  # (B, 2)
        to_float32 = dict(activation="linear", dtype="float32")
        super().__init__(
            inputs=inputs,
            outputs={
                "mlm": keras.layers.Activation(**to_float32, name="mlm")(mlm_logits),
                "nsp": keras.layers.Activation(**to_float32, name="nsp")(nsp_logits),
            },
            dtype=dtype,
            **kwargs,
        )
        # Attached after `super().__init__()` (the torch backend requires it).
        self.backbone = backbone
        self.mlm_head = mlm_head
        self.nsp_head = nsp_head

        if sampled_softmax_candidates is not None:
            if sampled_softmax_candidates < 1:
                raise ValueError(
                    "`sampled_softmax_candidates` must be None or >= 1. "
                    f"Received: sampled_softmax_candidates={sampled_softmax_candidates}"
                )
            # Saved with a checkpoint's seed states: a resumed run draws what
            # the uninterrupted one would.
            self.sampled_softmax_seed = keras.random.SeedGenerator()

        # === Config ===
        self.sampled_softmax_candidates = sampled_softmax_candidates

    @property
    def masked_lm_output_bias(self):
        """The masked LM's per-token output bias (V,), a variable."""
        return self.mlm_head._bias

    def task_config(self):
        if self.sampled_softmax_candidates is None:
            return {}  # As archives saved before the option have it.
        return {"sampled_softmax_candidates": self.sampled_softmax_candidates}

    def call(self, inputs, training=None, mask=None):
        if not (training and self.sampled_softmax_candidates and "masked_lm_ids" in inputs):
            if isinstance(inputs, dict):  # A training batch's targets are not graph inputs.
                inputs = {key: inputs[key] for key in self.input}
            return super().call(inputs, training=training, mask=mask)
        # The functional graph ends in the full softmax; a sampled training
        # step runs the same layers up to the head's transform instead
        # (keras-hub's `MaskedLMHead` has no call without its projection).
        encoded = self.backbone({key: inputs[key] for key in self.backbone.input}, training=True)
        positions = ops.expand_dims(inputs["mask_positions"], -1)  # (B, P, 1)
        x = ops.take_along_axis(encoded["sequence_output"], positions, axis=1)  # (B, P, H)
        x = self.mlm_head._intermediate_layer_norm(self.mlm_head._intermediate_dense(x))
        targets = inputs["masked_lm_ids"]
        batch, predictions = ops.shape(targets)[0], ops.shape(targets)[1]
        drawn = keras.random.randint(
            (self.sampled_softmax_candidates,),
            0,
            self.backbone.vocabulary_size,
            dtype="int32",
            seed=self.sampled_softmax_seed,
        )  # (S,)
        mlm_logits = sampled_softmax_logits(
            ops.reshape(x, (-1, ops.shape(x)[-1])),  # (N, H)
            self.backbone.token_embedding.embeddings,
            self.masked_lm_output_bias,
            ops.reshape(ops.cast(targets, "int32"), (-1,)),
            ops.reshape(inputs["masked_lm_weights"], (-1,)) > 0,
            drawn,
        )  # (N, 1 + N + S), float32
        nsp_logits = ops.cast(self.nsp_head(encoded["pooled_output"]), "float32")  # (B, 2)
        return {"mlm": ops.reshape(mlm_logits, (batch, predictions, -1)), "nsp": nsp_logits}
