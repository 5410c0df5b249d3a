"""Pre-training: configs, objective, distribution, checkpoints, monitoring,
and the resumable runner (the optimizer is `keras_bert.optimization`).

Each public name is loaded on first use, as `keras_bert`'s own are, so
that importing one module of this package (`config`, for the commands'
choices) loads no other.
"""

import importlib

_PUBLIC = {
    "CheckpointConfig": "keras_bert.pretraining.config",
    "CheckpointManager": "keras_bert.runs.checkpoints",
    "ConfigError": "keras_bert.errors",
    "DataConfig": "keras_bert.pretraining.config",
    "ElectraConfig": "keras_bert.pretraining.electra_config",
    "OBJECTIVES": "keras_bert.pretraining.objective_registry",
    "OptimizerConfig": "keras_bert.optimization.optimizer_config",
    "PhaseConfig": "keras_bert.pretraining.config",
    "Pretraining": "keras_bert.pretraining.run_setup",
    "TrainingCheckpoint": "keras_bert.runs.checkpoints",
    "PretrainingConfig": "keras_bert.pretraining.config",
    "PretrainingObjective": "keras_bert.pretraining.objective",
    "PretrainingPhase": "keras_bert.pretraining.run_setup",
    "TrainingDistribution": "keras_bert.pretraining.training_distribution",
    "TrainingMonitor": "keras_bert.pretraining.training_monitor",
    "TrainingState": "keras_bert.runs.checkpoints",
    "build_backbone": "keras_bert.pretraining.run_setup",
    "build_pretraining": "keras_bert.pretraining.run_setup",
    "compile_pretrainer": "keras_bert.pretraining.masked_lm_objective",
    "create_distribution": "keras_bert.pretraining.training_distribution",
    "load_pretraining_config": "keras_bert.pretraining.config",
    "plan_phases": "keras_bert.pretraining.run_setup",
    "masked_lm_losses": "keras_bert.pretraining.masked_lm_objective",
    "masked_lm_metrics": "keras_bert.pretraining.masked_lm_objective",
    "run_pretraining": "keras_bert.pretraining.runner",
    "to_keras_batch": "keras_bert.pretraining.masked_lm_objective",
}
# Names before the masked LM's helpers were named after it (issue 68).
_ALIASES = {
    "pretraining_losses": "masked_lm_losses",
    "pretraining_metrics": "masked_lm_metrics",
    # The checkpoint callback before fine-tuning shared it (issue 81).
    "PretrainingCheckpoint": "TrainingCheckpoint",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name):
    name = _ALIASES.get(name, name)
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'keras_bert.pretraining' has no attribute {name!r}")
