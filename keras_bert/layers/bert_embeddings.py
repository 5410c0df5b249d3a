"""BERT input embeddings (Devlin et al., 2018, section 3, figure 2).

Shape legend: B batch, T sequence length, H hidden size, V vocabulary size.
"""

import keras
from keras_hub.layers import PositionEmbedding, ReversibleEmbedding


def bert_initializer():
    """BERT initialises every weight matrix from N(0, 0.02) truncated at 2σ."""
    return keras.initializers.TruncatedNormal(stddev=0.02)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEmbeddings(keras.layers.Layer):
    """Token + segment + learned position embeddings, LayerNorm, dropout.

    Paper: https://arxiv.org/abs/1810.04805 (section 3, "Input/Output
    Representations").

    The token embedding is a keras-hub `ReversibleEmbedding`, so the masked-LM
    head can reuse its matrix as the tied output projection.

    Args:
        vocabulary_size: int. Number of WordPiece tokens V.
        hidden_dim: int. Embedding width H.
        max_sequence_length: int. Number of learned positions. Defaults to 512.
        num_segments: int. Number of segment (token type) ids. Defaults to 2.
        dropout: float. Dropout rate after the LayerNorm. Defaults to 0.1.
        layer_norm_epsilon: float. Defaults to 1e-12 as in the original code.

    Call arguments:
        token_ids: int tensor (B, T).
        segment_ids: int tensor (B, T).
        training: bool, turns dropout on.

    Returns:
        float tensor (B, T, H).

    Example:
    >>> layer = BertEmbeddings(vocabulary_size=100, hidden_dim=8)
    >>> tuple(layer(keras.ops.ones((2, 5), "int32"), keras.ops.zeros((2, 5), "int32")).shape)
    (2, 5, 8)
    """

    def __init__(
        self,
        vocabulary_size,
        hidden_dim,
        max_sequence_length=512,
        num_segments=2,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon

        self.token_embedding = ReversibleEmbedding(
            vocabulary_size,
            hidden_dim,
            embeddings_initializer=bert_initializer(),
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.segment_embedding = keras.layers.Embedding(
            num_segments,
            hidden_dim,
            embeddings_initializer=bert_initializer(),
            dtype=self.dtype_policy,
            name="segment_embedding",
        )
        self.position_embedding = PositionEmbedding(
            max_sequence_length,
            initializer=bert_initializer(),
            dtype=self.dtype_policy,
            name="position_embedding",
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon,
            dtype=self.dtype_policy,
            name="layer_norm",
        )
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, token_ids_shape, segment_ids_shape=None):
        self.token_embedding.build(token_ids_shape)
        self.segment_embedding.build(token_ids_shape)
        embedded_shape = tuple(token_ids_shape) + (self.hidden_dim,)
        self.position_embedding.build(embedded_shape)
        self.layer_norm.build(embedded_shape)
        self.built = True

    def call(self, token_ids, segment_ids, training=None):
        tokens = self.token_embedding(token_ids)  # (B, T, H)
        # PositionEmbedding slices its (512, H) table to T rows.
        positions = self.position_embedding(tokens)  # (B, T, H)
        segments = self.segment_embedding(segment_ids)  # (B, T, H)
        x = self.layer_norm(tokens + positions + segments)
        return self.dropout_layer(x, training=training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "hidden_dim": self.hidden_dim,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
            }
        )
        return config
