"""Recipes and their config files: `--set` on a section merges into the recipe (issue 49,
item 4); a remote config file is read quietly (issue 82, item 16)."""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from keras_bert.errors import ConfigError, FinetuneConfigError
from keras_bert.finetuning.config import load_finetune_config
from keras_bert.model_configs import read_model_config
from keras_bert.pretraining import load_pretraining_config
from keras_bert.runtime.hardware import accelerator_expected

pytestmark = pytest.mark.backend_independent

REPO = Path(__file__).resolve().parent.parent


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


@pytest.mark.parametrize(
    "override",
    [["model_overrides={normalize_first: true}"], {"model_overrides": {"normalize_first": True}}],
    ids=["--set", "dict"],
)
def test_a_mapping_merges_into_a_free_form_mapping(override):
    # Issue 67 item 9: it replaced the recipe's model_overrides, so the
    # saved model trained with dropout 0.1 where the recipe says 0.0.
    assert load_pretraining_config("default").model_overrides == {"dropout": 0.0}
    config = load_pretraining_config("default", override)
    assert config.model_overrides == {"dropout": 0.0, "normalize_first": True}


# Every reader of a YAML config (issue 67: one decoding for every text file),
# the file it reads and the error it raises.
CONFIG_READERS = {
    "pretrain": (load_pretraining_config, "configs/pretrain/default.yaml", ConfigError),
    "finetune": (
        lambda path: load_finetune_config("sst2", path),
        "configs/finetune/glue.yaml",
        FinetuneConfigError,
    ),
    "model": (read_model_config, "configs/model/bert_tiny.yaml", ConfigError),
}


@pytest.mark.parametrize("read, recipe, error", CONFIG_READERS.values(), ids=CONFIG_READERS)
def test_every_config_reader_reads_a_byte_order_mark(tmp_path, read, recipe, error):
    path = tmp_path / "recipe.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + open(recipe, "rb").read())
    assert read(str(path)) == read(recipe)


@pytest.mark.parametrize("read, recipe, error", CONFIG_READERS.values(), ids=CONFIG_READERS)
def test_every_config_reader_names_the_line_that_is_not_utf8(tmp_path, read, recipe, error):
    lines = open(recipe, "rb").read().splitlines(keepends=True)
    path = tmp_path / "recipe.yaml"
    path.write_bytes(b"".join(lines[:2] + [b"# caf\xe9\n"] + lines[2:]))  # Latin-1.
    with pytest.raises(error) as raised:
        read(str(path))
    assert str(raised.value) == (
        f"{path}: line 3 is not UTF-8 (byte 0xe9 at column 6); save the file as UTF-8"
    )


@pytest.mark.skipif(accelerator_expected(), reason="a GPU or TPU is here")
@pytest.mark.parametrize(
    "command",
    [
        ["keras_bert.finetune", "--task", "sst2", "--init_checkpoint", "random:bert_tiny"],
        ["keras_bert.pretrain"],
    ],
)
def test_a_remote_config_is_read_without_tensorflows_start_up_notices(tmp_path, command):
    # Issue 82 item 16: reading it imported TensorFlow before the quiet import.
    argv = [*command, "--model_dir", str(tmp_path / "run"), "--config", "ram://nowhere/c.yaml"]
    if "--task" in command:
        argv += ["--data_dir", str(tmp_path)]
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BERT_VERBOSE"}
    result = subprocess.run(
        [sys.executable, "-m", *argv], capture_output=True, text=True, cwd=REPO, env=env
    )
    assert result.returncode == 2
    assert result.stderr == "error: ram://nowhere/c.yaml: no such config file\n", result.stderr
