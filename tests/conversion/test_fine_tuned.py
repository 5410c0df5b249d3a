"""Fine-tuned models between keras_bert runs and transformers folders, without
transformers: round trips, the run folder the commands take, refusals.

Parity with transformers itself: `test_fine_tuned_transformers.py`.
"""

import json
import os

import keras
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from keras_bert.conversion import CheckpointError
from keras_bert.conversion.bert_name_map import original_to_hf_name
from keras_bert.convert import convert, main
from keras_bert.finetuning.config import load_saved_config
from tests.conversion.tiny_bert import (
    TINY,
    VOCAB,
    bert_config_json,
    original_shapes,
    random_weights,
)

# A fine-tuning session run's task, and the task it comes back as (the
# head's default, or `--task`).
ROUND_TRIPS = {
    "classification": None,
    "sst2": "sst2",
    "stsb": "stsb",
    "conll2003": None,
    "squad_v1": "squad_v1",
    "swag": None,
}


def write_fine_tuned_folder(
    folder, architecture, rows, config=None, layer="classifier", pooler=True, vocab=VOCAB
):
    """A transformers folder of a fine-tuned `architecture`, written as
    `save_pretrained` lays it out: `bert.` names, the head's `<layer>.weight`
    (rows, H) and `<layer>.bias`, `config.json` naming the class."""
    os.makedirs(folder, exist_ok=True)
    weights = random_weights(original_shapes(heads=False, pooler=pooler))
    tensors = {}
    for name, value in weights.items():
        hf_name, transpose = original_to_hf_name(name, "bert.")
        tensors[hf_name] = np.ascontiguousarray(value.T if transpose else value)
    rng = np.random.default_rng(1)
    tensors[f"{layer}.weight"] = rng.normal(size=(rows, TINY["hidden_dim"])).astype("float32")
    tensors[f"{layer}.bias"] = rng.normal(size=(rows,)).astype("float32")
    save_file(tensors, os.path.join(folder, "model.safetensors"), {"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(
            dict(
                bert_config_json(),
                model_type="bert",
                architectures=[architecture],
                **(config or {}),
            ),
            f,
        )
    if vocab:
        with open(os.path.join(folder, "vocab.txt"), "w") as f:
            f.write("".join(t + "\n" for t in vocab))
    return tensors


def classifier_folder(folder, labels=("neg", "pos"), **config):
    return write_fine_tuned_folder(
        folder,
        "BertForSequenceClassification",
        len(labels),
        dict(id2label={str(i): n for i, n in enumerate(labels)}, **config),
    )


# === Round trips ===


@pytest.mark.parametrize("task", ROUND_TRIPS)
def test_a_run_goes_to_transformers_and_back_unchanged(fine_tuned, tmp_path, task):
    run, _ = fine_tuned(task)
    convert(run, tmp_path / "hf")
    convert(tmp_path / "hf", tmp_path / "back", task=ROUND_TRIPS[task])

    before = keras.saving.load_model(run / "model.keras")
    after = keras.saving.load_model(tmp_path / "back" / "model.keras")
    assert type(after) is type(before)
    assert getattr(after, "label_names", None) == getattr(before, "label_names", None)
    assert after.backbone.vocabulary == before.backbone.vocabulary
    # The token and span heads' classes have no pooler: it comes back new.
    unused = (
        {id(v) for v in before.backbone.pooler_dense.weights}
        if type(before).__name__ in ("BertTokenClassifier", "BertSpanLabeler")
        else set()
    )
    for old, new in zip(before.weights, after.weights):
        if id(old) not in unused:
            np.testing.assert_array_equal(
                keras.ops.convert_to_numpy(old), keras.ops.convert_to_numpy(new), err_msg=old.path
            )
    task_back, config = load_saved_config(tmp_path / "back")
    _, original = load_saved_config(run)
    assert task_back == (ROUND_TRIPS[task] or task)
    assert config.data.max_seq_length == original.data.max_seq_length
    assert config.data.lower_case is True  # The fixture vocabulary is uncased.
    assert sorted(os.listdir(tmp_path / "back")) == [
        "config.yaml",
        "model.keras",
        "outputs.json",
        "vocab.txt",
    ]


def test_the_pooler_of_a_token_or_span_head_is_dropped_and_reported(fine_tuned, tmp_path):
    run, _ = fine_tuned("conll2003")
    report = convert(run, tmp_path / "hf")
    names = load_file(tmp_path / "hf" / "model.safetensors")
    assert not any(n.startswith("bert.pooler") for n in names)
    assert "classifier.weight" in names
    assert "parts:   pooler dropped" in report
    assert any("pooler dropped: BertForTokenClassification has none" in line for line in report)


@pytest.mark.backend_independent
def test_a_converted_run_is_taken_by_evaluate_export_and_distill(fixtures, tmp_path):
    from keras_bert.distillation.teacher import Teacher
    from keras_bert.evaluate import main as evaluate
    from keras_bert.export import main as export

    classifier_folder(tmp_path / "hf", labels=("neg", "pos"))
    convert(tmp_path / "hf", tmp_path / "run")
    run = tmp_path / "run"

    assert (
        evaluate(["--model_dir", str(run), "--input", str(fixtures / "generic" / "dev.csv")]) == 0
    )
    assert export(["--model_dir", str(run), "--output", str(tmp_path / "serving")]) == 0
    assert os.listdir(tmp_path / "serving") == ["1"]
    teacher = Teacher(str(run))
    assert (teacher.task, teacher.label_names, teacher.num_outputs) == (
        "classification",
        ["neg", "pos"],
        2,
    )


# === The report ===


@pytest.mark.backend_independent
def test_a_transformers_classifier_becomes_a_classification_run(tmp_path, capsys):
    classifier_folder(tmp_path / "hf", labels=("bad", "good", "fine"))
    (tmp_path / "hf" / "tokenizer_config.json").write_text('{"do_lower_case": false}')

    assert main([str(tmp_path / "hf"), str(tmp_path / "run")]) == 0

    report = capsys.readouterr().out
    assert "weights: 41 tensors checked and loaded" in report
    assert "head: classifier.bias, classifier.weight checked and loaded" in report
    assert "task:    classification (the default for a BertForSequenceClassification" in report
    assert "labels:  ['bad', 'good', 'fine'] (id2label)" in report
    assert "tokenizer: cased (tokenizer_config.json); data.max_seq_length 16" in report
    task, config = load_saved_config(tmp_path / "run")
    assert (task, config.data.lower_case, config.data.max_seq_length) == (
        "classification",
        False,
        16,
    )
    assert keras.saving.load_model(tmp_path / "run" / "model.keras").label_names == [
        "bad",
        "good",
        "fine",
    ]


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "config, task, head",
    [
        ({"problem_type": "regression", "id2label": {"0": "LABEL_0"}}, None, "BertRegressor"),
        ({"num_labels": 1}, "stsb", "BertRegressor"),
        ({"id2label": {"0": "negative", "1": "positive"}}, "sst2", "BertClassifier"),
    ],
)
def test_the_head_and_task_follow_num_labels_and_problem_type(tmp_path, config, task, head):
    rows = len(config.get("id2label", {})) or config.get("num_labels")
    write_fine_tuned_folder(tmp_path / "hf", "BertForSequenceClassification", rows, config)
    report = convert(tmp_path / "hf", tmp_path / "run", task=task)
    assert type(keras.saving.load_model(tmp_path / "run" / "model.keras")).__name__ == head
    if task == "sst2":
        assert "labels:  id2label ['negative', 'positive'] read as sst2's classes" in "\n".join(
            report
        )


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "id2label, rows",
    [
        # By name: `datasets`' MNLI order, the model's class j from row rows[j].
        (["entailment", "neutral", "contradiction"], [2, 0, 1]),
        (["CONTRADICTION", "NEUTRAL", "ENTAILMENT"], [0, 2, 1]),
        # Unnamed: by id, in `datasets`' order (transformers' GLUE models').
        (["LABEL_0", "LABEL_1", "LABEL_2"], [2, 0, 1]),
    ],
)
def test_a_glue_tasks_classes_are_read_by_name_or_in_datasets_order(tmp_path, id2label, rows):
    tensors = classifier_folder(tmp_path / "hf", labels=id2label)
    report = convert(tmp_path / "hf", tmp_path / "run", task="mnli")
    model = keras.saving.load_model(tmp_path / "run" / "model.keras")
    assert model.label_names == ["contradiction", "entailment", "neutral"]
    kernel = keras.ops.convert_to_numpy(model.output_dense.kernel)
    np.testing.assert_array_equal(kernel, tensors["classifier.weight"][rows].T)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(model.output_dense.bias), tensors["classifier.bias"][rows]
    )
    assert "rows reordered to ['contradiction', 'entailment', 'neutral']" in "\n".join(report)


@pytest.mark.backend_independent
def test_the_vocabulary_comes_from_tokenizer_json_without_vocab_txt(tmp_path):
    classifier_folder(tmp_path / "hf")
    os.remove(tmp_path / "hf" / "vocab.txt")
    tokenizer = {
        "normalizer": {"type": "BertNormalizer", "lowercase": True},
        "model": {"type": "WordPiece", "vocab": {t: i for i, t in enumerate(VOCAB)}},
    }
    (tmp_path / "hf" / "tokenizer.json").write_text(json.dumps(tokenizer))
    report = convert(tmp_path / "hf", tmp_path / "run")
    assert f"vocab: 40 tokens from {tmp_path / 'hf' / 'tokenizer.json'}" in report
    assert (tmp_path / "run" / "vocab.txt").read_text().splitlines() == VOCAB
    assert load_saved_config(tmp_path / "run")[1].data.lower_case is True


# === Refusals: one line, nothing written ===


def _refused(tmp_path, capsys, argv, message):
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "architecture, rows, config, flags, message",
    [
        (
            "BertForSequenceClassification",
            2,
            {"problem_type": "multi_label_classification"},
            [],
            "keras_bert has no multi-label head",
        ),
        (
            "BertForSequenceClassification",
            2,
            {"problem_type": "regression", "id2label": {"0": "a", "1": "b"}},
            [],
            "keras_bert's BertRegressor predicts one score",
        ),
        (
            "BertForQuestionAnswering",
            2,
            {},
            [],
            "a BertForQuestionAnswering serves the tasks squad_v1, squad_v2; pass --task",
        ),
        (
            "BertForSequenceClassification",
            2,
            {},
            ["--task", "conll2003"],
            "--task conll2003: fine-tunes a BertTokenClassifier, but",
        ),
        (
            "BertForSequenceClassification",
            2,
            {},
            ["--task", "mnli"],
            "--task mnli: has the classes ['contradiction', 'entailment', 'neutral'], but",
        ),
        (
            "BertForSequenceClassification",
            2,
            {"id2label": {"0": "yes", "1": "no"}},
            ["--task", "qnli"],
            "classifies into ['yes', 'no'] (id2label); name a generic task",
        ),
        (
            "BertForSequenceClassification",
            3,
            {},
            [],
            "2 mis-shaped (checkpoint vs model): classifier.bias (3,) vs (2,), "
            "classifier.weight (3, 8) vs (2, 8)",
        ),
        (
            "BertForSequenceClassification",
            2,
            {"id2label": {"0": "a", "2": "b"}},
            [],
            "`id2label` must map the ids 0..n-1 to names",
        ),
        # Issue 82 item 5: names that break predict's lines, or are no text.
        (
            "BertForTokenClassification",
            2,
            {"id2label": {"0": "B LOC", "1": "O"}},
            [],
            "`id2label` names must be free of white space and control characters "
            "(predict writes `word label` lines). Received: id 0 named 'B LOC'",
        ),
        (
            "BertForTokenClassification",
            2,
            {"id2label": {"0": "O", "1": "B-PER\nX"}},
            [],
            "Received: id 1 named 'B-PER\\nX'",
        ),
        (
            "BertForSequenceClassification",
            2,
            {"id2label": {"0": "good", "1": "bad\r\nworse"}},
            [],
            "`id2label` names must be free of control characters and line breaks. "
            "Received: id 1 named 'bad\\r\\nworse'",
        ),
        (
            "BertForSequenceClassification",
            2,
            {"id2label": {"0": 0, "1": 1}},
            [],
            "`id2label` names must be non-empty text. Received: id 0 named 0",
        ),
        ("BertForMultipleChoice", 1, {}, ["--with_heads"], "--with_heads: a fine-tuned"),
    ],
)
def test_a_head_keras_bert_cannot_hold_is_one_line(
    tmp_path, capsys, architecture, rows, config, flags, message
):
    layer = "qa_outputs" if architecture == "BertForQuestionAnswering" else "classifier"
    write_fine_tuned_folder(tmp_path / "hf", architecture, rows, config, layer)
    _refused(tmp_path, capsys, [str(tmp_path / "hf"), str(tmp_path / "run"), *flags], message)


@pytest.mark.backend_independent
def test_an_unknown_task_is_refused_by_the_command_and_by_convert(tmp_path, capsys):
    classifier_folder(tmp_path / "hf")
    with pytest.raises(SystemExit) as exit_:
        main([str(tmp_path / "hf"), str(tmp_path / "run"), "--task", "nope"])
    assert exit_.value.code == 2
    assert "argument --task: invalid choice: 'nope'" in capsys.readouterr().err
    with pytest.raises(CheckpointError, match="--task nope: not a fine-tuning task"):
        convert(str(tmp_path / "hf"), str(tmp_path / "run"), task="nope")
    assert not (tmp_path / "run").exists()


@pytest.mark.backend_independent
def test_a_missing_head_tensor_is_named(tmp_path, capsys):
    tensors = classifier_folder(tmp_path / "hf")
    del tensors["classifier.bias"]
    save_file(tensors, tmp_path / "hf" / "model.safetensors")
    _refused(
        tmp_path,
        capsys,
        [str(tmp_path / "hf"), str(tmp_path / "run")],
        "1 missing: classifier.bias",
    )


@pytest.mark.backend_independent
def test_a_folder_without_a_vocabulary_is_one_line(tmp_path, capsys):
    classifier_folder(tmp_path / "hf")
    os.remove(tmp_path / "hf" / "vocab.txt")
    _refused(
        tmp_path,
        capsys,
        [str(tmp_path / "hf"), str(tmp_path / "run")],
        "no vocab.txt or WordPiece tokenizer.json; a fine-tuning run needs its vocabulary: "
        "pass --vocab vocab.txt",
    )


@pytest.mark.backend_independent
def test_options_a_fine_tuned_source_does_not_take_are_one_line(tmp_path, capsys):
    classifier_folder(tmp_path / "hf")
    hf, run = str(tmp_path / "hf"), str(tmp_path / "run")
    _refused(
        tmp_path,
        capsys,
        [hf, str(tmp_path / "m.keras")],
        "converts to a keras_bert fine-tuning run folder",
    )
    convert(hf, run)
    capsys.readouterr()
    for flags, message in [
        (["--vocab", str(tmp_path / "run" / "vocab.txt")], "--vocab: "),
        (["--task", "sst2"], "--task: "),
        (["--hidden_activation", "gelu"], "--hidden_activation: "),
    ]:
        _refused(tmp_path, capsys, [run, str(tmp_path / "out"), *flags], message)
    _refused(
        tmp_path, capsys, [run, str(tmp_path / "m.keras")], "converts to a transformers folder"
    )
    _refused(
        tmp_path,
        capsys,
        [run + "/model.keras", str(tmp_path / "out")],
        "holds a keras_bert BertClassifier; convert the fine-tuning run folder",
    )
    _refused(
        tmp_path,
        capsys,
        [hf, str(tmp_path / "m.keras"), "--without_heads"],
        "--without_heads: a fine-tuned transformers folder has a task head",
    )


@pytest.mark.backend_independent
def test_task_names_a_fine_tuned_sources_task_only(tmp_path, capsys):
    write_fine_tuned_folder(tmp_path / "hf", "BertModel", 2, pooler=True)
    _refused(
        tmp_path,
        capsys,
        [str(tmp_path / "hf"), str(tmp_path / "out"), "--task", "sst2"],
        "--task sst2: names the task of a fine-tuned transformers folder",
    )


@pytest.mark.backend_independent
def test_the_checkpoint_converter_leaves_fine_tuned_models_to_the_run_layer(tmp_path):
    # Issue 81 item 1: the format layer knows no fine-tuning run; a
    # fine-tuned folder given to it is refused with where it converts.
    from keras_bert.conversion import convert as convert_checkpoint

    classifier_folder(tmp_path / "hf")
    with pytest.raises(CheckpointError, match="a fine-tuned BertForSequenceClassification"):
        convert_checkpoint(tmp_path / "hf", tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.backend_independent
def test_a_run_whose_backbone_the_format_cannot_hold_is_refused(tmp_path, capsys):
    from keras_bert import BertBackbone, BertClassifier

    classifier_folder(tmp_path / "hf")
    convert(tmp_path / "hf", tmp_path / "run")
    backbone = BertBackbone(**TINY, normalize_first=True)
    backbone.vocabulary = VOCAB
    BertClassifier(backbone, num_classes=2, label_names=["neg", "pos"]).save(
        tmp_path / "run" / "model.keras"
    )
    _refused(
        tmp_path,
        capsys,
        [str(tmp_path / "run"), str(tmp_path / "hf2")],
        "a BertBackbone with pre-LayerNorm blocks (normalize_first=True)",
    )


@pytest.mark.backend_independent
def test_overwrite_replaces_a_converted_run_and_nothing_else(tmp_path, capsys):
    classifier_folder(tmp_path / "hf", labels=("a", "b"))
    hf, run = str(tmp_path / "hf"), str(tmp_path / "run")
    convert(hf, run)
    _refused(tmp_path, capsys, [hf, run], "already exists; pass --overwrite")
    classifier_folder(tmp_path / "hf", labels=("c", "d"))
    assert main([hf, run, "--overwrite"]) == 0
    assert keras.saving.load_model(tmp_path / "run" / "model.keras").label_names == ["c", "d"]
    (tmp_path / "run" / "predictions_mine.jsonl").write_text("{}\n")
    capsys.readouterr()
    _refused(
        tmp_path,
        capsys,
        [hf, run, "--overwrite"],
        "--overwrite replaces only a folder holding config.yaml, model.keras, vocab.txt, "
        "outputs.json; it also holds predictions_mine.jsonl.",
    )
