"""One Transformer encoder block: post-LayerNorm as in BERT, or pre-LN;
optionally without linear biases and with a gated feed-forward.

Shape legend: B batch, T sequence length, H hidden size, N heads,
D = H / N head size, F intermediate (feed-forward) size.
"""

import keras
from keras import ops

from keras_bert.layers.bert_embeddings import bert_initializer

# BERT's `gelu` is the exact erf form (Hugging Face configs call it "gelu");
# the original TF code and some ports use the tanh approximation instead.
ACTIVATIONS = {
    "gelu": lambda x: keras.activations.gelu(x, approximate=False),
    "gelu_approximate": lambda x: keras.activations.gelu(x, approximate=True),
}


def get_activation(name):
    """Returns the callable for one of the names in `ACTIVATIONS`."""
    if name not in ACTIVATIONS:
        raise ValueError(
            f"`hidden_activation` must be one of {sorted(ACTIVATIONS)}. "
            f"Received: hidden_activation={name!r}"
        )
    return ACTIVATIONS[name]


class Float32SoftmaxAttention(keras.layers.MultiHeadAttention):
    """`MultiHeadAttention` whose softmax always runs in float32.

    Keras' layer normalises attention scores in the compute dtype; under
    `mixed_bfloat16`/`mixed_float16` that loses the precision BERT's mixed
    precision recipes keep, so the softmax gets its own float32 policy.
    With dropout 0 Keras skips this softmax for the backend's fused
    `dot_product_attention`, whose kernels (XLA on TensorFlow and JAX,
    cuDNN/flash, PyTorch's SDPA) accumulate the scores and their softmax
    in float32 themselves; tests/layers checks both paths agree.
    """

    def _build_attention(self, rank):
        super()._build_attention(rank)
        self._softmax = keras.layers.Softmax(axis=self._softmax.axis, dtype="float32")


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEncoderBlock(keras.layers.Layer):
    """Post-LN Transformer encoder block (Vaswani et al., 2017; BERT).

    `x = LN(x + Dropout(SelfAttention(x)))`, then
    `x = LN(x + Dropout(W2 · gelu(W1 · x)))`. With `normalize_first`, the
    pre-LN block (Xiong et al. 2020, https://arxiv.org/abs/2002.04745, as
    Cramming trains): `x = x + Dropout(SelfAttention(LN(x)))`, then
    `x = x + Dropout(W2 · gelu(W1 · LN(x)))`; the residual stream is never
    normalised, so gradients reach the lower blocks undamped and the
    warmup can be short; `BertBackbone` then ends with a final LayerNorm.
    With `gated_feedforward`, the feed-forward is GEGLU (Shazeer 2020,
    https://arxiv.org/abs/2002.05202, as Cramming trains):
    `W2 · (gelu(W1 · x) ⊙ (Wg · x))`. With `use_bias=False`, no dense
    layer (attention projections, feed-forward) has a bias (Cramming's
    "no linear biases"); the LayerNorms keep theirs.

    Written instead of keras-hub's `TransformerEncoder` because that layer
    runs the attention softmax in the compute dtype (no float32 softmax under
    mixed precision) and keeps its sublayers private, while checkpoint
    conversion maps each sublayer here onto one original BERT variable scope:
    `self_attention` = `attention/self` + `attention/output/dense`,
    `self_attention_layer_norm` = `attention/output/LayerNorm`,
    `intermediate_dense` = `intermediate/dense`, `output_dense` =
    `output/dense`, `output_layer_norm` = `output/LayerNorm`.

    Args:
        num_heads: int. Attention heads N; must divide the hidden size.
        intermediate_dim: int. Feed-forward width F (4H in BERT).
        dropout: float. Dropout on both residual branches. Defaults to 0.1.
        attention_dropout: float or None. Dropout on the attention
            probabilities; None (the default) uses `dropout`, as the paper
            does. At 0, Keras computes attention with the backend's fused
            `ops.dot_product_attention` (flash attention where the device
            has it) instead of materialising the (B, N, T, T) probabilities.
        hidden_activation: str. `"gelu"` (exact, erf) or `"gelu_approximate"`
            (tanh). Defaults to `"gelu"`.
        layer_norm_epsilon: float. Defaults to 1e-12.
        normalize_first: bool. Pre-LN instead of BERT's post-LN. Defaults
            to False. The same sublayers either way (each LayerNorm belongs
            to the sublayer it precedes or follows).
        use_bias: bool. Biases in the attention projections and the
            feed-forward's dense layers. Defaults to True (BERT's).
        gated_feedforward: bool. GEGLU: a third dense layer, `gate_dense`
            (H -> F, no activation), multiplies the activated
            `intermediate_dense` output. Defaults to False (BERT's).

    Call arguments:
        x: float tensor (B, T, H).
        padding_mask: tensor (B, T), 1/True for real tokens. Padded keys get
            no attention weight.
        training: bool, turns dropout on.
        return_attention_scores: bool. Also return the attention
            probabilities (B, N, T, T), before their dropout (the block then
            never takes the fused attention path). Defaults to False.

    Returns:
        (B, T, H), or `(output, probabilities)`.

    Example:
    >>> block = BertEncoderBlock(num_heads=2, intermediate_dim=32)
    >>> tuple(block(keras.ops.ones((2, 5, 8)), keras.ops.ones((2, 5))).shape)
    (2, 5, 8)
    """

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        dropout=0.1,
        attention_dropout=None,
        hidden_activation="gelu",
        layer_norm_epsilon=1e-12,
        normalize_first=False,
        use_bias=True,
        gated_feedforward=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.hidden_activation = hidden_activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.normalize_first = normalize_first
        self.use_bias = use_bias
        self.gated_feedforward = gated_feedforward
        self._activation = get_activation(hidden_activation)

    def build(self, x_shape, padding_mask_shape=None):
        hidden_dim = x_shape[-1]
        if hidden_dim % self.num_heads:
            raise ValueError(
                "The hidden size must be divisible by `num_heads`. "
                f"Received: hidden_dim={hidden_dim}, num_heads={self.num_heads}"
            )
        common = dict(
            kernel_initializer=bert_initializer(),
            use_bias=self.use_bias,
            dtype=self.dtype_policy,
        )
        self.self_attention = Float32SoftmaxAttention(
            num_heads=self.num_heads,
            key_dim=hidden_dim // self.num_heads,
            dropout=self.attention_probability_dropout,
            name="self_attention",
            **common,
        )
        self.self_attention.build(query_shape=x_shape, value_shape=x_shape)
        self.self_attention_dropout = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="self_attention_dropout"
        )
        self.self_attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon,
            dtype=self.dtype_policy,
            name="self_attention_layer_norm",
        )
        self.self_attention_layer_norm.build(x_shape)
        self.intermediate_dense = keras.layers.Dense(
            self.intermediate_dim,
            activation=self._activation,
            name="intermediate_dense",
            **common,
        )
        self.intermediate_dense.build(x_shape)
        self.gate_dense = None
        if self.gated_feedforward:
            self.gate_dense = keras.layers.Dense(self.intermediate_dim, name="gate_dense", **common)
            self.gate_dense.build(x_shape)
        self.output_dense = keras.layers.Dense(hidden_dim, name="output_dense", **common)
        self.output_dense.build(tuple(x_shape[:-1]) + (self.intermediate_dim,))
        self.output_dropout = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="output_dropout"
        )
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon,
            dtype=self.dtype_policy,
            name="output_layer_norm",
        )
        self.output_layer_norm.build(x_shape)
        self.built = True

    @property
    def attention_probability_dropout(self):
        """The rate applied to attention probabilities (None → `dropout`)."""
        if self.attention_dropout is None:
            return self.dropout
        return self.attention_dropout

    def call(self, x, padding_mask=None, training=None, return_attention_scores=False):
        attention_mask = None
        if padding_mask is not None:
            # (B, T) -> (B, 1, T): every query sees only the real keys.
            attention_mask = ops.expand_dims(ops.cast(padding_mask, "bool"), 1)
        source = self.self_attention_layer_norm(x) if self.normalize_first else x
        attended = self.self_attention(
            query=source,
            value=source,
            attention_mask=attention_mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )  # (B, T, H), or with the probabilities (B, N, T, T)
        if return_attention_scores:
            attended, probabilities = attended
        attended = self.self_attention_dropout(attended, training=training)
        if self.normalize_first:
            x = x + attended
            hidden = self._feedforward(self.output_layer_norm(x))
            x = x + self.output_dropout(hidden, training=training)  # (B, T, H)
        else:
            x = self.self_attention_layer_norm(x + attended)
            hidden = self._feedforward(x)  # (B, T, H)
            hidden = self.output_dropout(hidden, training=training)
            x = self.output_layer_norm(x + hidden)
        if return_attention_scores:
            return x, probabilities
        return x

    def _feedforward(self, x):
        inner = self.intermediate_dense(x)  # (B, T, F), activated
        if self.gate_dense is not None:
            inner = inner * self.gate_dense(x)
        return self.output_dense(inner)

    def compute_output_shape(self, x_shape, padding_mask_shape=None):
        return x_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "hidden_activation": self.hidden_activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "normalize_first": self.normalize_first,
                "use_bias": self.use_bias,
                "gated_feedforward": self.gated_feedforward,
            }
        )
        return config
