"""Pre-training: configs, objective, distribution, checkpoints, monitoring,
and the resumable runner (the optimizer is `keras_bert.optimization`)."""

from keras_bert.errors import ConfigError
from keras_bert.pretraining.checkpoint_manager import CheckpointManager
from keras_bert.pretraining.config import (
    CheckpointConfig,
    DataConfig,
    ElectraConfig,
    OptimizerConfig,
    PhaseConfig,
    PretrainingConfig,
    load_pretraining_config,
)
from keras_bert.pretraining.masked_lm_objective import (
    compile_pretrainer,
    pretraining_losses,
    pretraining_metrics,
    to_keras_batch,
)
from keras_bert.pretraining.objective import PretrainingObjective
from keras_bert.pretraining.objective_registry import OBJECTIVES
from keras_bert.pretraining.pretraining import (
    Pretraining,
    PretrainingPhase,
    build_backbone,
    build_pretraining,
    plan_phases,
)
from keras_bert.pretraining.pretraining_checkpoint import PretrainingCheckpoint
from keras_bert.pretraining.runner import run_pretraining
from keras_bert.pretraining.training_distribution import (
    TrainingDistribution,
    create_distribution,
)
from keras_bert.pretraining.training_monitor import TrainingMonitor
from keras_bert.pretraining.training_state import TrainingState

__all__ = [
    "CheckpointConfig",
    "CheckpointManager",
    "ConfigError",
    "DataConfig",
    "ElectraConfig",
    "OBJECTIVES",
    "OptimizerConfig",
    "PhaseConfig",
    "Pretraining",
    "PretrainingCheckpoint",
    "PretrainingConfig",
    "PretrainingObjective",
    "PretrainingPhase",
    "TrainingDistribution",
    "TrainingMonitor",
    "TrainingState",
    "build_backbone",
    "build_pretraining",
    "compile_pretrainer",
    "create_distribution",
    "load_pretraining_config",
    "plan_phases",
    "pretraining_losses",
    "pretraining_metrics",
    "run_pretraining",
    "to_keras_batch",
]
