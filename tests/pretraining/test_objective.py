"""Every registered pre-training objective provides `PretrainingObjective`,
and the run folder knows every file it exports."""

import dataclasses

import numpy as np
import pytest

from keras_bert.pretraining import OBJECTIVES, PretrainingConfig, PretrainingObjective
from keras_bert.pretraining.masked_lm_objective import MaskedLmObjective
from keras_bert.pretraining.objective_registry import (
    DEFAULT_OBJECTIVE,
    config_sections,
    exported_file_names,
)
from keras_bert.pretraining.run_kind import PRETRAINING_RUN
from tests import contracts
from tests.models.test_bert_backbone import TINY

pytestmark = pytest.mark.backend_independent


def test_the_contract_lists_what_the_callers_use():
    assert contracts.protocol_members(PretrainingObjective) == [
        "__init__",
        "build_model",
        "check_config",
        "compile_args",
        "config_ranges",
        "config_section",
        "export_stems",
        "exports",
        "fill_mask_inputs",
        "fill_mask_note",
        "logged",
        "output_bias",
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

    class CheckedOnAnInstance(MaskedLmObjective):
        def check_config(self, config):  # The config has no instance to call.
            return []

    assert contracts.contract_breaches(PretrainingObjective, CheckedOnAnInstance) == [
        "check_config: not a class method"
    ]


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_the_recipe_part_is_its_own(name):
    # The section, its ranges and the checks are read from the class alone.
    cls = OBJECTIVES[name]
    section = cls.config_section()
    if section is None:
        assert cls.config_ranges == {}
    else:
        assert dataclasses.is_dataclass(section) and cls.config_section() is not section
        assert set(cls.config_ranges) <= {f.name for f in dataclasses.fields(section)}
        assert config_sections()[name] == section
        assert PretrainingConfig().objective_sections()[name] == section
    if name != DEFAULT_OBJECTIVE:
        config = PretrainingConfig(objective=name)
        config.data.next_sentence_rate = 0.0
        assert isinstance(cls.check_config(config), list)


def test_every_objectives_section_is_a_top_level_key_of_the_recipe():
    config = PretrainingConfig()
    tree = config.to_dict()
    for name, section in config.objective_sections().items():
        assert tree[name] == dataclasses.asdict(section)
    # Where `electra:` has always been written (an older run's config.yaml
    # reads the same).
    keys = list(tree)
    assert keys.index("output_bias_init") < keys.index("electra") < keys.index("optimizer")


def test_exported_file_names_are_every_objectives_stems():
    stems = {stem for name in OBJECTIVES for stem in OBJECTIVES[name].export_stems}
    assert exported_file_names() == tuple(sorted(f"{stem}.keras" for stem in stems))
    assert {"backbone.keras", "pretrainer.keras", "electra_pretrainer.keras"} <= set(
        exported_file_names()
    )
    # The run folder's own files, which the run records.
    assert set(exported_file_names()) <= PRETRAINING_RUN.files()


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_exports_and_metrics_are_known_to_the_run(name):
    from keras_bert import BertBackbone

    objective = OBJECTIVES[name](PretrainingConfig(objective=name))
    model = objective.build_model(BertBackbone(**TINY))
    exports = objective.exports(model)
    assert exports["backbone"][0] is model.backbone
    assert tuple(exports) == type(objective).export_stems
    # A rerun must know these as the run's own files (`RunFolder`).
    assert {f"{stem}.keras" for stem in exports} <= PRETRAINING_RUN.files()
    # Every accuracy the console prints is a metric the model logs.
    compiled = objective.compile_args()["weighted_metrics"]
    logged = {f"{output}_{m.name}" for output, ms in compiled.items() for m in ms}
    assert {k for k in objective.logged if k.endswith("accuracy")} <= logged
    assert objective.report({k: 0.5 for k in logged}).startswith("mlm_accuracy=0.5000")
    # The unigram prior's target, and the probes' inputs, are the model's.
    bias = objective.output_bias(model)
    assert tuple(bias.shape) == (TINY["vocabulary_size"],)
    assert any(bias is weight for weight in model.weights)
    probes = {key: np.ones((1, 6), "int32") for key in ("token_ids", "segment_ids", "padding_mask")}
    probes["mask_positions"] = np.array([[1, 3]], "int32")
    inputs = objective.fill_mask_inputs(probes)
    assert set(model.input) <= set(inputs)
    assert model.predict_on_batch({k: inputs[k] for k in model.input})["mlm"].shape == (
        1,
        2,
        TINY["vocabulary_size"],
    )
