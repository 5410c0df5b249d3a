"""The backbone's forward pass as a serving graph TensorFlow can fuse.

Shape legend: B batch rows, T `seq_len`, H hidden size, N heads, D = H / N,
F intermediate size; M = B * T rows of the 2-D activations.

Traced from the Keras layers, each `Dense` is a rank-3 `BatchMatMulV2` and
an `AddV2`, and attention three of them: patterns grappler's remapper does
not fuse. Here the same function is written on 2-D activations (M, H):
every dense layer one `MatMul` + `BiasAdd` (fused into one `_FusedMatMul`
kernel), attention's query, key and value one matmul against their
concatenated kernels, the 1 / sqrt(D) query scale folded into them, and no
per-call work that is fixed per model. Written by hand because Keras emits
no such graph and keras-hub's layers trace as Keras' do; the Keras model
stays the reference (tests/serving/test_fused_backbone.py: every head, all
backbone variants, within 1e-4).

The graph reads the Keras layers' own variables; attention's kernels,
reshaped and concatenated, are copied once into new ones, which the
SavedModel saves in place of those layers'. It computes in the variables'
dtype, float32 under any dtype policy: a CPU server computes in float32.
"""

import math

import keras
import tensorflow as tf

from keras_bert.models.bert_backbone import BertBackbone

# Keras' masked softmax adds this to a padding key's score (float32).
_MASKED_SCORE = -1e9


def _own(weight):
    """The Keras weight's own `tf.Variable` under the TensorFlow backend, so
    that the SavedModel holds each weight once: the masked-LM head reads
    the token table too. Under another backend (the export itself always
    runs under TensorFlow) the graph gets a copy of the value."""
    if keras.backend.backend() == "tensorflow":
        return weight.value
    return tf.constant(keras.ops.convert_to_numpy(weight))


def exact_gelu(x):
    """Exact GELU through `Erf`. `tf.nn.gelu` goes through `Erfc`, whose CPU
    kernel is the slower (bench/serving_pieces.py times both,
    BENCHMARKS.md#serving); the two agree within 1e-6."""
    return 0.5 * x * (1.0 + tf.math.erf(x * (1.0 / math.sqrt(2.0))))


class _LayerNorm:
    def __init__(self, layer):
        self.gamma, self.beta = _own(layer.gamma), _own(layer.beta)
        self.epsilon = layer.epsilon

    def __call__(self, x):
        mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
        return tf.nn.batch_normalization(x, mean, variance, self.beta, self.gamma, self.epsilon)


class _Dense:
    """`x @ kernel + bias` on 2-D `x`.

    A `Dense` layer's 2-D kernel is used as it is. Kernels of other ranks
    whose first `inputs` axes are the input's (MultiHeadAttention's
    (H, N, D) and (N, D, H)), several layers side by side, or `scales`d
    are copied once, reshaped, into a new variable.
    """

    def __init__(self, layers, name, inputs=1, scales=None):
        if len(layers) == 1 and len(layers[0].kernel.shape) == 2 and scales is None:
            self.kernel = _own(layers[0].kernel)
            self.bias = None if layers[0].bias is None else _own(layers[0].bias)
            return
        scales = scales or [1.0] * len(layers)
        kernels, biases = [], []
        for layer, scale in zip(layers, scales):
            kernel = tf.convert_to_tensor(_own(layer.kernel))
            width = math.prod(kernel.shape[:inputs])
            kernels.append(tf.reshape(kernel, [width, -1]) * scale)
            if layer.bias is not None:
                biases.append(tf.reshape(tf.convert_to_tensor(_own(layer.bias)), [-1]) * scale)
        self.kernel = tf.Variable(tf.concat(kernels, 1), trainable=False, name=f"{name}/kernel")
        self.bias = None
        if biases:
            self.bias = tf.Variable(tf.concat(biases, 0), trainable=False, name=f"{name}/bias")

    def __call__(self, x):
        y = tf.matmul(x, self.kernel)
        return y if self.bias is None else tf.nn.bias_add(y, self.bias)


class _Block:
    def __init__(self, block, name):
        attention = block.self_attention
        self.heads = block.num_heads
        self.normalize_first = block.normalize_first
        self.approximate_gelu = block.hidden_activation == "gelu_approximate"
        head_dim = attention._key_dim
        # The query scaled as MultiHeadAttention scales it, in the weights.
        self.query_key_value = _Dense(
            [attention._query_dense, attention._key_dense, attention._value_dense],
            f"{name}/query_key_value",
            scales=[1.0 / math.sqrt(head_dim), 1.0, 1.0],
        )
        self.attention_output = _Dense([attention._output_dense], f"{name}/attention_output", 2)
        self.attention_norm = _LayerNorm(block.self_attention_layer_norm)
        self.intermediate = _Dense([block.intermediate_dense], f"{name}/intermediate")
        self.gate = _Dense([block.gate_dense], f"{name}/gate") if block.gate_dense else None
        self.output = _Dense([block.output_dense], f"{name}/output")
        self.output_norm = _LayerNorm(block.output_layer_norm)

    def __call__(self, x, score_bias, batch, length):
        """(M, H) rows, `score_bias` (B, 1, 1, T) -> (M, H)."""
        source = self.attention_norm(x) if self.normalize_first else x
        width = x.shape[-1]
        head_dim = width // self.heads
        qkv = tf.reshape(self.query_key_value(source), [batch, length, 3, self.heads, head_dim])
        query, key, value = tf.unstack(tf.transpose(qkv, [2, 0, 3, 1, 4]))  # (B, N, T, D)
        scores = tf.matmul(query, key, transpose_b=True) + score_bias  # (B, N, T, T)
        context = tf.matmul(tf.nn.softmax(scores), value)  # (B, N, T, D)
        context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [-1, width])
        attended = self.attention_output(context)
        if self.normalize_first:
            x = x + attended
            return x + self._feedforward(self.output_norm(x))
        x = self.attention_norm(x + attended)
        return self.output_norm(x + self._feedforward(x))

    def _feedforward(self, x):
        inner = self.intermediate(x)  # (M, F)
        inner = tf.nn.gelu(inner, approximate=True) if self.approximate_gelu else exact_gelu(inner)
        if self.gate is not None:
            inner = inner * self.gate(x)
        return self.output(inner)


class FusedBackbone:
    """`backbone`'s outputs for its inputs dict, in inference mode, as the
    fusible graph above.

    Args:
        backbone: a `BertBackbone` (its weights are copied now).

    Example:
    >>> backbone = BertBackbone(vocabulary_size=30, num_layers=1, num_heads=2,
    ...     hidden_dim=8, intermediate_dim=16, max_sequence_length=6)
    >>> inputs = {k: tf.ones((1, 4), tf.int32)
    ...           for k in ("token_ids", "segment_ids", "padding_mask")}
    >>> sorted(FusedBackbone(backbone)(inputs))
    ['pooled_output', 'sequence_output']
    """

    def __init__(self, backbone):
        if not isinstance(backbone, BertBackbone):
            raise TypeError(f"Expected a BertBackbone. Received: {type(backbone).__name__}")
        embeddings = backbone.embeddings
        self.hidden_dim = backbone.hidden_dim
        self.output_encoder_layers = backbone.output_encoder_layers
        self.token_table = _own(embeddings.token_embedding.embeddings)
        self.position_table = _own(embeddings.position_embedding.position_embeddings)
        self.segment_table = _own(embeddings.segment_embedding.embeddings)
        self.embedding_norm = _LayerNorm(embeddings.layer_norm)
        self.blocks = [
            _Block(block, f"block_{i}") for i, block in enumerate(backbone.encoder_blocks)
        ]
        self.final_norm = (
            _LayerNorm(backbone.final_layer_norm) if backbone.final_layer_norm is not None else None
        )
        pooler = backbone.pooler_dense
        self.pooler = _Dense([pooler], "pooler")

    def __call__(self, inputs, mask=None):
        """`inputs`: int (B, T) `token_ids`, `segment_ids`, `padding_mask`
        (`mask`, Keras' own masks, which a functional graph hands a layer:
        none here)."""
        token_ids = tf.convert_to_tensor(inputs["token_ids"])
        batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
        x = (
            tf.gather(self.token_table, token_ids)
            + self.position_table[None, :length]
            + tf.gather(self.segment_table, inputs["segment_ids"])
        )  # (B, T, H)
        x = tf.reshape(self.embedding_norm(x), [-1, self.hidden_dim])  # (M, H)
        keys = tf.cast(inputs["padding_mask"], tf.float32)
        # A reshape, not `[:, None, None, :]`: TFLite has no new-axis slice.
        score_bias = tf.reshape((1.0 - keys) * _MASKED_SCORE, [batch, 1, 1, length])
        encoder_outputs = []
        for block in self.blocks:
            x = block(x, score_bias, batch, length)
            encoder_outputs.append(tf.reshape(x, [batch, length, self.hidden_dim]))
        if self.final_norm is not None:
            x = self.final_norm(x)
        sequence = tf.reshape(x, [batch, length, self.hidden_dim])  # (B, T, H)
        outputs = {
            "sequence_output": sequence,
            "pooled_output": tf.tanh(self.pooler(sequence[:, 0])),  # (B, H)
        }
        if self.output_encoder_layers:
            outputs["encoder_outputs"] = encoder_outputs
        return outputs


def fused_forward(model):
    """`model`'s inference outputs for its inputs, its backbone run as a
    `FusedBackbone`: a `BertBackbone` itself, or a functional model that
    calls one (`model.backbone`; the task models and pretrainers), whose
    other layers run as they are."""
    backbone = model if isinstance(model, BertBackbone) else model.backbone
    fused = FusedBackbone(backbone)
    if model is backbone:
        return fused

    def forward(inputs):
        # Keras' own `Functional.call`, with one operation swapped: Keras has
        # no public way to run a functional graph with a layer replaced.
        outputs = model._run_through_graph(
            model._standardize_inputs(inputs),
            operation_fn=lambda operation: fused if operation is backbone else operation,
        )
        return outputs[0] if isinstance(outputs, (list, tuple)) and len(outputs) == 1 else outputs

    return forward
