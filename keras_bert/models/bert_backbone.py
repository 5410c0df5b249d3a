"""The BERT encoder: embeddings, L encoder blocks (post-LN, or pre-LN with
a final LayerNorm), [CLS] pooler.

Shape legend: B batch, T sequence length, H hidden size, L layers.
"""

import os

import keras

from keras_bert.layers.bert_embeddings import BertEmbeddings, bert_initializer
from keras_bert.layers.bert_encoder_block import (
    BertEncoderBlock,
    get_activation,
)
from keras_bert.model_sizes import check_model_sizes


@keras.saving.register_keras_serializable(package="keras_bert")
class BertBackbone(keras.Model):
    """BERT encoder network (Devlin et al., 2018), randomly initialised.

    Paper: https://arxiv.org/abs/1810.04805. Argument names match
    keras-hub's `BertBackbone`; preset sizes live in `configs/model/`.

    Args:
        vocabulary_size: int. WordPiece vocabulary size V.
        num_layers: int. Encoder blocks L.
        num_heads: int. Attention heads A; must divide `hidden_dim`.
        hidden_dim: int. Hidden size H.
        intermediate_dim: int. Feed-forward size (4H in the paper).
        dropout: float. Dropout everywhere BERT has it. Defaults to 0.1.
        attention_dropout: float or None. Dropout on the attention
            probabilities; None (the default) follows `dropout`, as in the
            paper. 0 (as MosaicBERT and Cramming train) lets every block use
            the backend's fused attention kernel (flash attention on GPUs
            and TPUs), which never forms the T×T probability matrix.
        max_sequence_length: int. Learned positions. Defaults to 512.
        num_segments: int. Segment (token type) ids. Defaults to 2.
        hidden_activation: str. `"gelu"` (exact erf, the default) or
            `"gelu_approximate"` (tanh).
        layer_norm_epsilon: float. Defaults to 1e-12.
        normalize_first: bool. Pre-LN blocks and a final LayerNorm
            (`final_layer_norm`) before `sequence_output` and the pooler,
            instead of BERT's post-LN (`BertEncoderBlock`). Defaults to
            False. Google's and Hugging Face's BERT formats hold post-LN
            models only, so `convert` refuses a pre-LN one.
        use_bias: bool. Biases in the blocks' attention projections and
            feed-forward layers (Cramming trains without). Defaults to True.
        gated_feedforward: bool. GEGLU feed-forward blocks (a `gate_dense`
            per block; `BertEncoderBlock`). Defaults to False. `convert`
            refuses a model without biases or with gates, as a pre-LN one.
        output_encoder_layers: bool. Also return `"encoder_outputs"`, the
            list of L per-block outputs (B, T, H) for feature extraction.
            Defaults to False.
        dtype: dtype or `keras.DTypePolicy` for every layer, e.g.
            `"mixed_bfloat16"`.

    Inputs (dict):
        token_ids: int32 (B, T). segment_ids: int32 (B, T), 0 for sentence
        A and 1 for B. padding_mask: int32/bool (B, T), 1 for real tokens.

    Outputs (dict):
        sequence_output: (B, T, H), the last block's output.
        pooled_output: (B, H), tanh(dense(sequence_output[:, 0])).

    Attributes:
        vocabulary: list of str or None. The WordPiece vocabulary in id
            order; saved inside `.keras` archives (asset `vocab.txt`) and
            restored by `keras.saving.load_model`.

    Example:
    >>> import numpy as np
    >>> model = BertBackbone(vocabulary_size=100, num_layers=2, num_heads=2,
    ...                      hidden_dim=8, intermediate_dim=32)
    >>> out = model({"token_ids": np.ones((2, 5), "int32"),
    ...              "segment_ids": np.zeros((2, 5), "int32"),
    ...              "padding_mask": np.ones((2, 5), "int32")})
    >>> tuple(out["sequence_output"].shape), tuple(out["pooled_output"].shape)
    ((2, 5, 8), (2, 8))
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        dropout=0.1,
        attention_dropout=None,
        max_sequence_length=512,
        num_segments=2,
        hidden_activation="gelu",
        layer_norm_epsilon=1e-12,
        normalize_first=False,
        use_bias=True,
        gated_feedforward=False,
        output_encoder_layers=False,
        dtype=None,
        **kwargs,
    ):
        # First: `hidden_dim % num_heads` fails less clearly on a size of 0 or
        # of the wrong type, and an absurd size on allocation.
        check_model_sizes(
            {
                "vocabulary_size": vocabulary_size,
                "num_layers": num_layers,
                "num_heads": num_heads,
                "hidden_dim": hidden_dim,
                "intermediate_dim": intermediate_dim,
                "max_sequence_length": max_sequence_length,
                "num_segments": num_segments,
                "gated_feedforward": gated_feedforward,
            }
        )
        if hidden_dim % num_heads:
            raise ValueError(
                "`hidden_dim` must be divisible by `num_heads`. "
                f"Received: hidden_dim={hidden_dim}, num_heads={num_heads}"
            )
        if attention_dropout is not None and not 0 <= attention_dropout < 1:
            raise ValueError(
                "`attention_dropout` must be None or in [0, 1). "
                f"Received: attention_dropout={attention_dropout}"
            )
        get_activation(hidden_activation)  # Fails early on an unknown name.

        # === Layers ===
        embeddings = BertEmbeddings(
            vocabulary_size=vocabulary_size,
            hidden_dim=hidden_dim,
            max_sequence_length=max_sequence_length,
            num_segments=num_segments,
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            dtype=dtype,
            name="embeddings",
        )
        encoder_blocks = [
            BertEncoderBlock(
                num_heads=num_heads,
                intermediate_dim=intermediate_dim,
                dropout=dropout,
                attention_dropout=attention_dropout,
                hidden_activation=hidden_activation,
                layer_norm_epsilon=layer_norm_epsilon,
                normalize_first=normalize_first,
                use_bias=use_bias,
                gated_feedforward=gated_feedforward,
                dtype=dtype,
                name=f"encoder_block_{i}",
            )
            for i in range(num_layers)
        ]
        final_layer_norm = None
        if normalize_first:
            final_layer_norm = keras.layers.LayerNormalization(
                epsilon=layer_norm_epsilon, dtype=dtype, name="final_layer_norm"
            )
        pooler_dense = keras.layers.Dense(
            hidden_dim,
            activation="tanh",
            kernel_initializer=bert_initializer(),
            dtype=dtype,
            name="pooler_dense",
        )

        # === Functional Model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        segment_ids = keras.Input(shape=(None,), dtype="int32", name="segment_ids")
        padding_mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")
        x = embeddings(token_ids, segment_ids)
        encoder_outputs = []
        for block in encoder_blocks:
            x = block(x, padding_mask=padding_mask)
            encoder_outputs.append(x)
        if final_layer_norm is not None:
            x = final_layer_norm(x)
        outputs = {
            "sequence_output": x,
            "pooled_output": pooler_dense(x[:, 0, :]),  # [CLS]: (B, H)
        }
        if output_encoder_layers:
            outputs["encoder_outputs"] = encoder_outputs
        super().__init__(
            inputs={
                "token_ids": token_ids,
                "segment_ids": segment_ids,
                "padding_mask": padding_mask,
            },
            outputs=outputs,
            dtype=dtype,
            **kwargs,
        )

        # Sublayers are attached after `super().__init__()`: the torch backend
        # refuses module attributes on an uninitialised `nn.Module`.
        self.embeddings = embeddings
        self.encoder_blocks = encoder_blocks
        self.final_layer_norm = final_layer_norm
        self.pooler_dense = pooler_dense

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.hidden_activation = hidden_activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.normalize_first = normalize_first
        self.use_bias = use_bias
        self.gated_feedforward = gated_feedforward
        self.output_encoder_layers = output_encoder_layers
        # WordPiece tokens in id order, carried inside `.keras` archives as
        # the asset `vocab.txt` so a model needs no separate `--vocab`.
        self.vocabulary = None

    @property
    def token_embedding(self):
        """The `ReversibleEmbedding` the masked-LM head ties its decoder to."""
        return self.embeddings.token_embedding

    def save_assets(self, dir_path):
        if self.vocabulary is not None:
            with open(os.path.join(dir_path, "vocab.txt"), "w") as f:
                f.write("".join(token + "\n" for token in self.vocabulary))

    def load_assets(self, dir_path):
        path = os.path.join(dir_path, "vocab.txt")
        if os.path.exists(path):
            with open(path) as f:
                self.vocabulary = f.read().splitlines()

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            "vocabulary_size": self.vocabulary_size,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "attention_dropout": self.attention_dropout,
            "max_sequence_length": self.max_sequence_length,
            "num_segments": self.num_segments,
            "hidden_activation": self.hidden_activation,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "normalize_first": self.normalize_first,
            "use_bias": self.use_bias,
            "gated_feedforward": self.gated_feedforward,
            "output_encoder_layers": self.output_encoder_layers,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)
