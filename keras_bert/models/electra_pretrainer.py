"""ELECTRA's replaced-token detection around a `BertBackbone`: a small
generator fills the masked positions, the backbone (the discriminator)
tells every token whether it was replaced.

Shape legend: B batch, T sequence length, P masked positions per sequence,
H the backbone's hidden size, G the generator's, V vocabulary size.
"""

import keras
from keras import ops

from keras_bert.layers.bert_embeddings import bert_initializer
from keras_bert.layers.bert_encoder_block import BertEncoderBlock, get_activation
from keras_bert.layers.token_replacement import TokenReplacement
from keras_bert.models.bert_pretrainer import tied_masked_lm_head
from keras_bert.models.bert_task_model import BertTaskModel


def generator_shape(backbone, generator_size):
    """`(num_heads, hidden_dim, intermediate_dim)` of a generator
    `generator_size` times the backbone's width (ELECTRA scales all three;
    at least one head, the hidden size a multiple of the heads)."""
    num_heads = max(1, round(backbone.num_heads * generator_size))
    head_dim = max(1, round(backbone.hidden_dim * generator_size / num_heads))
    intermediate_dim = max(1, round(backbone.intermediate_dim * generator_size))
    return num_heads, num_heads * head_dim, intermediate_dim


@keras.saving.register_keras_serializable(package="keras_bert")
class ElectraPretrainer(BertTaskModel):
    """ELECTRA pre-training (Clark et al. 2020,
    https://arxiv.org/abs/2003.10555): generator and discriminator trained
    jointly.

    The generator is a masked LM `generator_size` times the backbone's width
    (the paper's best: 1/4 to 1/3) with as many blocks, sharing all of the
    backbone's embeddings (token, position, segment and their LayerNorm,
    the paper's "tied embeddings"): a dense layer projects the H-wide
    embeddings to G, and its masked-LM head (`tied_masked_lm_head`)
    maps back to H and decodes with the token-embedding matrix. Its blocks
    are BERT's (post-LN, biased, ungated) whatever the backbone's: it is
    discarded after pre-training. `TokenReplacement` samples a token
    per masked position from it; the backbone reads the corrupted sequence,
    and a dense + activation + 1-unit head scores every position "replaced"
    (the discriminator head of the paper's code and Model Garden's). The
    backbone is a plain `BertBackbone`: it fine-tunes and exports as any.

    Args:
        backbone: `BertBackbone`, the discriminator.
        generator_size: float in (0, 1]. The generator's width as a share of
            the backbone's (hidden size, heads, feed-forward size).
            Defaults to 0.25.
        sampling_temperature: float > 0. The generator's samples are drawn
            from its softmax at this temperature (`TokenReplacement`); the
            masked-LM loss keeps temperature 1. Defaults to 1.0 (the paper).
        dtype: dtype or `keras.DTypePolicy`. Defaults to the backbone's.

    Inputs (dict):
        The backbone's `token_ids` (the masked-LM input), `segment_ids`,
        `padding_mask`, plus `mask_positions` int32 (B, P), `masked_lm_ids`
        int32 (B, P), the original tokens there, and `masked_lm_weights`
        float32 (B, P), 0 for padded slots.

    Outputs (dict):
        mlm: float32 (B, P, V), the generator's logits at `mask_positions`.
        rtd: float32 (B, T, 2): `[..., 0]` the discriminator's logit that a
            token was replaced, `[..., 1]` whether it was (0/1). The label
            is drawn inside the model, so it travels with the logit to the
            loss and metrics (`pretraining.electra_objective`).

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertBackbone
    >>> backbone = BertBackbone(vocabulary_size=100, num_layers=2, num_heads=2,
    ...                         hidden_dim=8, intermediate_dim=32)
    >>> model = ElectraPretrainer(backbone)
    >>> out = model({"token_ids": np.ones((2, 5), "int32"),
    ...              "segment_ids": np.zeros((2, 5), "int32"),
    ...              "padding_mask": np.ones((2, 5), "int32"),
    ...              "mask_positions": np.array([[1, 3], [2, 4]], "int32"),
    ...              "masked_lm_ids": np.array([[7, 9], [8, 6]], "int32"),
    ...              "masked_lm_weights": np.ones((2, 2), "float32")})
    >>> tuple(out["mlm"].shape), tuple(out["rtd"].shape)
    ((2, 2, 100), (2, 5, 2))
    """

    def __init__(
        self, backbone, generator_size=0.25, sampling_temperature=1.0, dtype=None, **kwargs
    ):
        if not 0 < generator_size <= 1:
            raise ValueError(
                f"`generator_size` must be in (0, 1]. Received: generator_size={generator_size}"
            )
        dtype = dtype or backbone.dtype_policy
        num_heads, hidden_dim, intermediate_dim = generator_shape(backbone, generator_size)

        # === Layers ===
        generator_projection = keras.layers.Dense(
            hidden_dim,
            kernel_initializer=bert_initializer(),
            dtype=dtype,
            name="generator_projection",
        )
        generator_blocks = [
            BertEncoderBlock(
                num_heads=num_heads,
                intermediate_dim=intermediate_dim,
                dropout=backbone.dropout,
                attention_dropout=backbone.attention_dropout,
                hidden_activation=backbone.hidden_activation,
                layer_norm_epsilon=backbone.layer_norm_epsilon,
                dtype=dtype,
                name=f"generator_block_{i}",
            )
            for i in range(backbone.num_layers)
        ]
        generator_head = tied_masked_lm_head(backbone, dtype, "generator_head")
        # float32: the sampling reads the logits, the scatter exact ids.
        token_replacement = TokenReplacement(
            temperature=sampling_temperature, dtype="float32", name="token_replacement"
        )
        discriminator_dense = keras.layers.Dense(
            backbone.hidden_dim,
            activation=get_activation(backbone.hidden_activation),
            kernel_initializer=bert_initializer(),
            dtype=dtype,
            name="discriminator_dense",
        )
        discriminator_head = keras.layers.Dense(
            1, kernel_initializer=bert_initializer(), dtype=dtype, name="discriminator_head"
        )

        # === Functional Model ===
        inputs = dict(backbone.input)
        for name, input_dtype in (
            ("mask_positions", "int32"),
            ("masked_lm_ids", "int32"),
            ("masked_lm_weights", "float32"),
        ):
            inputs[name] = keras.Input(shape=(None,), dtype=input_dtype, name=name)
        x = backbone.embeddings(inputs["token_ids"], inputs["segment_ids"])  # (B, T, H)
        x = generator_projection(x)  # (B, T, G)
        for block in generator_blocks:
            x = block(x, padding_mask=inputs["padding_mask"])
        generator_logits = generator_head(x, mask_positions=inputs["mask_positions"])  # (B, P, V)
        corrupted_ids, replaced = token_replacement(
            inputs["token_ids"],
            inputs["mask_positions"],
            inputs["masked_lm_ids"],
            inputs["masked_lm_weights"],
            generator_logits,
        )  # (B, T) each
        encoded = backbone(
            {
                "token_ids": corrupted_ids,
                "segment_ids": inputs["segment_ids"],
                "padding_mask": inputs["padding_mask"],
            }
        )
        logits = discriminator_head(discriminator_dense(encoded["sequence_output"]))  # (B, T, 1)
        to_float32 = dict(activation="linear", dtype="float32")
        logits = keras.layers.Activation(**to_float32, name="discriminator_logits")(logits)
        super().__init__(
            inputs=inputs,
            outputs={
                "mlm": keras.layers.Activation(**to_float32, name="mlm")(generator_logits),
                "rtd": keras.layers.Concatenate(dtype="float32", name="rtd")(
                    [logits, ops.expand_dims(replaced, -1)]
                ),  # (B, T, 2)
            },
            dtype=dtype,
            **kwargs,
        )
        # Attached after `super().__init__()` (the torch backend requires it).
        self.backbone = backbone
        self.generator_projection = generator_projection
        self.generator_blocks = generator_blocks
        self.generator_head = generator_head
        self.token_replacement = token_replacement
        self.discriminator_dense = discriminator_dense
        self.discriminator_head = discriminator_head

        # === Config ===
        self.generator_size = generator_size
        self.sampling_temperature = sampling_temperature

    @property
    def masked_lm_output_bias(self):
        """The generator's per-token output bias (V,), a variable."""
        return self.generator_head._bias

    def task_config(self):
        return {
            "generator_size": self.generator_size,
            "sampling_temperature": self.sampling_temperature,
        }
