"""The fine-tuning optimizer: the pre-training one, with a 10% warmup.

Reuses `keras_bert.pretraining.create_optimizer` (decoupled weight decay 0.01
excluding LayerNorm and biases, β = (0.9, 0.999), ε = 1e-6, global-norm
clipping at 1, `WarmupLinearDecay`): BERT fine-tunes with the pre-training
optimizer (paper appendix A.3), only the warmup is given as a fraction of
the run (10%) instead of a step count. `optimizer.name` and
`optimizer.decay_start` pick the update and the schedule's shape.
"""

from keras_bert.optimization.optimizers import create_optimizer
from keras_bert.pretraining.config import (
    OptimizerConfig as TrainingOptimizerConfig,
)


def create_finetune_optimizer(config, total_steps):
    """The optimizer of a fine-tuning `OptimizerConfig` over `total_steps`
    updates."""
    total_steps = max(int(total_steps), 1)
    return create_optimizer(
        TrainingOptimizerConfig(
            name=config.name,
            decay_start=config.decay_start,
            learning_rate=config.learning_rate,
            warmup_steps=int(round(config.warmup_fraction * total_steps)),
            weight_decay=config.weight_decay,
            epsilon=config.epsilon,
            global_clipnorm=config.global_clipnorm,
        ),
        total_steps,
    )
