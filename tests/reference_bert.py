"""An independent numpy forward pass of the original BERT, for tests.

Written from the paper (Devlin et al., 2018, https://arxiv.org/abs/1810.04805)
and google-research/bert's `modeling.py` description, not from keras_bert:
it reads a dict of ORIGINAL checkpoint names (`bert/encoder/layer_0/...`)
to numpy arrays in the original layout (dense kernels (in, out)) and
computes in float64, so keras_bert (float32) can be checked against it.

Shape legend: B batch, T sequence length, H hidden, N heads, D = H / N,
P masked positions, V vocabulary.

Example:
    sequence, pooled = bert_forward(weights, token_ids, segment_ids,
                                    padding_mask, num_heads=2)
    mlm, nsp = pretraining_heads(weights, sequence, pooled, mask_positions)
"""

import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=["float64"])


def gelu(x, approximate=False):
    """GELU: x·Φ(x) with the erf CDF, or the tanh approximation."""
    if approximate:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * gamma + beta


def _get(weights, name):
    return np.asarray(weights[name], "float64")


def _dense(weights, scope, x):
    """x @ kernel (+ bias, which a model trained without biases lacks)."""
    out = x @ _get(weights, f"{scope}/kernel")
    if f"{scope}/bias" in weights:
        out = out + _get(weights, f"{scope}/bias")
    return out


def _softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


def bert_forward(
    weights,
    token_ids,
    segment_ids,
    padding_mask,
    num_heads,
    eps=1e-12,
    approximate_gelu=False,
    normalize_first=False,
    states=None,
):
    """BERT encoder: returns (sequence_output (B, T, H), pooled_output (B, H)).

    Args:
        weights: dict, original name -> array (the `bert/...` variables).
        token_ids, segment_ids, padding_mask: int arrays (B, T); the mask is
            1 for real tokens.
        num_heads: int, attention heads N.
        eps: LayerNorm epsilon (1e-12 in the original).
        approximate_gelu: use the tanh GELU instead of the erf one.
        normalize_first: pre-LN blocks, each LayerNorm applied to its
            sublayer's input, and `bert/encoder/final_layer_norm` at the end.
        states: None, or a dict that gets `"hidden"` (the embeddings'
            output, then each block's, (B, T, H)) and `"attention"` (each
            block's probabilities (B, N, T, T)).

    A dense layer whose `.../bias` is absent from `weights` has none; a block
    with `.../intermediate/gate/kernel` has a GEGLU feed-forward.
    """
    token_ids = np.asarray(token_ids)
    batch, length = token_ids.shape
    e = "bert/embeddings"
    x = (
        _get(weights, f"{e}/word_embeddings")[token_ids]
        + _get(weights, f"{e}/token_type_embeddings")[np.asarray(segment_ids)]
        + _get(weights, f"{e}/position_embeddings")[:length][None]
    )  # (B, T, H)
    x = layer_norm(
        x,
        _get(weights, f"{e}/LayerNorm/gamma"),
        _get(weights, f"{e}/LayerNorm/beta"),
        eps,
    )
    hidden = x.shape[-1]
    head_dim = hidden // num_heads
    # The original adds -10000 to the scores of padded keys.
    mask_bias = (1.0 - np.asarray(padding_mask, "float64"))[:, None, None, :] * -10000.0

    def split_heads(t):  # (B, T, H) -> (B, N, T, D)
        return t.reshape(batch, length, num_heads, head_dim).transpose(0, 2, 1, 3)

    def norm(t, name):
        return layer_norm(t, _get(weights, f"{name}/gamma"), _get(weights, f"{name}/beta"), eps)

    hidden_states, attention = [x], []
    layer = 0
    while f"bert/encoder/layer_{layer}/attention/self/query/kernel" in weights:
        scope = f"bert/encoder/layer_{layer}"
        attention_ln = f"{scope}/attention/output/LayerNorm"
        output_ln = f"{scope}/output/LayerNorm"
        source = norm(x, attention_ln) if normalize_first else x
        q = split_heads(_dense(weights, f"{scope}/attention/self/query", source))
        k = split_heads(_dense(weights, f"{scope}/attention/self/key", source))
        v = split_heads(_dense(weights, f"{scope}/attention/self/value", source))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_dim)  # (B, N, T, T)
        probabilities = _softmax(scores + mask_bias)
        context = probabilities @ v  # (B, N, T, D)
        context = context.transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        attended = _dense(weights, f"{scope}/attention/output/dense", context)
        x = x + attended if normalize_first else norm(x + attended, attention_ln)
        source = norm(x, output_ln) if normalize_first else x
        inner = gelu(_dense(weights, f"{scope}/intermediate/dense", source), approximate_gelu)
        if f"{scope}/intermediate/gate/kernel" in weights:
            # GEGLU (Shazeer 2020): the activated branch times a linear gate.
            inner = inner * _dense(weights, f"{scope}/intermediate/gate", source)
        out = _dense(weights, f"{scope}/output/dense", inner)  # (B, T, H)
        x = x + out if normalize_first else norm(x + out, output_ln)
        hidden_states.append(x)
        attention.append(probabilities)
        layer += 1
    if states is not None:
        states.update(hidden=hidden_states, attention=attention)
    if normalize_first:
        x = norm(x, "bert/encoder/final_layer_norm")
    pooled = np.tanh(_dense(weights, "bert/pooler/dense", x[:, 0]))  # [CLS]: (B, H)
    return x, pooled


def pretraining_heads(
    weights,
    sequence_output,
    pooled_output,
    mask_positions,
    eps=1e-12,
    approximate_gelu=False,
):
    """Masked-LM logits (B, P, V) at `mask_positions` and NSP logits (B, 2).

    The masked-LM transform is dense + GELU + LayerNorm; its decoder is the
    transposed word-embedding matrix plus `cls/predictions/output_bias`.
    `cls/seq_relationship/output_weights` is stored (2, H).
    """
    positions = np.asarray(mask_positions)
    gathered = np.take_along_axis(
        np.asarray(sequence_output, "float64"), positions[..., None], axis=1
    )  # (B, P, H)
    t = "cls/predictions/transform"
    h = gelu(_dense(weights, f"{t}/dense", gathered), approximate_gelu)
    h = layer_norm(
        h,
        _get(weights, f"{t}/LayerNorm/gamma"),
        _get(weights, f"{t}/LayerNorm/beta"),
        eps,
    )
    mlm = h @ _get(weights, "bert/embeddings/word_embeddings").T + _get(
        weights, "cls/predictions/output_bias"
    )  # (B, P, V)
    nsp = np.asarray(pooled_output, "float64") @ _get(
        weights, "cls/seq_relationship/output_weights"
    ).T + _get(weights, "cls/seq_relationship/output_bias")  # (B, 2)
    return mlm, nsp
