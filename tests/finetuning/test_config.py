"""Fine-tuning config loading, strict overrides and the warmup schedule."""

import numpy as np
import pytest

from keras_bert.errors import ConfigError
from keras_bert.finetuning.config import load_finetune_config
from keras_bert.finetuning.task_registry import TASKS, default_config_file
from keras_bert.optimization import create_optimizer

pytestmark = pytest.mark.backend_independent


def test_every_task_has_a_config_file():
    for task in TASKS:
        config = load_finetune_config(task, default_config_file(task))
        assert config.task == task
        assert config.training.batch_size in (16, 32)
    squad = load_finetune_config("squad_v1", default_config_file("squad_v1"))
    assert (squad.data.max_seq_length, squad.data.doc_stride, squad.data.max_query_length) == (
        384,
        128,
        64,
    )
    assert (squad.squad.n_best_size, squad.squad.max_answer_length) == (20, 30)


def test_paper_defaults():
    config = load_finetune_config("sst2", default_config_file("sst2"))
    assert config.optimizer.learning_rate in (5e-5, 3e-5, 2e-5)
    assert (config.training.batch_size, config.training.epochs) == (32, 3)
    assert (config.optimizer.warmup_fraction, config.training.dropout) == (0.1, 0.1)
    # Bias-corrected AdamW, chosen by measurement (BENCHMARKS.md, issue 13).
    assert (config.optimizer.name, config.optimizer.decay_start) == ("adamw", "warmup_end")


def test_overrides_are_typed_and_strict():
    config = load_finetune_config(
        "sst2",
        overrides=[
            "optimizer.learning_rate=5e-5",
            "training.epochs=2",
            "data.lower_case=false",
            "data.label_names=[neg, pos]",
            "data.train_limit=null",
        ],
    )
    assert config.optimizer.learning_rate == 5e-5 and config.training.epochs == 2.0
    assert config.data.lower_case is False and config.data.label_names == ["neg", "pos"]
    with pytest.raises(ConfigError, match="unknown config key 'training.lr'"):
        load_finetune_config("sst2", overrides=["training.lr=1"])
    with pytest.raises(ConfigError, match="unknown config key 'training'"):
        load_finetune_config("sst2", overrides=["training=1"])
    with pytest.raises(ConfigError, match="training.batch_size must be int"):
        load_finetune_config("sst2", overrides=["training.batch_size=big"])
    with pytest.raises(ConfigError, match="expected key=value"):
        load_finetune_config("sst2", overrides=["training.epochs"])


def test_unknown_key_in_yaml(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("training:\n  batchsize: 8\n")
    with pytest.raises(ConfigError, match=r"x.yaml: unknown config key 'training.batchsize'"):
        load_finetune_config("sst2", path)


def test_optimizer_warms_up_over_ten_percent():
    config = load_finetune_config("sst2", overrides=["optimizer.learning_rate=1e-4"])
    optimizer = create_optimizer(config.optimizer, total_steps=110)
    schedule = optimizer._learning_rate
    values = [float(np.asarray(schedule(s))) for s in (0, 11, 110)]
    np.testing.assert_allclose(values, [0.0, 1e-4, 0.0], atol=1e-9)
    assert optimizer.weight_decay == 0.01


def test_optimizer_and_schedule_are_chosen_by_name():
    from keras_bert.optimization import AdamWeightDecay

    config = load_finetune_config(
        "sst2",
        overrides=[
            "optimizer.name=adam_weight_decay",
            "optimizer.decay_start=step_0",
            "optimizer.learning_rate=1e-4",
        ],
    )
    optimizer = create_optimizer(config.optimizer, total_steps=100)
    assert isinstance(optimizer, AdamWeightDecay)
    assert optimizer.weight_decay_rate == 0.01
    # The original schedule drops to 0.9 of the peak after a 10% warmup.
    schedule = optimizer._learning_rate
    np.testing.assert_allclose(float(np.asarray(schedule(10))), 0.9e-4, rtol=1e-6)


@pytest.mark.parametrize("override", ["optimizer.name=adam", "optimizer.decay_start=late"])
def test_unknown_optimizer_words_are_one_line_errors(override):
    key, value = override.split("=")
    with pytest.raises(ConfigError) as error:
        load_finetune_config("sst2", overrides=[override])
    message = str(error.value)
    assert f"Received: {key}='{value}'" in message and key + " must be one of" in message
    assert "\n" not in message


def test_config_files_are_found_from_another_directory(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    config = load_finetune_config("squad_v1", default_config_file("squad_v1"))
    assert config.data.max_seq_length == 384
    # A relative config file is the user's: read from the working directory.
    (tmp_path / "mine.yaml").write_text("training:\n  batch_size: 8\n")
    assert load_finetune_config("sst2", "mine.yaml").training.batch_size == 8


def test_written_config_keeps_fine_tunings_optimizer_keys():
    # The warmup is a share of the run; pre-training's step count and
    # gradient accumulation are not fine-tuning's keys, written or set.
    config = load_finetune_config("sst2", default_config_file("sst2"))
    written = list(config.to_dict()["optimizer"])
    assert written[:2] == ["name", "learning_rate"] and "warmup_fraction" in written
    assert "warmup_steps" not in written and "gradient_accumulation_steps" not in written
    for key in ("warmup_steps", "gradient_accumulation_steps"):
        with pytest.raises(ConfigError, match=f"unknown config key 'optimizer.{key}'"):
            load_finetune_config("sst2", overrides=[f"optimizer.{key}=2"])


@pytest.mark.parametrize(
    "override",
    ["optimizer.epsilon=1e300", "training.batch_size=3000000000"],
)
def test_numbers_must_be_finite_and_bounded(override):
    # Issue 49, item 8: refused here, not deep inside the schedule.
    with pytest.raises(ConfigError, match="must be a finite number of at most"):
        load_finetune_config("sst2", overrides=[override])


@pytest.mark.parametrize(
    "names, received",
    [("[pos, neg, pos]", "['pos', 'neg', 'pos']"), ("[1, 1.0, 0]", "[1, 1.0, 0]")],
)
def test_a_class_named_twice_is_refused(names, received):
    # Issue 82 item 7: it built a 3-way classifier; 1 and 1.0 are one class
    # in the files (`canonical_label`), so in the names too.
    with pytest.raises(ConfigError) as error:
        load_finetune_config("classification", overrides=[f"data.label_names={names}"])
    assert str(error.value) == (
        "data.label_names must be distinct, non-blank class names (1, 1.0 and ' 1 ' name "
        f"one class). Received: data.label_names={received}"
    )


def test_a_task_loads_its_own_yaml_by_default():
    # Issue 48: `load_finetune_config("squad_v1")` once returned the dataclass
    # defaults (128 tokens) where squad.yaml says 384.
    assert load_finetune_config("squad_v1").data.max_seq_length == 384
    assert load_finetune_config("squad_v1").to_dict() == (
        load_finetune_config("squad_v1", "squad").to_dict()
    )


def test_a_bundled_name_or_a_path_picks_the_config(tmp_path):
    glue = load_finetune_config("swag", "glue")
    assert glue == load_finetune_config("swag", default_config_file("sst2"))
    with pytest.raises(ConfigError, match=r"No fine-tuning config 'gleu'.*glue"):
        load_finetune_config("sst2", "gleu")
    with pytest.raises(ConfigError, match="Unknown task 'sst3'"):
        load_finetune_config("sst3")


@pytest.mark.parametrize(
    "config_file, overrides, where",
    [
        # Issue 67 item 13: `--config squad` for a classification task was
        # taken without a word.
        ("squad", [], "squad.yaml: sets `squad`"),
        (None, ["squad.n_best_size=5"], "--set: sets `squad`"),
    ],
)
def test_the_squad_section_is_refused_to_a_task_that_does_not_read_it(
    config_file, overrides, where
):
    with pytest.raises(ConfigError, match=where) as error:
        load_finetune_config("classification", config_file, overrides)
    assert "use the task's own config, 'generic'" in str(error.value)
    assert load_finetune_config("squad_v1", "squad", overrides).squad.n_best_size in (5, 20)


def test_a_tasks_own_section_is_declared_beside_the_task_and_read_as_a_field():
    # Issue 81 item 3: the `squad` section's dataclass lives with the SQuAD
    # task (`squad_config.py`, named in its registry line), not in the
    # central recipe, yet reads, checks and writes as before.
    import dataclasses

    from keras_bert.finetuning.config import FinetuneConfig
    from keras_bert.finetuning.squad_config import SquadConfig

    assert "squad" not in {field.name for field in dataclasses.fields(FinetuneConfig)}
    config = load_finetune_config("squad_v1", overrides=["squad.max_answer_length=12"])
    assert isinstance(config.squad, SquadConfig) and config.squad.max_answer_length == 12
    # Where a run's `config.yaml` has always written it.
    assert list(config.to_dict()) == [
        "task", "data", "optimizer", "training", "checkpoint", "squad", "export"
    ]  # fmt: skip
    assert config.to_dict()["squad"]["max_answer_length"] == 12
    with pytest.raises(ConfigError, match=r"squad.n_best_size must be >= 1. Received: .*=0"):
        load_finetune_config("squad_v1", overrides=["squad.n_best_size=0"])
    with pytest.raises(ConfigError, match=r"squad.null_score_diff_threshold must be a finite"):
        load_finetune_config("squad_v1", overrides=["squad.null_score_diff_threshold=.inf"])
    with pytest.raises(ConfigError, match=r"unknown config key 'squad.n_best'"):
        load_finetune_config("squad_v1", overrides=["squad.n_best=3"])
