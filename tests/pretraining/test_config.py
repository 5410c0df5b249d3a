import glob
import math
import os

import pytest
import yaml

from keras_bert.pretraining import ConfigError, load_pretraining_config
from keras_bert.pretraining.config import CONFIG_DIR, parse_override

pytestmark = pytest.mark.backend_independent


@pytest.mark.parametrize("name, steps", [("default", [1800, 1200]), ("budget", [4800, 3200])])
def test_short_sequences_first_recipes(name, steps):
    config = load_pretraining_config(name)
    assert [p.seq_len for p in config.phases] == [32, 128]
    # Slots for what each phase's rate masks: 5 and 20 at 15%, 8 at 25%.
    assert [p.max_predictions for p in config.phases] == [
        math.ceil(p.training_mask_rate(config.data) * p.seq_len) for p in config.phases
    ]
    # The same tokens per update in both phases.
    assert [p.batch_size * p.seq_len for p in config.phases] == [4096, 4096]
    assert config.phase_steps() == steps and sum(steps) == config.train_steps
    assert config.model_overrides == {"dropout": 0.0}
    assert config.data.next_sentence_rate == 0.0
    assert config.fill_mask_probes


@pytest.mark.parametrize("name", ["bert_base", "bert_large"])
def test_paper_recipes(name):
    config = load_pretraining_config(name)
    assert config.train_steps == 1_000_000
    assert config.optimizer.learning_rate == 1e-4
    assert config.optimizer.warmup_steps == 10_000
    assert config.optimizer.weight_decay == 0.01
    assert (config.optimizer.beta_1, config.optimizer.beta_2) == (0.9, 0.999)
    assert config.optimizer.epsilon == 1e-6
    assert config.data.next_sentence_rate == 0.5 and not config.model_overrides
    assert config.optimizer.global_clipnorm == 1.0
    # The original optimizer and schedule (google-research/bert optimization.py).
    assert config.optimizer.name == "adam_weight_decay"
    assert config.optimizer.decay_start == "step_0"
    assert all(p.batch_size == 256 for p in config.phases)
    assert config.phase_steps() == [900_000, 100_000]


def test_overrides_nested_and_list():
    config = load_pretraining_config(
        "default",
        [
            "optimizer.learning_rate=3e-4",
            "phases.1.batch_size=4",
            "optimizer.name=lamb",
            "model_overrides.dropout=0.0",
            "data.eval_files=[a.txt, b.txt]",
        ],
    )
    assert config.optimizer.learning_rate == 3e-4
    assert config.phases[1].batch_size == 4
    assert config.optimizer.name == "lamb"
    assert config.model_overrides == {"dropout": 0.0}
    assert config.data.eval_files == ["a.txt", "b.txt"]


@pytest.mark.parametrize(
    "override, message",
    [
        ("optimizer.learnig_rate=1", "Unknown config key 'optimizer.learnig_rate'"),
        ("nope=1", "Unknown config key 'nope'"),
        ("phases.5.batch_size=1", "phases has 2 entries"),
        ("strategy=gpus", "`strategy` must be one of"),
        ("precision=fp8", "`precision` must be one of"),
        ("train_steps=ten", "`train_steps` must be of type int"),
        ("phases.0.max_predictions=999", "max_predictions=999"),
        ("optimizer.warmup_steps=-1", "warmup_steps=-1"),
        (
            "optimizer.name=adam",
            "`optimizer.name` must be one of .*Received: optimizer.name='adam'",
        ),
        (
            "optimizer.decay_start=original",
            "`optimizer.decay_start` must be one of .*Received: optimizer.decay_start='original'",
        ),
        ("novalue", "key=value"),
        (
            "objective=mlm",
            "`objective` must be one of masked_lm, electra. Received: objective='mlm'",
        ),
        ("electra.generator_size=1.5", "electra.generator_size.*in \\(0, 1\\]"),
        ("electra.discriminator_weight=0", "electra.discriminator_weight.*> 0"),
        ("electra.sampling_temperature=-1", "electra.sampling_temperature.*> 0"),
    ],
)
def test_bad_overrides_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")) as error:
        load_pretraining_config("default", [override])
    assert "\n" not in str(error.value)


def test_unknown_key_in_yaml(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"optimizer": {"lr": 1.0}}))
    with pytest.raises(ConfigError, match=r"optimizer\.lr"):
        load_pretraining_config(str(path))


def test_unknown_config_name():
    with pytest.raises(ConfigError, match=r"a YAML path, or one of: .*bert_base"):
        load_pretraining_config("bert_huge")


def test_exactly_one_of_steps_and_fraction():
    with pytest.raises(ConfigError, match="exactly one of `steps` and `fraction`"):
        load_pretraining_config("default", ["phases.1.steps=5"])


def test_fixed_and_fraction_phases():
    config = load_pretraining_config(
        "default",
        [
            "train_steps=100",
            "optimizer.warmup_steps=10",
            "phases.0.steps=30",
            "phases.0.fraction=null",
            "phases.1.fraction=1.0",
        ],
    )
    assert config.phase_steps() == [30, 70]


@pytest.mark.parametrize("fractions", [(0.6, 1.5), (0.9, 0.2), (0.0, 1.0)])
def test_phase_fractions_must_share_the_steps(fractions):
    overrides = [f"phases.{i}.fraction={f}" for i, f in enumerate(fractions)]
    with pytest.raises(ConfigError) as error:
        load_pretraining_config("budget", overrides)
    assert str(error.value) == (
        "The phases' `fraction`s share what `steps` phases leave of "
        "train_steps: each in (0, 1], summing to 1. Received: "
        f"fractions={list(fractions)}"
    )


@pytest.mark.parametrize("fraction", [0.0, 1.0])
def test_holdout_fraction_must_leave_both_sides(fraction):
    with pytest.raises(ConfigError) as error:
        load_pretraining_config("default", [f"data.holdout_fraction={fraction}"])
    assert str(error.value) == (
        "`data.holdout_fraction` (the share of train_files held out for "
        "evaluation when data.eval_files is not given) must be in (0, 1). "
        f"Received: data.holdout_fraction={fraction}"
    )


def test_parse_override_reads_yaml_values():
    assert parse_override("a.b=1e-4") == ("a.b", "1e-4")  # YAML 1.1 quirk
    assert parse_override("a=true") == ("a", True)
    assert parse_override("a=null") == ("a", None)


def test_packing_documents_needs_the_next_sentence_task_off():
    assert load_pretraining_config("default", ["data.pack_documents=true"]).data.pack_documents
    with pytest.raises(ConfigError, match=r"next_sentence_rate=0\.5"):
        load_pretraining_config(
            "default", ["data.pack_documents=true", "data.next_sentence_rate=0.5"]
        )


def test_electra_has_no_next_sentence_task():
    config = load_pretraining_config("default", ["objective=electra"])
    electra = config.electra
    assert (electra.generator_size, electra.discriminator_weight, electra.sampling_temperature) == (
        0.25,
        50.0,
        2.0,
    )
    with pytest.raises(ConfigError, match=r"objective=electra .*next_sentence_rate=0\.5"):
        load_pretraining_config("default", ["objective=electra", "data.next_sentence_rate=0.5"])


def test_every_recipe_trains_the_masked_lm_unless_told():
    for path in CONFIG_DIR.glob("*.yaml"):
        assert load_pretraining_config(path.stem).objective == "masked_lm", path.name


def test_own_text_recipe_packs_short_documents():
    config = load_pretraining_config("own_text")
    assert config.data.corpus_format == "lines"
    assert config.data.pack_documents and config.data.next_sentence_rate == 0.0


def test_bundled_data_is_found_from_another_directory(monkeypatch, tmp_path):
    from keras_bert.paths import ROOT

    monkeypatch.chdir(ROOT)  # Run from the checkout: recorded as written.
    in_checkout = load_pretraining_config("default")
    assert in_checkout.data.train_files == "data/corpus/*/*.txt"
    monkeypatch.chdir(tmp_path)
    config = load_pretraining_config("default")
    assert glob.glob(config.data.train_files)
    assert os.path.isfile(config.data.vocab_file)
    # A user's own relative path stays relative to the working directory.
    own = load_pretraining_config("default", ["data.train_files=data/mine/*.txt"])
    assert own.data.train_files == "data/mine/*.txt"


def test_rerun_from_another_directory_is_the_same_config(monkeypatch, tmp_path):
    from keras_bert.paths import ROOT
    from keras_bert.pretraining.recorded_config import check_rerun_config
    from keras_bert.runs.run_record import write_run_config

    monkeypatch.chdir(ROOT)
    write_run_config(str(tmp_path / "config.yaml"), load_pretraining_config("default").to_dict())
    monkeypatch.chdir(tmp_path)
    config = load_pretraining_config("default")
    assert check_rerun_config(config, str(tmp_path / "config.yaml")) is False
    write_run_config(str(tmp_path / "elsewhere.yaml"), config.to_dict())  # Absolute paths.
    monkeypatch.chdir(ROOT)
    config = load_pretraining_config("default")
    assert check_rerun_config(config, str(tmp_path / "elsewhere.yaml")) is False
    with pytest.raises(ConfigError, match="data.vocab_file"):
        check_rerun_config(
            load_pretraining_config("default", ["data.vocab_file=other.txt"]),
            str(tmp_path / "config.yaml"),
        )


# Issue 67 item 9: each way a pre-training recipe forms its model is bounded
# when the config is read, before the backend is chosen.
@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ["model_overrides.hidden_dim=100000000000"],
            "model_overrides: `hidden_dim` must be an integer in [1, 65,536]. "
            "Received: hidden_dim=100000000000",
        ),
        (
            ["model_overrides={num_layers: 1024, hidden_dim: 4096, intermediate_dim: 16384}"],
            "model_overrides: BertBackbone sizes must make at most 10,000,000,000 parameters. ",
        ),
        (["model=HUGE"], "HUGE: `num_layers` must be an integer in [1, 1,024]. "),
    ],
    ids=["model_overrides", "parameters", "model file"],
)
def test_a_model_out_of_bounds_is_a_config_error(overrides, message, tmp_path):
    huge = tmp_path / "huge.yaml"
    huge.write_text("num_layers: 100000\n")
    with pytest.raises(ConfigError) as error:
        load_pretraining_config("default", [o.replace("HUGE", str(huge)) for o in overrides])
    assert str(error.value).startswith(message.replace("HUGE", str(huge))), error.value
