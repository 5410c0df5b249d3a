"""Fine-tuned heads against transformers itself: the logits of a converted
model match the other side's on the same token ids (float32, max |delta|
<= 1e-4, on every Keras backend), and transformers' `pipeline` labels
sentences as `python -m keras_bert.predict` does, in both directions.

Needs transformers (requirements-dev.txt's optional extra); skipped without.
"""

import json
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_bert.convert import convert

transformers = pytest.importorskip(
    "transformers", reason="parity with transformers needs it (requirements-dev.txt)"
)
torch = pytest.importorskip("torch", reason="transformers' BERT runs on torch")

TOLERANCE = 1e-4
# The fine-tuning session run of each head (tests/finetuning/conftest.py)
# and the transformers class its conversion loads as.
HEADS = {
    "classification": "AutoModelForSequenceClassification",
    "stsb": "AutoModelForSequenceClassification",
    "conll2003": "AutoModelForTokenClassification",
    "squad_v1": "AutoModelForQuestionAnswering",
    "swag": "AutoModelForMultipleChoice",
}
# Sentences of the fixture vocabulary, some words outside it ([UNK]), for
# the pipeline and `predict`.
SENTENCES = [
    "a great , moving film",
    "a dull mess",
    "the best movie",
    "The worst movie ( and a boring story ) .",
    "john smith played a game in paris",
    "who won the cup ? the team",
    "an unheard-of word",
]


def token_batch(choices=None, length=9):
    """Two sequences of fixture-vocabulary ids, the second padded, each
    `[CLS] A [SEP] B [SEP]`; with `choices`, each example repeated per
    choice with its own second segment: (2, choices, length)."""
    rng = np.random.default_rng(7)
    shape = (2, choices or 1, length)
    ids = rng.integers(5, 174, size=shape)
    ids[..., 0], ids[..., 4], ids[..., -1] = 2, 3, 3
    segments = np.zeros(shape, "int64")
    segments[..., 5:] = 1
    mask = np.ones(shape, "int64")
    ids[1, :, 6:], mask[1, :, 6:], segments[1, :, 6:] = 0, 0, 0
    ids[1, :, 5] = 3
    if choices is None:
        ids, segments, mask = ids[:, 0], segments[:, 0], mask[:, 0]
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}


def keras_outputs(model, batch):
    """The keras model's outputs, start and end logits stacked last."""
    outputs = model({k: v.astype("int32") for k, v in batch.items()}, training=False)
    if isinstance(outputs, dict):
        outputs = keras.ops.stack([outputs["start_logits"], outputs["end_logits"]], axis=-1)
    return keras.ops.convert_to_numpy(outputs)


def transformers_outputs(model, batch):
    """The torch model's logits (eval mode, no gradients), start and end
    logits stacked last; a regression's (B, 1) as (B,)."""
    with torch.no_grad():
        out = model(
            input_ids=torch.from_numpy(batch["token_ids"]),
            token_type_ids=torch.from_numpy(batch["segment_ids"]),
            attention_mask=torch.from_numpy(batch["padding_mask"]),
        )
    if hasattr(out, "start_logits"):
        return torch.stack([out.start_logits, out.end_logits], -1).numpy()
    logits = out.logits.numpy()
    regression = type(model).__name__ == "BertForSequenceClassification" and logits.shape[1] == 1
    return logits[:, 0] if regression else logits


def load_transformers(auto_class, folder):
    """The folder's model, refusing any weight transformers would
    initialise, drop or reshape instead of loading."""
    model, info = getattr(transformers, auto_class).from_pretrained(
        folder, output_loading_info=True, attn_implementation="eager"
    )
    assert not any(info.values()), info
    return model.eval()


def predict_labels(run, sentences, tmp_path):
    """`python -m keras_bert.predict` as its own process on a CSV of
    `sentences`: each row's label and class probabilities."""
    table = tmp_path / "sentences.csv"
    table.write_text("text\n" + "".join(f'"{s}"\n' for s in sentences))
    output = tmp_path / "predicted.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "keras_bert.predict", "--model_dir", str(run)]
        + ["--input", str(table), "--output", str(output)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert [r["text_a"] for r in rows] == sentences
    return [r["prediction"] for r in rows], [r["probabilities"] for r in rows]


def pipeline_labels(folder, sentences):
    """transformers' text-classification pipeline on `folder`: each
    sentence's label and every class's score."""
    classify = transformers.pipeline("text-classification", model=str(folder), top_k=None)
    # Every token of the vocabulary, not transformers' five special ones.
    assert len(classify.tokenizer) == classify.model.config.vocab_size
    results = classify(sentences)
    labels = [max(r, key=lambda s: s["score"])["label"] for r in results]
    return labels, [{s["label"]: s["score"] for s in r} for r in results]


def transformers_model(head_class, folder, vocab, initializer_range=0.2, **config):
    """A random transformers model of `head_class` (weights wide enough
    that the sentences get different labels), 2 layers, 16 wide, with the
    tokenizer of `vocab`, written by `save_pretrained`."""
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=174,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        initializer_range=initializer_range,
        **config,
    )
    model = getattr(transformers, head_class)(config).eval()
    model.save_pretrained(folder)
    transformers.BertTokenizer(str(vocab)).save_pretrained(folder)
    return model


# === A keras_bert run -> transformers ===


# The conversion reads saved weights, the same on every backend: each head
# once (under TensorFlow), and the classifier's as trained by each backend.
@pytest.mark.parametrize(
    "task",
    [
        task
        if task == "classification"
        else pytest.param(task, marks=pytest.mark.backend_independent)
        for task in HEADS
    ],
)
def test_a_fine_tuned_run_converts_to_transformers_with_the_same_logits(fine_tuned, tmp_path, task):
    run, _ = fine_tuned(task)
    convert(run, tmp_path / "hf")
    ours = keras.saving.load_model(run / "model.keras")
    theirs = load_transformers(HEADS[task], tmp_path / "hf")

    batch = token_batch(choices=4 if task == "swag" else None)
    expected, actual = keras_outputs(ours, batch), transformers_outputs(theirs, batch)
    assert expected.shape == actual.shape
    np.testing.assert_allclose(actual, expected, rtol=0, atol=TOLERANCE)

    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    label_names = getattr(ours, "label_names", None)
    if label_names:
        assert config["id2label"] == {str(i): n for i, n in enumerate(label_names)}
        assert theirs.config.label2id == {n: i for i, n in enumerate(label_names)}
    if task == "classification":
        assert config["problem_type"] == "single_label_classification"
    if task == "stsb":
        assert (config["problem_type"], config["num_labels"]) == ("regression", 1)


@pytest.mark.backend_independent  # Saved weights.
def test_transformers_pipeline_labels_a_converted_run_as_predict_does(fine_tuned, tmp_path):
    run, _ = fine_tuned("classification")
    convert(run, tmp_path / "hf")

    predicted, probabilities = predict_labels(run, SENTENCES, tmp_path)
    labels, scores = pipeline_labels(tmp_path / "hf", SENTENCES)

    assert labels == predicted
    for ours, theirs in zip(probabilities, scores):
        assert theirs == pytest.approx(ours, abs=TOLERANCE)


# === transformers -> a keras_bert run ===


@pytest.mark.parametrize(
    "head_class, task, config",
    [
        ("BertForSequenceClassification", None, {"num_labels": 3}),
        ("BertForSequenceClassification", "stsb", {"num_labels": 1}),
        ("BertForTokenClassification", None, {"num_labels": 4}),
        ("BertForQuestionAnswering", "squad_v2", {}),
        ("BertForMultipleChoice", None, {}),
    ],
)
def test_a_transformers_model_converts_to_a_run_with_the_same_logits(
    fixtures, tmp_path, head_class, task, config
):
    theirs = transformers_model(head_class, tmp_path / "hf", fixtures / "vocab.txt", **config)

    convert(tmp_path / "hf", tmp_path / "run", task=task)
    ours = keras.saving.load_model(tmp_path / "run" / "model.keras")

    batch = token_batch(choices=4 if head_class == "BertForMultipleChoice" else None)
    expected, actual = transformers_outputs(theirs, batch), keras_outputs(ours, batch)
    assert expected.shape == actual.shape
    np.testing.assert_allclose(actual, expected, rtol=0, atol=TOLERANCE)


@pytest.mark.backend_independent  # Saved weights.
def test_predict_labels_a_converted_transformers_model_as_its_pipeline_does(fixtures, tmp_path):
    labels = ["neg", "pos", "neutral"]
    transformers_model(
        "BertForSequenceClassification",
        tmp_path / "hf",
        fixtures / "vocab.txt",
        initializer_range=0.5,
        id2label=dict(enumerate(labels)),
        label2id={n: i for i, n in enumerate(labels)},
    )
    convert(tmp_path / "hf", tmp_path / "run")

    labels, scores = pipeline_labels(tmp_path / "hf", SENTENCES)
    predicted, probabilities = predict_labels(tmp_path / "run", SENTENCES, tmp_path)

    assert predicted == labels
    assert len(set(labels)) > 1  # The sentences tell the classes apart.
    for ours, theirs in zip(probabilities, scores):
        assert ours == pytest.approx(theirs, abs=TOLERANCE)
