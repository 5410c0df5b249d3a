"""Bounds on the sizes of a `BertBackbone`, checked wherever a model config
is formed: a YAML file (`model_configs`), `model_overrides`, `random:NAME`, a
checkpoint's JSON, the constructor itself. Standard library only, so that
the YAML reader checks a config before Keras loads and the backbone checks
its arguments without reaching up to the reader.
"""

import numbers

# Bounds on every `BertBackbone` argument that sizes the model, so a typo
# is one line naming the key instead of an out-of-memory error after the
# start-up. Each is far above any published BERT-style encoder's (BERT-Large:
# 24 layers, 16 heads, width 1,024, feed-forward 4,096, 512 positions, 2
# segments; XLM-R's vocabulary: 250,002 tokens).
SIZE_LIMITS = {
    "vocabulary_size": 2**20,
    "num_layers": 1024,
    "num_heads": 1024,
    "hidden_dim": 2**16,
    "intermediate_dim": 2**18,
    "max_sequence_length": 2**20,
    "num_segments": 1024,
}
# Sizes each within bounds can still multiply into a model no device holds:
# training takes 16 bytes a parameter (weights, gradients, two Adam moments)
# on every replica, so 10 billion is 160 GB; the largest BERT-style encoders
# published have 1.5 (DeBERTa-v2-xxlarge) to 3.9 billion (Megatron-BERT).
MAX_PARAMETERS = 10**10


def check_model_sizes(config, where=""):
    """Raises `ValueError` (`where` + one line naming the key and echoing
    its value) for a size in `BertBackbone` arguments `config` that is not
    an integer within `SIZE_LIMITS`, or sizes that make more than
    `MAX_PARAMETERS` parameters; keys `config` lacks are not checked."""
    for key, limit in SIZE_LIMITS.items():
        if key not in config:
            continue
        value = config[key]
        whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        if not (whole and 1 <= value <= limit):
            raise ValueError(
                f"{where}`{key}` must be an integer in [1, {limit:,}]. Received: {key}={value!r}"
            )
    if {"vocabulary_size", "num_layers", "hidden_dim", "intermediate_dim"} <= set(config):
        count = parameter_count(config)
        if count > MAX_PARAMETERS:
            sizes = ", ".join(f"{key}={config[key]}" for key in SIZE_LIMITS if key in config)
            raise ValueError(
                f"{where}BertBackbone sizes must make at most {MAX_PARAMETERS:,} parameters. "
                f"Received: {sizes} (about {count:,})"
            )


def parameter_count(config):
    """`BertBackbone`'s parameter count, near enough to bound it: the
    embedding tables, per block the attention's four H×H projections and the
    feed-forward's two (gated: three) H×I ones, the pooler; biases and
    LayerNorms left out, a missing optional size counted as 0."""
    h, i = config["hidden_dim"], config["intermediate_dim"]
    rows = config["vocabulary_size"] + config.get("max_sequence_length", 0)
    rows += config.get("num_segments", 0)
    feedforward = (3 if config.get("gated_feedforward") else 2) * h * i
    return rows * h + config["num_layers"] * (4 * h * h + feedforward) + h * h
