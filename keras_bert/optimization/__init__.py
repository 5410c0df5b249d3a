"""The optimizer of pre-training and fine-tuning: Adam with decoupled
weight decay (not on LayerNorm or biases) and warmup then linear decay."""

from keras_bert.optimization.adam_weight_decay import AdamWeightDecay
from keras_bert.optimization.optimizer_config import OptimizerConfig
from keras_bert.optimization.optimizers import create_optimizer, create_schedule
from keras_bert.optimization.warmup_linear_decay import WarmupLinearDecay

__all__ = [
    "AdamWeightDecay",
    "OptimizerConfig",
    "WarmupLinearDecay",
    "create_optimizer",
    "create_schedule",
]
