"""The one map between keras_bert variables and original BERT checkpoint names.

Every format we read or write (Google TF1 checkpoints, Hugging Face,
keras-hub) is translated to and from the original google-research/bert
variable names (`bert/encoder/layer_0/attention/self/query/kernel`, ...), and
this module is the only place that knows which keras_bert variable each name
is. Shapes follow the original checkpoint: dense kernels are (in, out); the
one exception in the original, `cls/seq_relationship/output_weights`, is
stored (out, in).
"""

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class WeightMapping:
    """One original checkpoint variable and the keras variable it fills."""

    name: str
    variable: object  # keras.Variable
    original_shape: tuple
    transpose: bool = False

    def to_keras(self, value):
        """Original-layout array -> array shaped like `variable`."""
        value = np.asarray(value)
        if tuple(value.shape) != self.original_shape:
            raise ValueError(
                f"Checkpoint variable `{self.name}` has shape "
                f"{tuple(value.shape)}, expected {self.original_shape}."
            )
        if self.transpose:
            value = value.T
        # Attention kernels are (H, H) in the checkpoint and (H, N, D) or
        # (N, D, H) in keras' MultiHeadAttention: a row-major reshape.
        return value.reshape(self.variable.shape)

    def from_keras(self):
        """keras variable -> original-layout numpy array."""
        value = np.asarray(self.variable.numpy(), dtype="float32")
        if self.transpose:
            return value.reshape(self.original_shape[::-1]).T
        return value.reshape(self.original_shape)


def _mapping(name, variable, transpose=False):
    shape = tuple(variable.shape)
    if len(shape) == 3:
        # (H, N, D) query/key/value kernels -> (H, H); (N, D, H) output kernel.
        if name.endswith("attention/output/dense/kernel"):
            shape = (shape[0] * shape[1], shape[2])
        else:
            shape = (shape[0], shape[1] * shape[2])
    elif len(shape) == 2 and name.endswith("/bias"):
        shape = (shape[0] * shape[1],)  # (N, D) query/key/value biases.
    if transpose:
        shape = shape[::-1]
    return WeightMapping(name, variable, shape, transpose)


def _layer_norm(prefix, layer):
    return [
        _mapping(f"{prefix}/gamma", layer.gamma),
        _mapping(f"{prefix}/beta", layer.beta),
    ]


def _dense(prefix, layer):
    return [
        _mapping(f"{prefix}/kernel", layer.kernel),
        _mapping(f"{prefix}/bias", layer.bias),
    ]


def backbone_weight_map(backbone):
    """`WeightMapping`s for every variable of a `BertBackbone`, in order."""
    embeddings = backbone.embeddings
    mappings = [
        _mapping(
            "bert/embeddings/word_embeddings",
            embeddings.token_embedding.embeddings,
        ),
        _mapping(
            "bert/embeddings/token_type_embeddings",
            embeddings.segment_embedding.embeddings,
        ),
        _mapping(
            "bert/embeddings/position_embeddings",
            embeddings.position_embedding.position_embeddings,
        ),
        *_layer_norm("bert/embeddings/LayerNorm", embeddings.layer_norm),
    ]
    for i, block in enumerate(backbone.encoder_blocks):
        prefix = f"bert/encoder/layer_{i}"
        attention = block.self_attention
        for part in ("query", "key", "value"):
            dense = getattr(attention, f"{part}_dense")
            mappings += _dense(f"{prefix}/attention/self/{part}", dense)
        mappings += _dense(
            f"{prefix}/attention/output/dense", attention.output_dense
        )
        mappings += _layer_norm(
            f"{prefix}/attention/output/LayerNorm",
            block.self_attention_layer_norm,
        )
        mappings += _dense(
            f"{prefix}/intermediate/dense", block.intermediate_dense
        )
        mappings += _dense(f"{prefix}/output/dense", block.output_dense)
        mappings += _layer_norm(
            f"{prefix}/output/LayerNorm", block.output_layer_norm
        )
    mappings += _dense("bert/pooler/dense", backbone.pooler_dense)
    return mappings


def pretrainer_weight_map(pretrainer):
    """`WeightMapping`s for a `BertPretrainer`: backbone plus both heads."""
    mlm_head = pretrainer.mlm_head
    return backbone_weight_map(pretrainer.backbone) + [
        *_dense(
            "cls/predictions/transform/dense", mlm_head._intermediate_dense
        ),
        *_layer_norm(
            "cls/predictions/transform/LayerNorm",
            mlm_head._intermediate_layer_norm,
        ),
        _mapping("cls/predictions/output_bias", mlm_head._bias),
        _mapping(
            "cls/seq_relationship/output_weights",
            pretrainer.nsp_head.kernel,
            transpose=True,
        ),
        _mapping("cls/seq_relationship/output_bias", pretrainer.nsp_head.bias),
    ]
