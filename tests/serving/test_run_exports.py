"""A fine-tuning run's SavedModels (the one `finetune` writes, and the one
`python -m keras_bert.export --model_dir` writes) answer as its `predict`
does: tokenized with the run's recorded settings, not ones guessed again."""

import json

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertBackbone
from keras_bert.serving.serving_export import infer_lower_case
from tests.finetuning.conftest import FIXTURES, finetune

# What differs is the tokenizer's casing, which no backend changes; the
# export under each backend is tested by test_serving_export.py.
pytestmark = pytest.mark.backend_independent

SENTENCE = "THE CAT SAT ."


@pytest.mark.parametrize(
    "lower_case, extra_tokens",
    [
        (True, ["THE", "CAT", "SAT"]),  # A cased-looking vocabulary, lower-cased.
        (False, []),  # An uncased-looking one, kept cased.
    ],
)
def test_export_tokenizes_with_the_runs_lower_case(lower_case, extra_tokens, tmp_path, capsys):
    # Issue 82 item 6: the exports guessed the casing from the vocabulary.
    from keras_bert.export import main as export
    from keras_bert.predict import main as predict

    vocabulary = (FIXTURES / "vocab.txt").read_text().splitlines() + extra_tokens
    assert infer_lower_case(vocabulary) != lower_case
    backbone = BertBackbone(
        vocabulary_size=len(vocabulary),
        num_layers=1,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=32,
    )
    backbone.vocabulary = vocabulary
    backbone.save(tmp_path / "init.keras")
    run = tmp_path / "run"
    finetune(
        "sst2",
        FIXTURES / "glue",
        str(tmp_path / "init.keras"),
        run,
        f"data.lower_case={str(lower_case).lower()}",
        "data.max_seq_length=32",
        # Logits far enough from 0 that another tokenization shows.
        "optimizer.learning_rate=0.05",
        export=True,
    )
    test_file, predictions = tmp_path / "test.tsv", tmp_path / "predictions.jsonl"
    test_file.write_text(f"index\tsentence\n0\t{SENTENCE}\n")
    assert (
        predict(["--model_dir", str(run), "--input", str(test_file), "--output", str(predictions)])
        == 0
    )
    predicted = json.loads(predictions.read_text().splitlines()[0])["probabilities"]
    assert export(["--model_dir", str(run), "--output", str(tmp_path / "served")]) == 0

    for saved_model in (run / "export" / "1", tmp_path / "served" / "1"):
        serve = tf.saved_model.load(str(saved_model)).signatures["serve_text"]
        served = serve(text_a=tf.constant([SENTENCE]))
        names = [name.decode() for name in served["label_names"][0].numpy()]
        np.testing.assert_allclose(
            served["probabilities"][0].numpy(), [predicted[name] for name in names], atol=2e-6
        )

    other_casing = "--cased" if lower_case else "--lower_case"
    capsys.readouterr()
    assert export(["--model_dir", str(run), "--output", str(tmp_path / "other"), other_casing]) == 2
    error = capsys.readouterr().err
    assert f"{other_casing} contradicts the run in {run}" in error and error.count("\n") == 1


def test_a_pretraining_runs_backbone_exports_with_its_lower_case(tmp_path):
    from keras_bert.export import main as export

    vocabulary = (FIXTURES / "vocab.txt").read_text().splitlines()
    assert infer_lower_case(vocabulary)
    backbone = BertBackbone(
        vocabulary_size=len(vocabulary),
        num_layers=1,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=16,
    )
    backbone.vocabulary = vocabulary
    run = tmp_path / "run"
    run.mkdir()
    backbone.save(run / "backbone.keras")
    (run / "config.yaml").write_text("data:\n  lower_case: false\n")
    assert export(["--model_dir", str(run), "--output", str(tmp_path / "served")]) == 0

    serve = tf.saved_model.load(str(tmp_path / "served" / "1")).signatures["serve_text"]
    token_ids = serve(text_a=tf.constant(["The cat"]))["token_ids"][0].numpy()
    unk, cat = vocabulary.index("[UNK]"), vocabulary.index("cat")
    assert token_ids[1:3].tolist() == [unk, cat]
