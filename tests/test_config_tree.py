"""`--set` on a section merges into the recipe (issue 49, item 4)."""

import dataclasses

import pytest

from keras_bert.finetuning.config import load_finetune_config
from keras_bert.pretraining import load_pretraining_config

pytestmark = pytest.mark.backend_independent


def sections(config):
    return [
        f.name
        for f in dataclasses.fields(config)
        if dataclasses.is_dataclass(getattr(config, f.name))
    ]


def first_key(section):
    return dataclasses.fields(section)[0].name


@pytest.mark.parametrize(
    "load",
    [
        lambda overrides: load_pretraining_config("default", overrides),
        lambda overrides: load_pretraining_config("own_text", overrides),
        lambda overrides: load_finetune_config(
            "squad_v1", "configs/finetune/squad.yaml", overrides
        ),
    ],
    ids=["pretrain-default", "pretrain-own_text", "finetune-squad"],
)
def test_a_mapping_merges_into_the_recipes_section(load):
    recipe = load([])
    assert sections(recipe)
    for name in sections(recipe):
        section = getattr(recipe, name)
        key = first_key(section)
        value = getattr(section, key)
        merged = getattr(load([f"{name}={{{key}: {value!r}}}"]), name)
        # Every key not named keeps the recipe's value, not the code's default.
        assert merged == section, name


def test_a_mapping_for_a_phase_merges_into_that_phase():
    config = load_pretraining_config("default", ["phases.1={batch_size: 16}"])
    recipe = load_pretraining_config("default")
    assert config.phases[1] == dataclasses.replace(recipe.phases[1], batch_size=16)


def test_the_issue_reproduction_keeps_next_sentence_off():
    config = load_pretraining_config(
        "default",
        [
            "data={train_files: 'data/corpus/*/*.txt', vocab_file: data/vocab/bert_uncased_vocab.txt}"
        ],
    )
    assert config.data.next_sentence_rate == 0.0
