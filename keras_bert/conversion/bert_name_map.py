"""The one map between keras_bert variables and original BERT checkpoint names.

Every format we read or write (Google TF1 checkpoints, Hugging Face,
keras-hub) is translated to and from the original google-research/bert
variable names (`bert/encoder/layer_0/attention/self/query/kernel`, ...), and
this module is the only place that knows which variable each name is:

- keras_bert variables: `backbone_weight_map`, `pretrainer_weight_map`;
- keras-hub `BertBackbone` variables: `keras_hub_backbone_weight_map` (the
  same names on keras-hub's sublayers);
- Hugging Face tensor names: `original_to_hf_name` / `hf_to_original_name`,
  a deterministic rename plus a transpose of every dense kernel.

Shapes follow the original checkpoint: dense kernels are (in, out); the
one exception in the original, `cls/seq_relationship/output_weights`, is
stored (out, in), as Hugging Face stores every `nn.Linear` weight.
"""

import dataclasses
import re

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
        return self.from_keras_array(self.variable.numpy())

    def from_keras_array(self, value):
        """Array shaped like `variable` -> original-layout float32 array."""
        value = np.asarray(value, dtype="float32")
        if tuple(value.shape) != tuple(self.variable.shape):
            raise ValueError(
                f"Variable for `{self.name}` has shape {tuple(value.shape)}, "
                f"expected {tuple(self.variable.shape)}."
            )
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
    mappings = [_mapping(f"{prefix}/kernel", layer.kernel)]
    if layer.bias is not None:  # None in a backbone built with use_bias=False.
        mappings.append(_mapping(f"{prefix}/bias", layer.bias))
    return mappings


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
        mappings += _dense(f"{prefix}/attention/output/dense", attention.output_dense)
        mappings += _layer_norm(
            f"{prefix}/attention/output/LayerNorm",
            block.self_attention_layer_norm,
        )
        mappings += _dense(f"{prefix}/intermediate/dense", block.intermediate_dense)
        if block.gate_dense is not None:
            # A gated (GEGLU) block's: like the final LayerNorm below, no
            # Google or Hugging Face BERT has it; named for the numpy reference.
            mappings += _dense(f"{prefix}/intermediate/gate", block.gate_dense)
        mappings += _dense(f"{prefix}/output/dense", block.output_dense)
        mappings += _layer_norm(f"{prefix}/output/LayerNorm", block.output_layer_norm)
    if backbone.final_layer_norm is not None:
        # A pre-LN backbone's: no Google or Hugging Face BERT has it (so
        # `BertCheckpoint.from_model` refuses such a model); named in the
        # same style for the tests' numpy reference.
        mappings += _layer_norm("bert/encoder/final_layer_norm", backbone.final_layer_norm)
    mappings += _dense("bert/pooler/dense", backbone.pooler_dense)
    return mappings


def pretrainer_weight_map(pretrainer):
    """`WeightMapping`s for a `BertPretrainer`: backbone plus both heads."""
    mlm_head = pretrainer.mlm_head
    return backbone_weight_map(pretrainer.backbone) + [
        *_dense("cls/predictions/transform/dense", mlm_head._intermediate_dense),
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


def keras_hub_backbone_weight_map(backbone):
    """`WeightMapping`s for a keras-hub `BertBackbone`, original names.

    keras-hub's variables have the same shapes as ours (both use keras'
    `MultiHeadAttention`), only the sublayers are named differently.
    """
    mappings = [
        _mapping(
            "bert/embeddings/word_embeddings",
            backbone.token_embedding.embeddings,
        ),
        _mapping(
            "bert/embeddings/token_type_embeddings",
            backbone.segment_embedding.embeddings,
        ),
        _mapping(
            "bert/embeddings/position_embeddings",
            backbone.position_embedding.position_embeddings,
        ),
        *_layer_norm("bert/embeddings/LayerNorm", backbone.embeddings_layer_norm),
    ]
    for i, block in enumerate(backbone.transformer_layers):
        prefix = f"bert/encoder/layer_{i}"
        attention = block._self_attention_layer
        for part in ("query", "key", "value"):
            dense = getattr(attention, f"{part}_dense")
            mappings += _dense(f"{prefix}/attention/self/{part}", dense)
        mappings += _dense(f"{prefix}/attention/output/dense", attention.output_dense)
        mappings += _layer_norm(
            f"{prefix}/attention/output/LayerNorm",
            block._self_attention_layer_norm,
        )
        mappings += _dense(
            f"{prefix}/intermediate/dense",
            block._feedforward_intermediate_dense,
        )
        mappings += _dense(f"{prefix}/output/dense", block._feedforward_output_dense)
        mappings += _layer_norm(f"{prefix}/output/LayerNorm", block._feedforward_layer_norm)
    mappings += _dense("bert/pooler/dense", backbone.pooled_dense)
    return mappings


# === Hugging Face names ===
# Hugging Face's `modeling_bert.py` kept the original scopes, so its tensor
# names are the original ones with `/` -> `.`, `layer_3` -> `layer.3`,
# `kernel`/`gamma` -> `weight`, `beta` -> `bias`, `.weight` on embedding
# tables, and every `nn.Linear` weight stored (out, in). Only the head
# output names differ. Encoder names carry a `bert.` prefix when the file
# also holds heads (`BertForPreTraining`, `BertForMaskedLM`).
_HF_HEAD_NAMES = {
    "cls/predictions/output_bias": "cls.predictions.bias",
    "cls/seq_relationship/output_weights": "cls.seq_relationship.weight",
    "cls/seq_relationship/output_bias": "cls.seq_relationship.bias",
}
_ORIGINAL_HEAD_NAMES = {hf: name for name, hf in _HF_HEAD_NAMES.items()}
_HF_LEAF = {"kernel": "weight", "gamma": "weight", "beta": "bias"}


def original_to_hf_name(name, prefix=""):
    """Original name -> (Hugging Face name, transpose?).

    `prefix` (`""` or `"bert."`) goes in front of the encoder's names.
    Raises `ValueError` for a name outside the BERT map.
    """
    if name in _HF_HEAD_NAMES:
        return _HF_HEAD_NAMES[name], False
    if name.startswith("bert/"):
        scope, head = name[len("bert/") :], prefix
    elif name.startswith("cls/predictions/transform/"):
        scope, head = name, ""
    else:
        raise ValueError(f"`{name}` is not a BERT variable name.")
    parts = re.sub(r"\blayer_(\d+)\b", r"layer.\1", scope).split("/")
    leaf = parts[-1]
    if leaf.endswith("_embeddings"):
        parts.append("weight")
    elif leaf in _HF_LEAF:
        parts[-1] = _HF_LEAF[leaf]
    elif leaf != "bias":
        raise ValueError(f"`{name}` is not a BERT variable name.")
    return head + ".".join(parts), leaf == "kernel"


def hf_to_original_name(hf_name):
    """Hugging Face name -> (original name, transpose?), or None.

    Accepts names with or without the `bert.` prefix, and the legacy
    `LayerNorm.gamma`/`LayerNorm.beta` spellings of old checkpoints.
    Returns None for a name outside BERT's scopes (buffers such as
    `embeddings.position_ids`, task heads such as `classifier.weight`).
    Whether the name is one a given model has is checked by the caller.
    """
    if hf_name in _ORIGINAL_HEAD_NAMES:
        return _ORIGINAL_HEAD_NAMES[hf_name], False
    body = hf_name[len("bert.") :] if hf_name.startswith("bert.") else hf_name
    *scope, leaf = body.split(".")
    if scope and scope[0] in ("embeddings", "encoder", "pooler"):
        scope = ["bert", *scope]
    elif scope[:3] != ["cls", "predictions", "transform"]:
        return None
    transpose = False
    if scope[-1] == "LayerNorm" and leaf in ("weight", "gamma"):
        scope.append("gamma")
    elif scope[-1] == "LayerNorm" and leaf in ("bias", "beta"):
        scope.append("beta")
    elif scope[-1].endswith("_embeddings") and leaf == "weight":
        pass  # Embedding tables have no leaf name in the original.
    elif scope[-1] != "LayerNorm" and leaf == "weight":
        scope.append("kernel")
        transpose = True
    elif scope[-1] != "LayerNorm" and leaf == "bias":
        scope.append("bias")
    else:
        return None
    name = re.sub(r"/layer/(\d+)/", r"/layer_\1/", "/".join(scope))
    return name, transpose
