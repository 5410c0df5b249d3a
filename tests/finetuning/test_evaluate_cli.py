"""`python -m keras_bert.evaluate`: a fine-tuned model scored on a labelled
file without training. Scoring the run's own dev file must give what the
fine-tuning run reported, for every task family."""

import json
import os
import re

import pytest

from keras_bert.evaluate import main as evaluate
from keras_bert.finetuning.inference import default_eval_dir

# Each family's dev file and the predictions file fine-tuning wrote for it.
DEV_FILES = [
    ("sst2", "glue/SST-2/dev.tsv", "predictions.jsonl"),
    ("stsb", "glue/STS-B/dev.tsv", "predictions.jsonl"),
    ("classification", "generic/dev.csv", "predictions.jsonl"),
    ("squad_v1", "squad/dev-v1.1.json", "predictions.json"),
    ("conll2003", "conll/valid.txt", "predictions.txt"),
    ("swag", "swag/val.csv", "predictions.jsonl"),
]


@pytest.mark.parametrize("task, dev_file, predictions", DEV_FILES)
def test_scores_the_dev_file_as_fine_tuning_did(
    fine_tuned, fixtures, capsys, task, dev_file, predictions
):
    run, trained = fine_tuned(task)
    before = {p: (run / p).read_bytes() for p in os.listdir(run) if (run / p).is_file()}
    capsys.readouterr()
    assert evaluate(["--model_dir", str(run), "--input", str(fixtures / dev_file)]) == 0
    out, err = capsys.readouterr()
    printed = json.loads(out)  # Progress goes to stderr: stdout is the JSON.
    assert re.search(r"(\d+)/\1", err), err
    out = run / os.path.basename(default_eval_dir(str(run), str(fixtures / dev_file)))
    written = json.loads((out / "eval_results.json").read_text())
    assert written == printed
    assert written["task"] == task and written["predictions_file"] == predictions
    assert (out / predictions).is_file()
    metrics = {
        k: v
        for k, v in trained.items()
        if isinstance(v, float) and not k.endswith("_seconds") and k != "final_train_loss"
    }
    assert metrics
    for name, value in metrics.items():
        assert written[name] == pytest.approx(value, abs=1e-6), name
    # The fine-tuning run's own files are left as they were; the record of
    # what a rerun sets aside gains the scores' folder.
    recorded = json.loads(before.pop("outputs.json"))
    assert {p: (run / p).read_bytes() for p in before} == before
    after = json.loads((run / "outputs.json").read_text())
    assert after == {**recorded, "outputs": sorted([*recorded["outputs"], out.name])}


@pytest.fixture(scope="module")
def sst2_run(fine_tuned):
    return fine_tuned("sst2")[0]


def one_line_error(args, capsys):
    capsys.readouterr()
    assert evaluate(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    return err


@pytest.mark.backend_independent
def test_unknown_label_is_one_line(sst2_run, tmp_path, capsys):
    path = tmp_path / "dev.tsv"
    path.write_text("sentence\tlabel\na fine film .\t1\nawful .\t7\n")
    err = one_line_error(["--model_dir", str(sst2_run), "--input", str(path)], capsys)
    assert err == (
        f"error: {path}:3: unknown label '7'; expected one of ['0', '1']; for other labels "
        "use --task classification --set data.text_column=sentence"
    )


@pytest.mark.backend_independent
def test_folder_without_a_fine_tuning_run_is_one_line(fixtures, tmp_path, capsys):
    err = one_line_error(
        ["--model_dir", str(tmp_path), "--input", str(fixtures / "glue" / "SST-2" / "dev.tsv")],
        capsys,
    )
    assert err == f"error: {tmp_path / 'config.yaml'}: no such config file"


@pytest.mark.backend_independent
def test_missing_input_is_one_line(sst2_run, tmp_path, capsys):
    err = one_line_error(
        ["--model_dir", str(sst2_run), "--input", str(tmp_path / "nope.tsv")], capsys
    )
    assert err == f"error: {tmp_path / 'nope.tsv'}: no such file"


@pytest.mark.backend_independent
def test_tags_the_model_never_saw_are_one_line(fine_tuned, tmp_path, capsys):
    run, _ = fine_tuned("conll2003")
    path = tmp_path / "other.txt"
    path.write_text("Paris B-CITY\nis O\n")
    err = one_line_error(["--model_dir", str(run), "--input", str(path)], capsys)
    assert err.startswith(f"error: {path}: tags ['B-CITY'] are not among the model's ")


@pytest.mark.backend_independent
def test_bad_squad_files_are_one_line(fine_tuned, fixtures, tmp_path, capsys):
    run, _ = fine_tuned("squad_v1")

    def without_answers(questions):
        for question in questions:
            question["answers"] = []

    def repeated_id(questions):
        questions[1]["id"] = "q1"  # Scores are keyed by id: q1 would count twice.

    def number_answer(questions):
        questions[0]["answers"][0]["text"] = 1895  # Scored as text: no number.

    path = tmp_path / "test.json"
    for edit, message in [
        (without_answers, "4 of 4 questions have no answers to score against"),
        (
            repeated_id,
            "question id 'q1' is repeated (data[0].paragraphs[0].qas[0] and "
            "data[0].paragraphs[0].qas[1]); answers are keyed by id, so each needs its own",
        ),
        (
            number_answer,
            "data[0].paragraphs[0].qas[0] (id 'q1'): answer 'text' must be text, not int",
        ),
    ]:
        squad = json.loads((fixtures / "squad" / "dev-v1.1.json").read_text())
        questions = [q for a in squad["data"] for p in a["paragraphs"] for q in p["qas"]]
        edit(questions)
        path.write_text(json.dumps(squad))
        err = one_line_error(["--model_dir", str(run), "--input", str(path)], capsys)
        assert err == f"error: {path}: {message}"


@pytest.mark.backend_independent
def test_a_label_the_classifier_never_saw_says_so(fine_tuned, tmp_path, capsys):
    # Issue 49: data.label_names cannot add a class to a fine-tuned model.
    run, _ = fine_tuned("classification")
    path = tmp_path / "more.csv"
    path.write_text("text,label\ngood,pos\nso-so,mixed\n")
    err = one_line_error(["--model_dir", str(run), "--input", str(path)], capsys)
    assert "label 'mixed' is not one of ['neg', 'pos'] (more.csv)" in err
    assert err.endswith("the model was fine-tuned on these labels only")
