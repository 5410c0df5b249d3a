"""Objective name → the class that implements it (`objective:` in a
pre-training config). Each provides `objective.PretrainingObjective`
(`tests/pretraining/test_objective.py`)."""

from keras_bert.registry import Registry

OBJECTIVES = Registry(
    {
        "masked_lm": "keras_bert.pretraining.masked_lm_objective.MaskedLmObjective",
        "electra": "keras_bert.pretraining.electra_objective.ElectraObjective",
    }
)
