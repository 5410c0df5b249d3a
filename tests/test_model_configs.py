import pytest

from keras_bert import BertBackbone
from keras_bert.model_configs import (
    ALIASES,
    available_model_configs,
    load_model_config,
)

pytestmark = pytest.mark.backend_independent


def test_turc_grid_and_paper_sizes_are_shipped():
    names = set(available_model_configs())
    for layers in (2, 4, 6, 8, 10, 12):
        for hidden in (128, 256, 512, 768):
            config = load_model_config(f"bert_L{layers}_H{hidden}")
            assert config["num_layers"] == layers
            assert config["hidden_dim"] == hidden
            assert config["num_heads"] == hidden // 64
            assert config["intermediate_dim"] == 4 * hidden
    assert {
        "bert_tiny",
        "bert_mini",
        "bert_small",
        "bert_medium",
        "bert_base",
        "bert_large",
    } <= names
    large = load_model_config("bert_large")
    assert (large["num_layers"], large["hidden_dim"], large["num_heads"]) == (24, 1024, 16)


def test_short_names_are_the_grid_sizes():
    assert load_model_config("bert_tiny") == load_model_config("bert_L2_H128")
    assert ALIASES["bert_L8_H512"] == "bert_medium"


def test_configs_build_backbones():
    config = load_model_config("bert_tiny")
    backbone = BertBackbone(**{**config, "vocabulary_size": 100})
    assert backbone.num_layers == 2 and backbone.hidden_dim == 128


def test_unknown_config_lists_the_shipped_ones():
    with pytest.raises(ValueError, match="Unknown model config 'bert_huge'.*bert_tiny"):
        load_model_config("bert_huge")


def test_unknown_key_in_yaml_is_an_error(tmp_path):
    path = tmp_path / "custom.yaml"
    path.write_text("num_layers: 2\nhiden_dim: 128\n")
    with pytest.raises(ValueError, match=r"unknown BertBackbone argument\(s\) \['hiden_dim'\]"):
        load_model_config(path)
