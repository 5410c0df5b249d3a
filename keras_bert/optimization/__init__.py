"""The optimizer of pre-training and fine-tuning: Adam with decoupled
weight decay (not on LayerNorm or biases) and warmup then linear decay.

Each public name is loaded on first use, as `keras_bert`'s own are, so that
`optimizer_config` (read by the configs behind the commands' `--help`)
imports without Keras.
"""

import importlib

_PUBLIC = {
    "AdamWeightDecay": "keras_bert.optimization.adam_weight_decay",
    "OptimizerConfig": "keras_bert.optimization.optimizer_config",
    "WarmupLinearDecay": "keras_bert.optimization.warmup_linear_decay",
    "create_optimizer": "keras_bert.optimization.optimizers",
    "create_schedule": "keras_bert.optimization.optimizers",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'keras_bert.optimization' has no attribute {name!r}")
