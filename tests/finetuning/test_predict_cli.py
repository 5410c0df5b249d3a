"""`python -m keras_bert.predict`: predictions of a fine-tuned model for
files without labels, for every task family. Where the run's dev file can
be given unlabelled, the predictions must be those fine-tuning wrote."""

import csv
import json
import logging
import os
import socket
import subprocess
import sys

import pytest

from keras_bert.file_io import write_atomically
from keras_bert.finetuning import inference
from keras_bert.finetuning.metrics import squad_v1_scores
from keras_bert.finetuning.prediction_formats import PredictionFormat
from keras_bert.finetuning.sentence_task import SentenceTask
from keras_bert.predict import main as predict


def run_predict(args, capsys):
    capsys.readouterr()
    assert predict(args) == 0
    out = capsys.readouterr().out
    return json.loads(out[out.index("{") :])


def jsonl(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


@pytest.mark.backend_independent  # The submission's layout.
def test_glue_submission_from_the_official_test_layout(fine_tuned, fixtures, tmp_path, capsys):
    run, _ = fine_tuned("sst2")
    dev = list(csv.reader(open(fixtures / "glue" / "SST-2" / "dev.tsv"), delimiter="\t"))[1:]
    test = tmp_path / "test.tsv"
    test.write_text(
        "index\tsentence\n" + "".join(f"{i}\t{sentence}\n" for i, (sentence, _) in enumerate(dev))
    )
    written = run_predict(
        ["--model_dir", str(run), "--input", str(test), "--glue_submission"], capsys
    )
    path = run / "glue_submission" / "SST-2.tsv"
    assert written == {
        "task": "sst2",
        "input_file": str(test),
        "examples": len(dev),
        "output": str(path),
    }
    rows = list(csv.reader(open(path), delimiter="\t"))
    assert rows[0] == ["index", "prediction"]
    fine_tuned = [r["prediction"] for r in jsonl(run / "predictions.jsonl")]
    assert rows[1:] == [[str(i), p] for i, p in enumerate(fine_tuned)]
    assert not list(path.parent.glob("*.partial"))


def test_classification_rows_carry_probabilities(fine_tuned, fixtures, tmp_path, capsys):
    run, _ = fine_tuned("classification")
    texts = [r["text"] for r in csv.DictReader(open(fixtures / "generic" / "dev.csv"))]
    unlabelled = tmp_path / "new.csv"
    unlabelled.write_text("text\n" + "".join(f"{t}\n" for t in texts))
    written = run_predict(["--model_dir", str(run), "--input", str(unlabelled)], capsys)
    assert written["output"] == str(run / "predictions_new.jsonl")
    rows = jsonl(written["output"])
    fine_tuned = jsonl(run / "predictions.jsonl")
    assert [r["text_a"] for r in rows] == texts
    assert [r["prediction"] for r in rows] == [r["prediction"] for r in fine_tuned]
    for row in rows:
        probabilities = row["probabilities"]
        assert set(probabilities) == {"neg", "pos"}
        assert sum(probabilities.values()) == pytest.approx(1.0, abs=1e-5)
        assert row["prediction"] == max(probabilities, key=probabilities.get)


def test_regression_rows_carry_scores(fine_tuned, fixtures, tmp_path, capsys):
    run, _ = fine_tuned("stsb")
    written = run_predict(
        ["--model_dir", str(run), "--input", str(fixtures / "glue" / "STS-B" / "dev.tsv")], capsys
    )
    rows = jsonl(written["output"])
    fine_tuned = jsonl(run / "predictions.jsonl")
    assert [r["prediction"] for r in rows] == pytest.approx(
        [r["prediction"] for r in fine_tuned], abs=1e-5
    )


def test_squad_answers_for_the_official_script_with_offsets(fine_tuned, fixtures, tmp_path, capsys):
    run, _ = fine_tuned("squad_v1")
    squad = json.loads((fixtures / "squad" / "dev-v1.1.json").read_text())
    gold, contexts = {}, {}
    for article in squad["data"]:
        for paragraph in article["paragraphs"]:
            for question in paragraph["qas"]:
                gold[question["id"]] = [a["text"] for a in question.pop("answers")]
                contexts[question["id"]] = paragraph["context"]
    unlabelled = tmp_path / "test.json"
    unlabelled.write_text(json.dumps(squad))
    written = run_predict(["--model_dir", str(run), "--input", str(unlabelled)], capsys)
    answers = json.loads(open(written["output"]).read())
    assert answers == json.loads((run / "predictions.json").read_text())
    scores = json.loads((run / "eval_results.json").read_text())
    assert squad_v1_scores(gold, answers)["f1"] == pytest.approx(scores["f1"])
    for row in jsonl(written["offsets"]):
        if row["answer"]:
            context = contexts[row["id"]]
            assert context[row["answer_start"] : row["answer_end"]] == row["answer"]


def test_conll_text_gets_a_tag_per_word(fine_tuned, fixtures, tmp_path, capsys):
    run, _ = fine_tuned("conll2003")
    sentences = [
        [line.split()[0] for line in block.splitlines()]
        for block in (fixtures / "conll" / "valid.txt").read_text().split("\n\n")
        if block.strip() and not block.startswith("-DOCSTART-")
    ]
    words_only = tmp_path / "text.txt"
    words_only.write_text("\n\n".join("\n".join(s) for s in sentences) + "\n")
    written = run_predict(["--model_dir", str(run), "--input", str(words_only)], capsys)
    tagged = [
        [line.split() for line in block.splitlines()]
        for block in open(written["output"]).read().split("\n\n")
        if block.strip()
    ]
    fine_tuned = [
        [line.split() for line in block.splitlines()]
        for block in (run / "predictions.txt").read_text().split("\n\n")
        if block.strip()
    ]
    assert [[w for w, _ in s] for s in tagged] == sentences
    assert [[t for _, t in s] for s in tagged] == [[t for _, _, t in s] for s in fine_tuned]


def test_swag_without_labels_gets_the_chosen_ending(fine_tuned, fixtures, tmp_path, capsys):
    run, _ = fine_tuned("swag")
    rows = list(csv.DictReader(open(fixtures / "swag" / "val.csv")))
    unlabelled = tmp_path / "test.csv"
    with open(unlabelled, "w", newline="") as f:
        writer = csv.DictWriter(f, [k for k in rows[0] if k != "label"])
        writer.writeheader()
        writer.writerows({k: v for k, v in r.items() if k != "label"} for r in rows)
    written = run_predict(["--model_dir", str(run), "--input", str(unlabelled)], capsys)
    predictions = jsonl(written["output"])
    fine_tuned = jsonl(run / "predictions.jsonl")
    assert [p["prediction"] for p in predictions] == [p["prediction"] for p in fine_tuned]
    for row, p in zip(rows, predictions):
        assert p["ending"] == f"{row['sent2']} {row['ending' + str(p['prediction'])]}"


@pytest.mark.backend_independent
def test_mnli_submission_names():
    assert inference.submission_name("mnli", "MNLI/test_matched.tsv") == "MNLI-m.tsv"
    assert inference.submission_name("mnli", "MNLI/test_mismatched.tsv") == "MNLI-mm.tsv"
    assert inference.submission_name("mnli", "diagnostic/diagnostic.tsv") == "AX.tsv"
    assert inference.submission_name("stsb", "STS-B/test.tsv") == "STS-B.tsv"


def one_line_error(args, capsys):
    capsys.readouterr()
    assert predict(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    return err


@pytest.mark.backend_independent
def test_submission_needs_the_official_test_file(fine_tuned, fixtures, tmp_path, capsys):
    run, _ = fine_tuned("sst2")
    dev = fixtures / "glue" / "SST-2" / "dev.tsv"
    err = one_line_error(
        [
            "--model_dir",
            str(run),
            "--input",
            str(dev),
            "--glue_submission",
            "--output",
            str(tmp_path / "SST-2.tsv"),
        ],
        capsys,
    )
    assert err.startswith(f"error: {dev}: not an official GLUE test file")
    assert os.listdir(tmp_path) == []


@pytest.mark.backend_independent
def test_submission_of_a_task_outside_glue_is_one_line(fine_tuned, fixtures, capsys):
    run, _ = fine_tuned("classification")
    err = one_line_error(
        [
            "--model_dir",
            str(run),
            "--input",
            str(fixtures / "generic" / "dev.csv"),
            "--glue_submission",
        ],
        capsys,
    )
    assert err == "error: --glue_submission: classification is not a GLUE task"


@pytest.mark.backend_independent
def test_bad_test_header_is_one_line(fine_tuned, tmp_path, capsys):
    run, _ = fine_tuned("sst2")
    path = tmp_path / "test.tsv"
    path.write_text("index\ttext\n0\ta film\n")
    err = one_line_error(["--model_dir", str(run), "--input", str(path)], capsys)
    assert err == (
        f"error: {path}:1: a GLUE sst2 test file has a header 'index' "
        "(or 'id'), 'sentence'; found ['index', 'text']"
    )


@pytest.mark.backend_independent
def test_failure_midway_leaves_no_output(fine_tuned, fixtures, tmp_path, monkeypatch):
    run, _ = fine_tuned("stsb")
    output = tmp_path / "out.jsonl"

    def fail(rows, f):
        f.write("half a row")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(
        SentenceTask,
        "prediction_format",
        PredictionFormat(
            ".jsonl", lambda rows, path: write_atomically(path, lambda f: fail(rows, f))
        ),
    )
    with pytest.raises(OSError):
        inference.run_prediction(
            str(run), str(fixtures / "glue" / "STS-B" / "dev.tsv"), str(output)
        )
    assert os.listdir(tmp_path) == []


@pytest.mark.backend_independent
def test_repeated_squad_ids_are_one_line(fine_tuned, fixtures, tmp_path, capsys):
    # The answers file is `{id: answer}`: a repeated id would keep one answer.
    run, _ = fine_tuned("squad_v1")
    squad = json.loads((fixtures / "squad" / "dev-v1.1.json").read_text())
    squad["data"][1]["paragraphs"][0]["qas"][1]["id"] = "q2"
    path = tmp_path / "test.json"
    path.write_text(json.dumps(squad))
    output = tmp_path / "answers.json"
    err = one_line_error(
        ["--model_dir", str(run), "--input", str(path), "--output", str(output)], capsys
    )
    assert err == (
        f"error: {path}: question id 'q2' is repeated (data[0].paragraphs[0].qas[1] and "
        "data[1].paragraphs[0].qas[1]); answers are keyed by id, so each needs its own"
    )
    assert os.listdir(tmp_path) == ["test.json"]


@pytest.mark.backend_independent
def test_a_tab_inside_a_test_sentence_is_one_line(fine_tuned, tmp_path, capsys):
    run, _ = fine_tuned("sst2")
    path = tmp_path / "test.tsv"
    path.write_text("index\tsentence\n0\ta moving\tfilm\n")
    err = one_line_error(["--model_dir", str(run), "--input", str(path)], capsys)
    assert err == (
        f"error: {path}:2: expected 2 tab-separated columns, found 3 "
        "(a tab inside a sentence? the text after it would be lost)"
    )


def test_tsv_rows_may_leave_off_an_unused_trailing_column(fine_tuned, fixtures, tmp_path, capsys):
    run, _ = fine_tuned("classification")
    texts = [r["text"] for r in csv.DictReader(open(fixtures / "generic" / "dev.csv"))]
    unlabelled = tmp_path / "short_rows.tsv"
    # The first row has the unused column, the others end at their text.
    unlabelled.write_text(f"text\tsource\n{texts[0]}\tweb\n" + "".join(f"{t}\n" for t in texts[1:]))
    written = run_predict(["--model_dir", str(run), "--input", str(unlabelled)], capsys)
    rows = jsonl(written["output"])
    fine_tuned = jsonl(run / "predictions.jsonl")
    assert [r["text_a"] for r in rows] == texts
    assert [r["prediction"] for r in rows] == [r["prediction"] for r in fine_tuned]


def test_conll_words_past_max_seq_length_are_counted(fine_tuned, tmp_path, capsys, caplog):
    run, _ = fine_tuned("conll2003")
    text = tmp_path / "long_sentence.txt"
    # 200 one-piece words: 126 fit in max_seq_length 128 with [CLS] and [SEP].
    text.write_text("John\n" * 200 + "\nParis\n.\n")
    with caplog.at_level(logging.WARNING):
        written = run_predict(["--model_dir", str(run), "--input", str(text)], capsys)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"{text}: words past data.max_seq_length=128 (126 word pieces): "
        "74 in 1 of 2 sentences, tagged O."
    ]
    tagged = [line.split() for line in open(written["output"]).read().split("\n\n")[0].splitlines()]
    assert len(tagged) == 200 and {t for _, t in tagged[126:]} == {"O"}


@pytest.mark.backend_independent
def test_an_unreachable_bucket_is_one_line_naming_it(fine_tuned, capsys):
    # Issue 49, item 5; without network, the name does not resolve.
    run, _ = fine_tuned("classification")
    err = one_line_error(
        ["--model_dir", str(run), "--input", "gs://keras-bert-no-such-bucket/dev.csv"], capsys
    )
    assert err.startswith("error: gs://keras-bert-no-such-bucket/dev.csv: ")


@pytest.mark.backend_independent
def test_two_predictions_onto_one_new_output_cannot_both_write(
    fine_tuned, fixtures, tmp_path, capsys
):
    # Issue 49 item 6: both passed the existence check, and the second's
    # file replaced the first's without --overwrite.
    run, _ = fine_tuned("stsb")
    output = tmp_path / "out.jsonl"
    args = ["--model_dir", str(run), "--input", str(fixtures / "glue" / "STS-B" / "dev.tsv")]
    args += ["--output", str(output)]
    # The first is still writing: its claim (this process, running) is held.
    (tmp_path / ".out.jsonl.lock").write_text(f"{os.getpid()} {socket.gethostname()}\n")
    capsys.readouterr()
    assert predict(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is held by pid" in err, err
    assert sorted(os.listdir(tmp_path)) == [".out.jsonl.lock"]
    # The first has finished: the second is refused once it holds the claim.
    (tmp_path / ".out.jsonl.lock").unlink()
    checks = []
    original = inference.check_output

    def first_writer_finishes_meanwhile(*check_args, **kwargs):
        checks.append(check_args[1])
        if len(checks) == 2:  # The second check, made holding the claim.
            output.write_text("the first prediction's file\n")
        return original(*check_args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inference, "check_output", first_writer_finishes_meanwhile)
        assert predict(args) == 2
    assert "already exists; pass --overwrite" in capsys.readouterr().err
    assert output.read_text() == "the first prediction's file\n"
    assert sorted(os.listdir(tmp_path)) == ["out.jsonl"]


@pytest.mark.backend_independent
def test_a_link_planted_at_the_temporary_name_is_not_written_through(
    fine_tuned, fixtures, tmp_path
):
    # Issue 82 item 3, as reported, in a process of its own: with
    # `pout/x.jsonl.partial` planted as a link to a file outside, the
    # predictions overwrote that file and `pout/x.jsonl` became a link to it.
    run, _ = fine_tuned("sst2")
    victim = tmp_path / "fx" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("mine")
    out = tmp_path / "pout"
    out.mkdir()
    (out / "x.jsonl.partial").symlink_to("../fx/victim.txt")
    args = ["--model_dir", str(run), "--input", str(fixtures / "glue" / "SST-2" / "dev.tsv")]
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert.predict", *args, "--output", str(out / "x.jsonl")],
        capture_output=True,
        text=True,
        cwd=os.getcwd(),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert victim.read_text() == "mine"
    assert not (out / "x.jsonl").is_symlink()
    fine_tuned_rows = jsonl(run / "predictions.jsonl")
    assert [r["prediction"] for r in jsonl(out / "x.jsonl")] == [
        r["prediction"] for r in fine_tuned_rows
    ]
    assert sorted(os.listdir(out)) == ["x.jsonl", "x.jsonl.partial"]
