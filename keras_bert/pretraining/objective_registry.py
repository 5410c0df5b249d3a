"""Objective name → the class that implements it (`objective:` in a
pre-training config). Each provides `objective.PretrainingObjective`
(`tests/pretraining/test_objective.py`); its name is also the YAML key of
its own config section (`electra:`).

A user's objective is one file and one line:
`OBJECTIVES.register("mine", "my_package.my_objective.MyObjective")`.
"""

from keras_bert.registry import Registry

OBJECTIVES = Registry(
    {
        "masked_lm": "keras_bert.pretraining.masked_lm_objective.MaskedLmObjective",
        "electra": "keras_bert.pretraining.electra_objective.ElectraObjective",
    }
)

# What a recipe trains when it names no objective: BERT's.
DEFAULT_OBJECTIVE = "masked_lm"


def config_sections():
    """`{name: a new default section}` of every registered objective that
    has one (`PretrainingObjective.config_section`), in registration order.
    Imports each objective's module, which loads no Keras."""
    sections = {name: OBJECTIVES[name].config_section() for name in OBJECTIVES}
    return {name: section for name, section in sections.items() if section is not None}


def exported_file_names():
    """The `.keras` files every registered objective writes into its run's
    `model_dir` (`PretrainingObjective.export_stems`), sorted: the run
    folder's own files, set aside by a rerun with `--overwrite` and never
    written over by another command. Read without building a model or
    loading Keras."""
    return tuple(
        sorted({f"{stem}.keras" for name in OBJECTIVES for stem in OBJECTIVES[name].export_stems})
    )
