"""Tables as users have them (issue 70): Parquet files, `datasets`
save_to_disk folders and JSON besides TSV, CSV and JSON Lines, and GLUE
tasks reading Hugging Face `datasets` exports. Every file is written here,
by pyarrow where the format needs it (skipped without it)."""

import contextlib
import csv
import json
import os
import subprocess
import sys
import threading

import pytest

import pipelines.tasks as tasks
from keras_bert.errors import ConfigError
from keras_bert.finetuning.config import load_finetune_config
from keras_bert.finetuning.sentence_task import SentenceTask
from keras_bert.finetuning.task_registry import default_config_file
from keras_bert.paths import ROOT
from keras_bert.predict import main as predict
from pipelines.tasks import table_formats

ROWS = [
    {"text": "a great film", "label": "pos", "source": "web"},
    {"text": 'a "so-so", long film', "label": "neg", "source": "web"},
    {"text": "café au lait", "label": "pos", "source": "print"},
]
# `datasets`' GLUE configs (the Hub's dataset card, huggingface.co/datasets/nyu-mll/glue):
# their ClassLabel names in the order of the integer labels, and the task's
# label each one is.
DATASETS_LABELS = {
    "cola": [("unacceptable", "0"), ("acceptable", "1")],
    "sst2": [("negative", "0"), ("positive", "1")],
    "mrpc": [("not_equivalent", "0"), ("equivalent", "1")],
    "qqp": [("not_duplicate", "0"), ("duplicate", "1")],
    "mnli": [("entailment",) * 2, ("neutral",) * 2, ("contradiction",) * 2],
    "qnli": [("entailment",) * 2, ("not_entailment",) * 2],
    "rte": [("entailment",) * 2, ("not_entailment",) * 2],
    "wnli": [("not_entailment", "0"), ("entailment", "1")],
}
DATASETS_COLUMNS = {
    "cola": ("sentence", None),
    "sst2": ("sentence", None),
    "mrpc": ("sentence1", "sentence2"),
    "qqp": ("question1", "question2"),
    "stsb": ("sentence1", "sentence2"),
    "mnli": ("premise", "hypothesis"),
    "qnli": ("question", "sentence"),
    "rte": ("sentence1", "sentence2"),
    "wnli": ("sentence1", "sentence2"),
}
NO_PYARROW = (
    "Parquet and save_to_disk folders need pyarrow, an optional extra (requirements-dev.txt)"
)


@pytest.fixture
def pyarrow():
    pyarrow = pytest.importorskip("pyarrow", reason=NO_PYARROW)
    import pyarrow.ipc
    import pyarrow.parquet

    return pyarrow


def write_parquet(pyarrow, path, rows, row_group_size=None):
    pyarrow.parquet.write_table(
        pyarrow.Table.from_pylist(rows), str(path), row_group_size=row_group_size
    )
    return path


def write_saved_dataset(pyarrow, folder, rows, files=2):
    """A folder as `datasets.Dataset.save_to_disk` writes it: Arrow IPC
    stream files, listed in order in `state.json`, and `dataset_info.json`."""
    folder.mkdir(parents=True)
    table = pyarrow.Table.from_pylist(rows)
    names = [f"data-{i:05d}-of-{files:05d}.arrow" for i in range(files)]
    per_file = -(-len(rows) // files)
    for i, name in enumerate(names):
        with pyarrow.OSFile(str(folder / name), "wb") as sink:
            with pyarrow.ipc.new_stream(sink, table.schema) as writer:
                for batch in table.slice(i * per_file, per_file).to_batches(max_chunksize=2):
                    writer.write_batch(batch)
    state = {"_data_files": [{"filename": n} for n in names], "_split": "train"}
    (folder / "state.json").write_text(json.dumps(state))
    (folder / "dataset_info.json").write_text(json.dumps({"features": {}}))
    return folder


def write_delimited(path, rows, delimiter):
    # As `Dataset.to_csv` (pandas) writes: a header, fields with a quote or
    # the delimiter quoted.
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter=delimiter)
        writer.writeheader()
        writer.writerows(rows)
    return path


FORMATS = {
    "tsv": lambda pa, d, rows: write_delimited(d / "t.tsv", rows, "\t"),
    "csv": lambda pa, d, rows: write_delimited(d / "t.csv", rows, ","),
    "jsonl": lambda pa, d, rows: _write(d / "t.jsonl", "".join(json.dumps(r) + "\n" for r in rows)),
    "json lines in .json": lambda pa, d, rows: _write(
        d / "t.json", "".join(json.dumps(r) + "\n" for r in rows)
    ),
    "json array": lambda pa, d, rows: _write(d / "t.json", json.dumps(rows, indent=2)),
    "json array, one line": lambda pa, d, rows: _write(d / "t.json", json.dumps(rows)),
    "json data": lambda pa, d, rows: _write(d / "t.json", json.dumps({"data": rows}, indent=1)),
    "json data, one line": lambda pa, d, rows: _write(
        d / "t.json", json.dumps({"version": 1, "data": rows})
    ),
    "parquet": lambda pa, d, rows: write_parquet(pa, d / "t.parquet", rows),
    "save_to_disk": lambda pa, d, rows: write_saved_dataset(pa, d / "t", rows),
}
NEEDS_PYARROW = ("parquet", "save_to_disk")


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.backend_independent
@pytest.mark.parametrize("name", FORMATS)
def test_every_format_gives_the_same_examples(request, tmp_path, name):
    pyarrow = request.getfixturevalue("pyarrow") if name in NEEDS_PYARROW else None
    path = FORMATS[name](pyarrow, tmp_path, ROWS)
    examples = tasks.read_table(str(path), "text", label_column="label")
    assert [(e.text_a, e.text_b, e.label) for e in examples] == [
        (r["text"], None, r["label"]) for r in ROWS
    ]
    # The guid numbers a text file's lines and the other files' rows.
    first = 2 if name in ("tsv", "csv") else 1
    numbers = range(first, first + 3)
    assert [e.guid for e in examples] == [f"{os.path.basename(path)}-{n}" for n in numbers]


@pytest.mark.backend_independent
def test_json_shapes_and_their_errors(tmp_path):
    jsonl = _write(tmp_path / "t.jsonl", json.dumps(ROWS))
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_table(str(jsonl), "text", label_column="label")
    assert str(error.value) == (
        f"{jsonl}:1: a JSON array in a .jsonl file (one object a line); name it .json "
        "to read it as an array of records"
    )
    cases = [
        (
            '{\n  "rows": []\n}',
            'a JSON document that is neither an array of records nor {"data": [...]}',
        ),
        ('[{"text": "a", "label": 1},\n {"text": "b"}]', "row 2: missing key(s) ['label']"),
        (
            '[{"text": "a", "label": 1},\n {"text": "b",, }]',
            "2: invalid JSON: Expecting property name enclosed in double quotes",
        ),
        ('{"text": null, "label": 1}\n', "1: no text in column 'text' (null)"),
    ]
    for text, message in cases:
        path = _write(tmp_path / "t.json", text)
        with pytest.raises(tasks.TaskDataError) as error:
            tasks.read_table(str(path), "text", label_column="label")
        separator = ":" if message[0].isdigit() else ": "
        assert str(error.value) == f"{path}{separator}{message}"


@pytest.mark.backend_independent
def test_parquet_streams_in_record_batches(pyarrow, tmp_path, monkeypatch):
    rows = [{"text": f"film {i}", "label": i % 2, "note": "x" * 50} for i in range(200)]
    path = write_parquet(pyarrow, tmp_path / "big.parquet", rows, row_group_size=50)
    pulled = []
    iter_batches = pyarrow.parquet.ParquetFile.iter_batches

    def spy(self, *args, **kwargs):
        for batch in iter_batches(self, *args, **kwargs):
            pulled.append((batch.num_rows, batch.schema.names))
            yield batch

    monkeypatch.setattr(pyarrow.parquet.ParquetFile, "iter_batches", spy)
    monkeypatch.setattr(table_formats, "BATCH_ROWS", 16)
    read = table_formats.read_rows(str(path), ["text"], ["label"])
    where, number, row = next(read)
    # One batch of the wanted columns is read for the first row, not the file.
    assert (where, number, row) == (f"{path}: row 1", 1, {"text": "film 0", "label": 0})
    assert pulled == [(16, ["text", "label"])]
    assert len(list(read)) == 199


@pytest.mark.backend_independent
def test_a_saved_dataset_reads_its_files_in_order(pyarrow, tmp_path):
    rows = [{"text": f"film {i}", "label": i % 3, "idx": i} for i in range(7)]
    folder = write_saved_dataset(pyarrow, tmp_path / "train", rows, files=3)
    read = list(table_formats.read_rows(str(folder), ["text"], optional=("idx", "absent")))
    assert [r for _, _, r in read] == [{"text": r["text"], "idx": r["idx"]} for r in rows]
    assert read[-1][:2] == (f"{folder}: row 7", 7)
    # A DatasetDict's folder names its splits; its own is no table.
    (tmp_path / "dataset_dict.json").write_text('{"splits": ["train"]}')
    with pytest.raises(tasks.TaskDataError) as error:
        table_formats.read_rows(str(tmp_path), ["text"])
    assert str(error.value) == (
        f"{tmp_path}: a `datasets` DatasetDict folder; name one of its splits "
        f"({tmp_path / 'train'}, ...)"
    )


@pytest.mark.backend_independent
def test_unreadable_arrow_files_and_missing_columns_are_one_line(pyarrow, tmp_path):
    fake = _write(tmp_path / "t.parquet", "text,label\na,1\n")
    with pytest.raises(tasks.TaskDataError, match=rf"^{fake}: not a readable Parquet file \("):
        tasks.read_table(str(fake), "text", label_column="label")
    path = write_parquet(pyarrow, tmp_path / "u.parquet", ROWS)
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_table(str(path), "sentence", label_column="label")
    assert str(error.value) == (
        f"{path}: no column(s) ['sentence']; found ['text', 'label', 'source']"
    )


@pytest.mark.backend_independent
@pytest.mark.parametrize("kind", ["parquet", "save_to_disk"])
def test_without_pyarrow_one_line_names_what_to_install(tmp_path, monkeypatch, kind):
    # No pyarrow needed: the import fails before the file is opened.
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    if kind == "parquet":
        path, what = _write(tmp_path / "train.parquet", "PAR1"), "a Parquet file"
    else:
        path, what = tmp_path / "train", "a `datasets` save_to_disk folder"
        path.mkdir()
        _write(path / "state.json", '{"_data_files": []}')
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_table(str(path), "text", label_column="label")
    assert str(error.value) == (
        f"{path}: reading {what} needs pyarrow, an optional extra: pip install pyarrow"
    )


@pytest.mark.backend_independent
def test_split_files_of_every_format_are_found(tmp_path):
    _write(tmp_path / "validation.json", "[]")
    assert tasks.find_split_file(str(tmp_path), "dev", "validation") == str(
        tmp_path / "validation.json"
    )
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.find_split_file(str(tmp_path), "train")
    assert str(error.value) == (
        f"{tmp_path}: no train table (.tsv, .csv, .jsonl, .json, .parquet, a `datasets` "
        "save_to_disk folder or the Hub's train-00000-of-00001.parquet shards, there or in "
        "data/)"
    )


# --- GLUE tasks on `datasets` exports ---


def export_rows(task, labels, texts=("the cat sat .", "a cat sat .")):
    text_a, text_b = DATASETS_COLUMNS[task]
    rows = []
    for idx, label in enumerate(labels):
        row = {text_a: f"{texts[0]} {idx}"}
        if text_b:
            row[text_b] = texts[1]
        rows.append({**row, "label": label, "idx": 100 + idx})
    return rows


@pytest.mark.backend_independent
@pytest.mark.parametrize("task", DATASETS_LABELS)
def test_datasets_integer_labels_are_the_tasks_labels(tmp_path, task):
    names = DATASETS_LABELS[task]
    path = _write(
        tmp_path / "train.jsonl",
        "".join(json.dumps(r) + "\n" for r in export_rows(task, list(range(len(names))))),
    )
    examples = tasks.read_glue(task, str(path))
    assert [e.label for e in examples] == [ours for _, ours in names]
    assert [e.guid for e in examples] == [str(100 + i) for i in range(len(names))]
    assert (examples[0].text_b is None) == (DATASETS_COLUMNS[task][1] is None)
    # `datasets`' class names (`to_json` after `int2str`) are read too.
    path = _write(
        tmp_path / "train.jsonl",
        "".join(json.dumps(r) + "\n" for r in export_rows(task, [n for n, _ in names])),
    )
    assert [e.label for e in tasks.read_glue(task, str(path))] == [ours for _, ours in names]


@pytest.mark.backend_independent
def test_stsb_export_scores(tmp_path):
    path = _write(
        tmp_path / "dev.jsonl",
        "".join(json.dumps(r) + "\n" for r in export_rows("stsb", [4.2, 0.0])),
    )
    assert [e.label for e in tasks.read_glue("stsb", str(path))] == [4.2, 0.0]


def write_hf_rte(folder, fixtures, labels=None):
    """The RTE fixture as `Dataset.to_csv(..., sep="\\t")` writes the
    `datasets` RTE splits: `sentence1 sentence2 label idx`, labels 0/1."""
    folder.mkdir(exist_ok=True)
    number = {"entailment": 0, "not_entailment": 1}
    for split, name in (("train", "train"), ("dev", "validation")):
        source = list(
            csv.DictReader(open(fixtures / "glue" / "RTE" / f"{split}.tsv"), delimiter="\t")
        )
        rows = [
            {
                "sentence1": r["sentence1"],
                "sentence2": r["sentence2"],
                "label": number[r["label"]] if labels is None else labels[i],
                "idx": r["index"],
            }
            for i, r in enumerate(source)
        ]
        write_delimited(folder / f"{name}.tsv", rows, "\t")
    return folder


@pytest.mark.backend_independent
def test_rte_reads_its_datasets_tsv_export(fixtures, tokenizer, tmp_path):
    data = write_hf_rte(tmp_path / "rte_hf", fixtures)
    assert (data / "train.tsv").read_text().startswith("sentence1\tsentence2\tlabel\tidx\n")
    config = load_finetune_config("rte", default_config_file("rte"))
    rte = SentenceTask("rte", config, str(data), tokenizer)
    official = SentenceTask("rte", config, str(fixtures / "glue"), tokenizer)
    assert rte.label_names == ["entailment", "not_entailment"]
    assert list(rte.dev_sets) == ["validation.tsv"]
    for ours, theirs in [
        (rte.train_examples, official.train_examples),
        (rte.dev_sets["validation.tsv"], official.dev_sets["dev.tsv"]),
    ]:
        assert [(e.text_a, e.text_b, e.label) for e in ours] == [
            (e.text_a, e.text_b, e.label) for e in theirs
        ]
    # `idx` is the prediction id.
    assert [e.guid for e in rte.train_examples] == ["0", "1", "2", "3"]


@pytest.mark.backend_independent
def test_mnli_finds_its_validation_splits(tmp_path, tokenizer):
    for name in ("train", "validation_matched", "validation_mismatched"):
        rows = export_rows("mnli", [0, 1, 2])
        _write(tmp_path / f"{name}.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    config = load_finetune_config("mnli", default_config_file("mnli"))
    mnli = SentenceTask("mnli", config, str(tmp_path), tokenizer)
    assert list(mnli.dev_sets) == ["validation_matched.jsonl", "validation_mismatched.jsonl"]
    assert [e.label for e in mnli.train_examples] == ["entailment", "neutral", "contradiction"]


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "task, header, export",
    [
        ("rte", "index\tsentence1\tsentence2\tlabel", False),  # The distribution's.
        ("rte", "sentence1\tsentence2\tlabel\tidx", True),
        ("rte", "sentence1\tsentence2\tlabel", True),  # Without idx: not where RTE's are.
        ("sst2", "sentence\tlabel", False),  # The distribution's and datasets' alike.
        ("sst2", "sentence\tlabel\tidx", True),
        ("sst2", "index\tsentence", False),  # The official test file.
        ("cola", "gj04\t1\t\tthe cat sat .", False),  # CoLA's has no header.
        ("cola", "sentence\tlabel\tidx", True),
        ("qqp", "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate", False),
        ("mnli", "premise\thypothesis\tlabel\tidx", True),
    ],
)
def test_the_header_tells_a_tsv_export_from_the_distribution(tmp_path, task, header, export):
    path = _write(tmp_path / "train.tsv", header + "\n")
    assert tasks.is_glue_export(task, str(path)) is export
    assert tasks.is_glue_export(task, str(tmp_path / "train.parquet"))


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "label, note",
    [(2, ""), (-1, " (-1: an unlabelled row, as in a test split)"), ("yes", "")],
)
def test_an_unknown_label_names_the_labels_and_the_generic_task(fixtures, tmp_path, label, note):
    data = write_hf_rte(tmp_path / "rte_hf", fixtures, labels=[0, 1, label, 0])
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_glue("rte", str(data / "train.tsv"))
    assert str(error.value) == (
        f"{data / 'train.tsv'}:4: unknown label '{label}'{note}; rte takes `datasets`' labels "
        "0 (entailment) and 1 (not_entailment), or those names; for other labels use "
        "--task pair_classification --set data.text_column=sentence1 "
        "--set data.text_b_column=sentence2"
    )


@pytest.mark.backend_independent
def test_an_unknown_label_in_the_distribution_layout_names_the_generic_task(tmp_path):
    path = _write(
        tmp_path / "train.tsv",
        "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\nyes\t1\t2\ta\tb\n",
    )
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_glue("mrpc", str(path))
    assert str(error.value) == (
        f"{path}:2: unknown label 'yes'; expected one of ['0', '1']; for other labels use "
        "--task pair_classification --set 'data.text_column=#1 String' "
        "--set 'data.text_b_column=#2 String' --set data.label_column=Quality"
    )


@pytest.mark.backend_independent
def test_label_names_apply_or_are_refused(fixtures, tokenizer, tmp_path):
    data = write_hf_rte(tmp_path / "rte_hf", fixtures)

    def task(name, data_dir, label_names):
        config = load_finetune_config(
            name, default_config_file(name), [f"data.label_names={label_names}"]
        )
        return SentenceTask(name, config, str(data_dir), tokenizer)

    # A GLUE task's classes are its own: the issue's ['0', '1'] is refused.
    with pytest.raises(ConfigError) as error:
        task("rte", data, "['0', '1']")
    assert str(error.value) == (
        "data.label_names=['0', '1']: task 'rte' has the classes ['entailment', "
        "'not_entailment'] (a `datasets` export's integer labels are read as them, "
        "docs/finetuning.md#glue-from-hugging-face-datasets); for other labels use "
        "--task pair_classification --set data.text_column=sentence1 "
        "--set data.text_b_column=sentence2"
    )
    assert task("rte", data, "[entailment, not_entailment]").label_names == [
        "entailment",
        "not_entailment",
    ]
    with pytest.raises(ConfigError, match=r"task 'stsb' predicts a score, not classes"):
        task("stsb", fixtures / "glue", "[a, b]")
    # The generic tasks take them: a class the training file lacks is added.
    generic = tmp_path / "generic"
    generic.mkdir()
    for split in ("train", "validation"):
        _write(generic / f"{split}.json", json.dumps([{"text": "a", "label": 1}] * 2))
    assert task("classification", generic, "[0, 1]").label_names == ["0", "1"]


# --- The commands on a Parquet export, each in its own process ---


def hf_sst2_rows(fixtures, labelled=True):
    rows = csv.DictReader(open(fixtures / "glue" / "SST-2" / "dev.tsv"), delimiter="\t")
    return [
        {"sentence": r["sentence"], "label": int(r["label"]) if labelled else -1, "idx": i}
        for i, r in enumerate(rows)
    ]


@pytest.mark.backend_independent  # Reading the tables.
def test_evaluate_and_predict_take_datasets_exports(pyarrow, fine_tuned, fixtures, tmp_path):
    run, trained = fine_tuned("sst2")
    dev = write_parquet(pyarrow, tmp_path / "validation.parquet", hf_sst2_rows(fixtures))
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert.evaluate", "--model_dir", str(run)]
        + ["--input", str(dev), "--output", str(tmp_path / "scores")],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    scores = json.loads(result.stdout)
    assert scores["accuracy"] == pytest.approx(trained["accuracy"], abs=1e-6)
    # The test split, saved with `save_to_disk` (labels -1): a submission
    # numbered by `idx`, with the predictions fine-tuning made on the same
    # sentences.
    test = write_saved_dataset(pyarrow, tmp_path / "test", hf_sst2_rows(fixtures, False))
    output = tmp_path / "SST-2.tsv"
    assert (
        predict(
            ["--model_dir", str(run), "--input", str(test), "--glue_submission"]
            + ["--output", str(output)]
        )
        == 0
    )
    fine_tuned_predictions = [
        json.loads(line)["prediction"] for line in open(run / "predictions.jsonl")
    ]
    assert output.read_text().splitlines() == ["index\tprediction"] + [
        f"{i}\t{p}" for i, p in enumerate(fine_tuned_predictions)
    ]


# --- What a hostile file holds (issue 82) ---


@pytest.mark.backend_independent
def test_label_and_text_columns_are_checked_by_their_type(pyarrow, tmp_path):
    # `datasets` stores class labels as integers, and scores as floats.
    path = write_parquet(
        pyarrow, tmp_path / "ints.parquet", [{"text": "a", "label": 1}, {"text": "b", "label": 0}]
    )
    assert [e.label for e in tasks.read_table(str(path), "text", label_column="label")] == [
        "1",
        "0",
    ]
    cases = [
        # pandas' missing value, written by `to_parquet`: no class "nan".
        (
            [{"text": "a", "label": 1.0}, {"text": "b", "label": float("nan")}],
            True,
            "row 2: no label in column 'label' (NaN, a missing value)",
        ),
        (
            [{"text": "a", "label": 1}, {"text": "b", "label": None}],
            True,
            "row 2: no label in column 'label' (null)",
        ),
        ([{"text": 5, "label": "pos"}], False, "column 'text' holds int64, not text"),
        (
            [{"text": ["hide", "new"], "label": "pos"}],
            False,
            "column 'text' holds list<item: string>, not text",
        ),
        (
            [{"text": "a", "label": {"id": 1}}],
            False,
            "column 'label' holds struct<id: int64>, not labels (strings, integers or numbers)",
        ),
    ]
    for number, (rows, per_row, message) in enumerate(cases):
        path = write_parquet(pyarrow, tmp_path / "t.parquet", rows)
        with pytest.raises(tasks.TaskDataError) as error:
            tasks.read_table(str(path), "text", label_column="label")
        # Parquet names a list's values `element`, an Arrow stream `item`.
        assert str(error.value).replace("<element:", "<item:") == f"{path}: {message}"
        # A save_to_disk folder's names its data file, before any row is read.
        folder = write_saved_dataset(pyarrow, tmp_path / f"saved{number}", rows, 1)
        data_file = folder / "data-00000-of-00001.arrow"
        with pytest.raises(tasks.TaskDataError) as error:
            tasks.read_table(str(folder), "text", label_column="label")
        assert str(error.value) == f"{folder if per_row else data_file}: {message}"
    # A GLUE export's list text is refused as well, not scored as "['hide', ...]".
    path = write_parquet(pyarrow, tmp_path / "train.parquet", [{"sentence": ["a"], "label": 0}])
    with pytest.raises(tasks.TaskDataError, match=r"column 'sentence' holds list<\w+: string>"):
        tasks.read_glue("sst2", str(path))


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "line, message",
    [
        ('{"text": 5, "label": 1}', "column 'text' holds a number, not text"),
        ('{"text": ["a", "b"], "label": 1}', "column 'text' holds an array, not text"),
        (
            '{"text": "b", "label": [1]}',
            "column 'label' holds an array, not a label (a string, an integer or a number)",
        ),
        ('{"text": "b", "label": NaN}', "no label in column 'label' (NaN, a missing value)"),
        ('{"text": "b", "label": null}', "no label in column 'label' (null)"),
    ],
)
def test_a_json_value_of_the_wrong_type_names_its_row(tmp_path, line, message):
    path = _write(tmp_path / "t.jsonl", '{"text": "a", "label": 0}\n' + line + "\n")
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_table(str(path), "text", label_column="label")
    assert str(error.value) == f"{path}:2: {message}"
    document = f'[{{"text": "a", "label": 0}},\n {line}]'
    path = _write(tmp_path / "t.json", document)
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_table(str(path), "text", label_column="label")
    assert str(error.value) == f"{path}: row 2: {message}"


@pytest.mark.backend_independent
def test_a_saved_dataset_reads_no_file_outside_itself(pyarrow, tmp_path):
    folder = write_saved_dataset(pyarrow, tmp_path / "data" / "train", ROWS, files=1)
    name = "data-00000-of-00001.arrow"
    outside = tmp_path / "outside"
    outside.mkdir()
    os.replace(folder / name, outside / name)
    state = folder / "state.json"
    for listed in (f"../../outside/{name}", str(outside / name)):
        state.write_text(json.dumps({"_data_files": [{"filename": listed}]}))
        with pytest.raises(tasks.TaskDataError) as error:
            tasks.read_table(str(folder), "text", label_column="label")
        assert str(error.value) == (
            f"{state}: data file {listed!r} lies outside {folder}; a save_to_disk "
            "folder's files are inside it"
        )
    # A link inside, to a file outside, is outside too.
    os.symlink(outside / name, folder / name)
    state.write_text(json.dumps({"_data_files": [{"filename": name}]}))
    with pytest.raises(tasks.TaskDataError, match="lies outside"):
        tasks.read_table(str(folder), "text", label_column="label")


def write_hub_split(pyarrow, folder, split, rows, shards, fingerprint=""):
    """A split as the Hub stores it: `split-00000-of-00002.parquet`, ...
    (`push_to_hub` before datasets 2.15 added a fingerprint to each name)."""
    folder.mkdir(parents=True, exist_ok=True)
    per_shard = -(-len(rows) // shards)
    for i in range(shards):
        name = f"{split}-{i:05d}-of-{shards:05d}{fingerprint}.parquet"
        write_parquet(pyarrow, folder / name, rows[i * per_shard : (i + 1) * per_shard])


@pytest.mark.backend_independent
@pytest.mark.parametrize("under", ["", "data"])
def test_the_hubs_shards_are_a_split_read_whole_in_order(pyarrow, tmp_path, under):
    rows = [{"text": f"film {i}", "label": i % 2} for i in range(5)]
    shards = tmp_path / under
    write_hub_split(pyarrow, shards, "train", rows, 2)
    write_hub_split(pyarrow, shards, "validation", rows[:2], 1, "-6ef3991c06080e14")
    train = tasks.find_split_file(str(tmp_path), "train")
    assert train == str(shards / "train")
    assert tasks.find_split_file(str(tmp_path), "dev", "validation") == str(shards / "validation")
    examples = tasks.read_table(train, "text", label_column="label")
    assert [(e.text_a, e.label, e.guid) for e in examples] == [
        (f"film {i}", str(i % 2), f"train-{i + 1}") for i in range(5)
    ]
    # A row's message names its shard, and its row there.
    write_parquet(
        pyarrow,
        shards / "train-00001-of-00002.parquet",
        [{"text": "a", "label": 0}, {"text": None, "label": 1}],
    )
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_table(train, "text", label_column="label")
    assert str(error.value) == (
        f"{shards / 'train-00001-of-00002.parquet'}: row 2: no text in column 'text' (null)"
    )
    # A shard missing (a download cut short) is named, not skipped.
    os.remove(shards / "train-00000-of-00002.parquet")
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_table(train, "text", label_column="label")
    assert str(error.value) == (
        f"{train}: the Hub's shards of the split are train-00001-of-00002.parquet; "
        "shard 00000 of 00002 is missing"
    )


@pytest.mark.backend_independent
def test_a_task_reads_the_hubs_splits_in_their_data_folder(pyarrow, tmp_path, tokenizer):
    rows = export_rows("mnli", [0, 1, 2])
    for split, shards in (("train", 2), ("validation_matched", 1), ("validation_mismatched", 1)):
        write_hub_split(pyarrow, tmp_path / "data", split, rows, shards)
    config = load_finetune_config("mnli", default_config_file("mnli"))
    mnli = SentenceTask("mnli", config, str(tmp_path), tokenizer)
    assert [e.label for e in mnli.train_examples] == ["entailment", "neutral", "contradiction"]
    assert list(mnli.dev_sets) == ["data/validation_matched", "data/validation_mismatched"]


def read_through_a_pipe(tmp_path, name, content, read):
    """`read(path)` of a named pipe that `content` is written to once (as
    `zcat test.tsv.gz > test.tsv &` does): a reader that opened it twice
    would wait for another writer forever."""
    pipe = tmp_path / name
    os.mkfifo(pipe)

    def write():
        with contextlib.suppress(BrokenPipeError), open(pipe, "wb") as f:
            f.write(content)

    outcome = {}

    def run():
        try:
            outcome["value"] = read(str(pipe))
        except Exception as error:
            outcome["error"] = error

    threading.Thread(target=write, daemon=True).start()
    reader = threading.Thread(target=run, daemon=True)
    reader.start()
    reader.join(timeout=20)
    if reader.is_alive():
        # The reader waits on a second open: a writer that closes at once
        # lets it (and this test) end.
        with contextlib.suppress(OSError):
            os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=20)
        pytest.fail(f"{name}: opened twice")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "content, labelled",
    [
        ("sentence\tlabel\na fine film\t1\n", True),  # The distribution's train/dev file.
        ("index\tsentence\n0\ta fine film\n", False),  # Its test file.
        ("sentence\tlabel\tidx\na fine film\t-1\t0\n", False),  # A `datasets` export.
    ],
)
def test_a_glue_file_is_read_once(tmp_path, content, labelled):
    examples = read_through_a_pipe(
        tmp_path,
        "test.tsv",
        content.encode(),
        lambda path: tasks.read_glue("sst2", path, labelled=labelled),
    )
    assert [e.text_a for e in examples] == ["a fine film"]


@pytest.mark.backend_independent
def test_bytes_not_utf8_in_a_pipe_are_one_line(tmp_path):
    # The line is found by a second pass over the file, which a pipe has not.
    with pytest.raises(tasks.TaskDataError) as error:
        read_through_a_pipe(
            tmp_path,
            "test.tsv",
            b"sentence\tlabel\ncaf\xe9\t1\n",
            lambda path: tasks.read_glue("sst2", path),
        )
    assert str(error.value) == f"{tmp_path / 'test.tsv'}: not UTF-8; save the file as UTF-8"


@pytest.mark.backend_independent
def test_a_parquet_pipe_is_refused_in_one_line(pyarrow, tmp_path):
    parquet = write_parquet(pyarrow, tmp_path / "rows.parquet", ROWS).read_bytes()
    with pytest.raises(tasks.TaskDataError) as error:
        read_through_a_pipe(
            tmp_path,
            "test.parquet",
            parquet,
            lambda path: tasks.read_table(path, "text", label_column="label"),
        )
    assert str(error.value) == (
        f"{tmp_path / 'test.parquet'}: not a regular file (a pipe?); Parquet is read from its "
        "end, so save it to a file first"
    )
