"""Pre-training: configs, objective, distribution, checkpoints, monitoring,
and the resumable runner (the optimizer is `keras_bert.optimization`).

Each public name is loaded on first use, as `keras_bert`'s own are, so
that importing one module of this package (`config`, for the commands'
choices) loads no other.
"""

import importlib

_PUBLIC = {
    "CheckpointConfig": "keras_bert.pretraining.config",
    "CheckpointManager": "keras_bert.pretraining.checkpoint_manager",
    "ConfigError": "keras_bert.errors",
    "DataConfig": "keras_bert.pretraining.config",
    "ElectraConfig": "keras_bert.pretraining.config",
    "OBJECTIVES": "keras_bert.pretraining.objective_registry",
    "OptimizerConfig": "keras_bert.optimization.optimizer_config",
    "PhaseConfig": "keras_bert.pretraining.config",
    "Pretraining": "keras_bert.pretraining.pretraining",
    "PretrainingCheckpoint": "keras_bert.pretraining.pretraining_checkpoint",
    "PretrainingConfig": "keras_bert.pretraining.config",
    "PretrainingObjective": "keras_bert.pretraining.objective",
    "PretrainingPhase": "keras_bert.pretraining.pretraining",
    "TrainingDistribution": "keras_bert.pretraining.training_distribution",
    "TrainingMonitor": "keras_bert.pretraining.training_monitor",
    "TrainingState": "keras_bert.pretraining.training_state",
    "build_backbone": "keras_bert.pretraining.pretraining",
    "build_pretraining": "keras_bert.pretraining.pretraining",
    "compile_pretrainer": "keras_bert.pretraining.masked_lm_objective",
    "create_distribution": "keras_bert.pretraining.training_distribution",
    "load_pretraining_config": "keras_bert.pretraining.config",
    "plan_phases": "keras_bert.pretraining.pretraining",
    "pretraining_losses": "keras_bert.pretraining.masked_lm_objective",
    "pretraining_metrics": "keras_bert.pretraining.masked_lm_objective",
    "run_pretraining": "keras_bert.pretraining.runner",
    "to_keras_batch": "keras_bert.pretraining.masked_lm_objective",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'keras_bert.pretraining' has no attribute {name!r}")
