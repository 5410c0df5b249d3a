import re

import pytest

from keras_bert import BertBackbone
from keras_bert.errors import ConfigError
from keras_bert.model_configs import (
    ALIASES,
    available_model_configs,
    load_model_config,
    read_model_config,
)
from keras_bert.model_sizes import SIZE_LIMITS, check_model_sizes

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
    # A `ConfigError`: the commands print it on one line (exit 2).
    with pytest.raises(ConfigError, match="Unknown model config 'bert_huge'.*bert_tiny"):
        load_model_config("bert_huge")


def test_unknown_key_in_yaml_is_an_error(tmp_path):
    path = tmp_path / "custom.yaml"
    path.write_text("num_layers: 2\nhiden_dim: 128\n")
    with pytest.raises(ConfigError, match=r"unknown BertBackbone argument\(s\) \['hiden_dim'\]"):
        load_model_config(path)


# Issue 67 item 9: `model_overrides.hidden_dim=100000000000` ended in an
# out-of-memory error; every size is bounded wherever a model config is formed.
@pytest.mark.parametrize("key", sorted(SIZE_LIMITS))
@pytest.mark.parametrize("bad", ["limit+1", 0, "12", True, 12.0])
def test_every_size_is_an_integer_within_its_bound(key, bad):
    value = SIZE_LIMITS[key] + 1 if bad == "limit+1" else bad
    message = rf"`{key}` must be an integer in \[1, {SIZE_LIMITS[key]:,}\]. Received: {key}="
    with pytest.raises(ValueError, match=f"^where: {message}{re.escape(repr(value))}$"):
        check_model_sizes({**load_model_config("bert_tiny"), key: value}, where="where: ")


def test_sizes_within_their_bounds_that_make_too_many_parameters_are_refused():
    sizes = {**load_model_config("bert_tiny"), "num_layers": 1024, "hidden_dim": 4096}
    with pytest.raises(ValueError, match="sizes must make at most 10,000,000,000 parameters"):
        check_model_sizes(sizes)
    check_model_sizes(load_model_config("bert_large"))  # The largest shipped.


def test_a_model_file_out_of_bounds_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text("num_layers: 2\nhidden_dim: 100000000000\n")
    with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: `hidden_dim` must be"):
        read_model_config(path)


def test_the_backbone_bounds_its_sizes_before_building():
    with pytest.raises(ValueError, match="Received: hidden_dim=100000000000$"):
        BertBackbone(**{**load_model_config("bert_tiny"), "hidden_dim": 100_000_000_000})


@pytest.mark.parametrize("text", ["a: [1,\n", "[1, 2]\n"])
def test_a_model_file_that_is_no_mapping_is_a_value_error_naming_it(text, tmp_path):
    # A model YAML that does not parse was a traceback in finetune's checks
    # before the backend probe (`random:bad.yaml`).
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: ") as error:
        read_model_config(str(path))
    assert "\n" not in str(error.value)
