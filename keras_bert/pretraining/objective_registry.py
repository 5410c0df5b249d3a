"""Objective name → the class that implements it (`objective:` in a
pre-training config). Each provides `objective.PretrainingObjective`
(`tests/pretraining/test_objective.py`)."""

from keras_bert.pretraining.electra_objective import ElectraObjective
from keras_bert.pretraining.masked_lm_objective import MaskedLmObjective
from keras_bert.pretraining.objective import PretrainingObjective

OBJECTIVES: dict[str, type[PretrainingObjective]] = {
    "masked_lm": MaskedLmObjective,
    "electra": ElectraObjective,
}
