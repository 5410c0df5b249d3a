"""`BertBackbone` arguments <-> `bert_config.json` / Hugging Face `config.json`.

Hugging Face's `config.json` for BERT is the original `bert_config.json`
plus a few keys (`layer_norm_eps`, `model_type`, `architectures`, ...), so
one pair of functions serves both formats.
"""

import math

from keras_bert.errors import CheckpointError

# `"gelu"` is read as the exact erf form of the GELU paper, as Hugging Face
# reads it. google-research/bert's `modeling.py` computed it with erf at
# first and with the tanh approximation from February 2019 on, under the
# same config word; the two differ by under 1e-3 per activation.
# `convert(..., hidden_activation=...)` (`--hidden_activation`) overrides
# what the config says.
_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
}
_REQUIRED = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
)


def backbone_config_from_json(config, source="config"):
    """`BertBackbone` keyword arguments from a BERT JSON config dict.

    Raises `CheckpointError` for a missing key, a size or rate that is no
    number (null, text), an unknown `hidden_act` or a BERT variant keras_bert
    does not implement.
    """
    missing = [key for key in _REQUIRED if key not in config]
    if missing:
        raise CheckpointError(f"{source}: missing key(s) {missing}.")
    model_type = config.get("model_type", "bert")
    if model_type != "bert":
        raise CheckpointError(f"{source}: `model_type` must be 'bert'. Received: {model_type!r}")
    position_type = config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise CheckpointError(
            f"{source}: only absolute position embeddings are supported. "
            f"Received: position_embedding_type={position_type!r}"
        )
    activation = config.get("hidden_act", "gelu")
    if activation not in _ACTIVATIONS:
        raise CheckpointError(
            f"{source}: `hidden_act` must be one of {sorted(_ACTIVATIONS)}. "
            f"Received: hidden_act={activation!r}"
        )

    def number(key, default, integer=False):
        return _number(config, key, default, integer, source)

    dropout = number("hidden_dropout_prob", 0.1)
    attention_dropout = number("attention_probs_dropout_prob", dropout)
    return {
        "vocabulary_size": number("vocab_size", None, integer=True),
        "num_layers": number("num_hidden_layers", None, integer=True),
        "num_heads": number("num_attention_heads", None, integer=True),
        "hidden_dim": number("hidden_size", None, integer=True),
        "intermediate_dim": number("intermediate_size", None, integer=True),
        "dropout": dropout,
        # None: the attention rate follows `dropout` (BERT sets both to 0.1).
        "attention_dropout": (None if attention_dropout == dropout else attention_dropout),
        "max_sequence_length": number("max_position_embeddings", 512, integer=True),
        "num_segments": number("type_vocab_size", 2, integer=True),
        "hidden_activation": _ACTIVATIONS[activation],
        # The original code hard-codes 1e-12; Hugging Face made it a key.
        "layer_norm_epsilon": number("layer_norm_eps", 1e-12),
    }


def _number(config, key, default, integer, source):
    """`config[key]` (or `default` when absent) as a float or an int.

    Raises `CheckpointError` naming the key for null, text that is no
    number, a non-finite number, or a fraction where a count belongs.
    """
    value = config.get(key, default)
    try:
        if isinstance(value, bool):  # float(True) is 1.0.
            raise TypeError
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or (integer and not number.is_integer()):
        kind = "a whole number" if integer else "a number"
        raise CheckpointError(f"{source}: `{key}` must be {kind}. Received: {key}={value!r}")
    return int(number) if integer else number


def json_from_backbone_config(config, architecture):
    """Hugging Face `config.json` dict for `BertBackbone` arguments.

    `architecture` is the transformers class that should load the folder
    (`"BertModel"` or `"BertForPreTraining"`).
    """
    activation = {"gelu": "gelu", "gelu_approximate": "gelu_new"}
    return {
        "architectures": [architecture],
        "model_type": "bert",
        "vocab_size": config["vocabulary_size"],
        "hidden_size": config["hidden_dim"],
        "num_hidden_layers": config["num_layers"],
        "num_attention_heads": config["num_heads"],
        "intermediate_size": config["intermediate_dim"],
        "hidden_act": activation[config["hidden_activation"]],
        "hidden_dropout_prob": config["dropout"],
        "attention_probs_dropout_prob": (
            config["dropout"]
            if config.get("attention_dropout") is None
            else config["attention_dropout"]
        ),
        "max_position_embeddings": config["max_sequence_length"],
        "type_vocab_size": config["num_segments"],
        "initializer_range": 0.02,
        "layer_norm_eps": config["layer_norm_epsilon"],
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "tie_word_embeddings": True,
    }
