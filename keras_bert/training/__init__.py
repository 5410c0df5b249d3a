"""Pre-training: configs, optimizer and schedule, objective, distribution,
checkpoints, monitoring, and the resumable runner."""

from keras_bert.training.adam_weight_decay import AdamWeightDecay
from keras_bert.training.checkpoint_manager import CheckpointManager
from keras_bert.training.config_error import ConfigError
from keras_bert.training.optimizers import create_optimizer, create_schedule
from keras_bert.training.pretraining import (
    Pretraining,
    PretrainingPhase,
    build_backbone,
    build_pretraining,
    plan_phases,
)
from keras_bert.training.pretraining_checkpoint import PretrainingCheckpoint
from keras_bert.training.pretraining_config import (
    CheckpointConfig,
    DataConfig,
    OptimizerConfig,
    PhaseConfig,
    PretrainingConfig,
    load_pretraining_config,
)
from keras_bert.training.pretraining_objective import (
    compile_pretrainer,
    pretraining_losses,
    pretraining_metrics,
    to_keras_batch,
)
from keras_bert.training.pretraining_runner import run_pretraining
from keras_bert.training.training_distribution import (
    TrainingDistribution,
    create_distribution,
)
from keras_bert.training.training_monitor import TrainingMonitor
from keras_bert.training.training_state import TrainingState
from keras_bert.training.warmup_linear_decay import WarmupLinearDecay

__all__ = [
    "AdamWeightDecay",
    "CheckpointConfig",
    "CheckpointManager",
    "ConfigError",
    "DataConfig",
    "OptimizerConfig",
    "PhaseConfig",
    "Pretraining",
    "PretrainingCheckpoint",
    "PretrainingConfig",
    "PretrainingPhase",
    "TrainingDistribution",
    "TrainingMonitor",
    "TrainingState",
    "WarmupLinearDecay",
    "build_backbone",
    "build_pretraining",
    "compile_pretrainer",
    "create_distribution",
    "create_optimizer",
    "create_schedule",
    "load_pretraining_config",
    "plan_phases",
    "pretraining_losses",
    "pretraining_metrics",
    "run_pretraining",
    "to_keras_batch",
]
