"""Every registered pre-training objective provides `PretrainingObjective`,
and the run folder knows every file it exports."""

import pytest

from keras_bert.pretraining import OBJECTIVES, PretrainingConfig, PretrainingObjective
from keras_bert.pretraining.masked_lm_objective import MaskedLmObjective
from keras_bert.run_dir import RUN_FILES
from tests import contracts
from tests.models.test_bert_backbone import TINY

pytestmark = pytest.mark.backend_independent


def test_the_contract_lists_what_the_callers_use():
    assert contracts.protocol_members(PretrainingObjective) == [
        "__init__",
        "build_model",
        "compile_args",
        "exports",
        "fill_mask_note",
        "logged",
        "report",
        "to_keras_batch",
    ]


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_registered_objective_provides_the_contract(name):
    assert contracts.contract_breaches(PretrainingObjective, OBJECTIVES[name]) == []


def test_an_objective_without_a_member_breaks_the_contract():
    members = {k: v for k, v in vars(MaskedLmObjective).items() if k != "logged"}
    assert contracts.contract_breaches(PretrainingObjective, type("Stripped", (), members)) == [
        "logged: missing"
    ]

    class WrongSignature(MaskedLmObjective):
        def to_keras_batch(self, features, labels):
            return features, labels

    assert contracts.contract_breaches(PretrainingObjective, WrongSignature) == [
        "to_keras_batch: too many positional arguments"
    ]


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_exports_and_metrics_are_known_to_the_run(name):
    from keras_bert import BertBackbone

    objective = OBJECTIVES[name](PretrainingConfig(objective=name))
    model = objective.build_model(BertBackbone(**TINY))
    exports = objective.exports(model)
    assert exports["backbone"][0] is model.backbone
    # A rerun must know these as the run's own files (`run_dir`).
    assert {f"{stem}.keras" for stem in exports} <= RUN_FILES
    # Every accuracy the console prints is a metric the model logs.
    compiled = objective.compile_args()["weighted_metrics"]
    logged = {f"{output}_{m.name}" for output, ms in compiled.items() for m in ms}
    assert {k for k in objective.logged if k.endswith("accuracy")} <= logged
    assert objective.report({k: 0.5 for k in logged}).startswith("mlm_accuracy=0.5000")
