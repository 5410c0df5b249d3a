"""The door for a new pre-training objective (issue 68, "an objective owns
its parts"): a class in its own file outside `keras_bert`
(`toy_objective.py`) and one registration line give a recipe section with
its ranges and checks, a run that trains, resumes and exports, and the run
folder's file list."""

import json
import os

import keras
import numpy as np
import pytest
import yaml

from keras_bert.errors import ConfigError, UserError
from keras_bert.pretraining import (
    OBJECTIVES,
    CheckpointManager,
    PretrainingConfig,
    PretrainingObjective,
    load_pretraining_config,
    run_pretraining,
)
from keras_bert.pretraining.fill_mask import fill_mask
from keras_bert.pretraining.objective_registry import exported_file_names
from keras_bert.runs.output_guard import check_output
from pipelines import BertTokenizer
from tests import contracts
from tests.pretraining.conftest import StepRecorder, tiny_config
from tests.pretraining.test_runner import SignalAt

TOY = "tests.pretraining.toy_objective.ToyObjective"


@pytest.fixture(scope="module", autouse=True)
def toy():
    OBJECTIVES.register("toy", TOY)  # The one line a new objective needs.
    yield
    OBJECTIVES.unregister("toy")


@pytest.mark.backend_independent
def test_the_toy_provides_the_contract():
    assert contracts.contract_breaches(PretrainingObjective, OBJECTIVES["toy"]) == []


@pytest.mark.backend_independent
def test_its_section_is_read_set_checked_and_written_as_a_shipped_ones():
    config = load_pretraining_config("default", ["objective=toy", "toy.mlm_weight=2"])
    assert config.toy.mlm_weight == 2.0
    assert config.to_dict()["toy"] == {"mlm_weight": 2.0}
    assert config.to_dict()["electra"]["generator_size"] == 0.25  # Every section is kept.
    with pytest.raises(ConfigError, match=r"Unknown config key 'toy\.mlm_wieght'"):
        load_pretraining_config("default", ["toy.mlm_wieght=2"])
    with pytest.raises(ConfigError, match=r"`toy\.mlm_weight` must be > 0\. Received"):
        load_pretraining_config("default", ["toy.mlm_weight=0"])  # Whichever objective.
    with pytest.raises(ConfigError, match=r"objective=toy trains no next-sentence head"):
        load_pretraining_config("default", ["objective=toy", "data.next_sentence_rate=0.5"])
    with pytest.raises(ConfigError, match="must be one of masked_lm, electra, toy"):
        load_pretraining_config("default", ["objective=toy2"])
    assert OBJECTIVES["toy"].check_config(config) == ["objective=toy trains on the full softmax."]


@pytest.mark.backend_independent
def test_the_run_folder_list_and_the_registry_see_it():
    assert "toy_pretrainer.keras" in exported_file_names()
    with pytest.raises(ValueError, match="'toy' is registered already"):
        OBJECTIVES.register("toy", "another.module.Toy")
    OBJECTIVES.register("toy", TOY)  # The same line twice is one registration.
    with pytest.raises(ValueError, match="cannot have a config section: `data` is a shared key"):
        OBJECTIVES.register("data", TOY)
        try:
            PretrainingConfig()
        finally:
            OBJECTIVES.unregister("data")


def test_trains_resumes_and_exports(tmp_path, tiny_corpus):
    # One phase, no held-out evaluation, no SavedModel: seconds, not a minute.
    phase = {"seq_len": 32, "max_predictions": 5, "batch_size": 4, "steps": 9}
    overrides = {"objective": "toy", "toy.mlm_weight": 2.0, "eval_steps": 0, "phases": [phase]}
    config = tiny_config(tmp_path, tiny_corpus, **overrides)
    keras.utils.set_random_seed(7)
    assert run_pretraining(config, verbose=0, callbacks=[SignalAt(4)])["preempted"]
    latest = CheckpointManager(os.path.join(config.model_dir, "checkpoints")).latest()
    assert json.load(open(os.path.join(latest, "state.json")))["step"] == 5
    recorder = StepRecorder()
    results = run_pretraining(config, verbose=0, callbacks=[recorder])
    assert results["state"].finished and results["state"].step == 9
    assert recorder.seen[0] == 5  # From the checkpoint, not from 0.
    pretraining = results["pretraining"]
    model = pretraining.model
    assert pretraining.objective.mlm_weight == 2.0
    # Its fill-mask probes, as the objective completes them.
    tokenizer = BertTokenizer(config.data.vocab_file)
    (answers,) = fill_mask(model, tokenizer, ["the [MASK] ."], 3, pretraining.objective)
    assert len(answers) == 1 and len(answers[0]) == 3

    files = set(os.listdir(config.model_dir))
    assert {"backbone.keras", "toy_pretrainer.keras"} <= files
    assert "pretrainer.keras" not in files
    with open(os.path.join(config.model_dir, "config.yaml")) as f:
        assert yaml.safe_load(f)["toy"] == {"mlm_weight": 2.0}
    exported_path = os.path.join(config.model_dir, "toy_pretrainer.keras")
    exported = keras.saving.load_model(exported_path)
    for a, b in zip(model.get_weights(), exported.get_weights()):
        np.testing.assert_array_equal(a, b)
    # The run recorded its files: another command never writes over the
    # toy's export, in a process that never registered the toy.
    OBJECTIVES.unregister("toy")
    try:
        with pytest.raises(UserError, match="is toy_pretrainer.keras of the run in"):
            check_output("--output", exported_path, overwrite=True)
    finally:
        OBJECTIVES.register("toy", TOY)
