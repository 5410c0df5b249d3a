"""Task readers on the small files in tests/finetuning/fixtures/."""

import itertools
import json
import logging
import types

import numpy as np
import pytest

import pipelines.tasks as tasks
from keras_bert.finetuning.config import load_finetune_config
from keras_bert.finetuning.sentence_task import SentenceTask
from keras_bert.finetuning.squad_postprocess import final_text, squad_predictions
from keras_bert.finetuning.tagging_task import TaggingTask
from keras_bert.finetuning.task_registry import default_config_file

pytestmark = pytest.mark.backend_independent


def reference_truncate(len_a, len_b, budget):
    # run_classifier.py's _truncate_seq_pair, popping one token at a time.
    while len_a + len_b > budget:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b


def test_truncated_lengths_match_the_original_loop():
    for a, b, budget in itertools.product(range(12), range(12), range(1, 15)):
        assert tasks.truncated_lengths(a, b, budget) == reference_truncate(a, b, budget)


def test_pack_pair():
    tokens, segments = tasks.pack_pair([5, 6, 7], [8, 9], 7, cls_id=2, sep_id=3)
    # budget 4: A keeps 2 (longer, popped first), B keeps 2.
    assert tokens == [2, 5, 6, 3, 8, 9, 3]
    assert segments == [0, 0, 0, 0, 1, 1, 1]
    tokens, segments = tasks.pack_pair([5, 6, 7], None, 4, cls_id=2, sep_id=3)
    assert tokens == [2, 5, 6, 3] and segments == [0, 0, 0, 0]


def test_glue_layouts(fixtures):
    sst2 = tasks.read_glue("sst2", fixtures / "glue/SST-2/train.tsv")
    assert len(sst2) == 6 and sst2[0].text_a == "a great and moving film ."
    assert sst2[0].label == "1" and sst2[0].text_b is None
    cola = tasks.read_glue("cola", fixtures / "glue/CoLA/train.tsv")  # No header.
    assert len(cola) == 4 and cola[1].text_a == "cat the mat on sat ." and cola[1].label == "0"
    stsb = tasks.read_glue("stsb", fixtures / "glue/STS-B/train.tsv")
    assert stsb[2].text_b == "a great movie" and stsb[2].label == pytest.approx(4.2)
    mnli = tasks.read_glue("mnli", fixtures / "glue/MNLI/dev_matched.tsv")
    assert [e.label for e in mnli] == ["entailment", "contradiction", "neutral"]
    assert mnli[0].text_b == "the cat sat ."


# The sentence-pair tasks in the GLUE distribution's layouts (a header row,
# then columns by position, as in run_classifier.py's processors):
#   MRPC  Quality  #1 ID  #2 ID  #1 String  #2 String
#   QQP   id  qid1  qid2  question1  question2  is_duplicate
#   QNLI  index  question  sentence  label
#   RTE   index  sentence1  sentence2  label
#   WNLI  index  sentence1  sentence2  label
# MRPC and QQP text carries bare double quotes, which must stay text.
GLUE_PAIR_ROWS = [
    (
        "mrpc",
        "MRPC/train.tsv",
        0,
        '"The board approved the merger on Tuesday, the company said.',
        "The company said its board approved the merger on Tuesday.",
        "1",
        ["0", "1"],
    ),
    (
        "qqp",
        "QQP/train.tsv",
        2,
        'What does "great film" mean?',
        'What is the meaning of "great film"?',
        "1",
        ["0", "1"],
    ),
    (
        "qnli",
        "QNLI/dev.tsv",
        1,
        "What is the capital of France?",
        "The film opened in London in May.",
        "not_entailment",
        ["entailment", "not_entailment"],
    ),
    (
        "rte",
        "RTE/dev.tsv",
        0,
        "Maria Lopez, the coach of the city team, retired at the age of 61.",
        "Maria Lopez retired at 61.",
        "entailment",
        ["entailment", "not_entailment"],
    ),
    (
        "wnli",
        "WNLI/train.tsv",
        1,
        "The lamp would not go in the box because it was too tall.",
        "The box was too tall.",
        "0",
        ["0", "1"],
    ),
]


@pytest.mark.parametrize("task, file, row, text_a, text_b, label, label_names", GLUE_PAIR_ROWS)
def test_glue_pair_layouts(
    fixtures, tokenizer, task, file, row, text_a, text_b, label, label_names
):
    example = tasks.read_glue(task, fixtures / "glue" / file)[row]
    assert (example.text_a, example.text_b, example.label) == (text_a, text_b, label)
    # The task finds its GLUE sub-folder, reads train.tsv and dev.tsv (the
    # header skipped) and sizes its classifier from the task's label names.
    config = load_finetune_config(task, default_config_file(task))
    sentence_task = SentenceTask(task, config, fixtures / "glue", tokenizer)
    assert sentence_task.label_names == label_names
    assert not sentence_task.regression and len(sentence_task.label_names) == 2
    assert list(sentence_task.dev_sets) == ["dev.tsv"]
    assert (sentence_task.num_train_examples, len(sentence_task.dev_sets["dev.tsv"])) == (4, 3)
    assert all(e.text_b for e in sentence_task.train_examples)


def test_malformed_rows_name_file_and_line(fixtures, tmp_path):
    with pytest.raises(tasks.TaskDataError, match=r"bad/train.tsv:3: expected at least 2"):
        tasks.read_glue("sst2", fixtures / "bad/train.tsv")
    bad_label = tmp_path / "train.tsv"
    bad_label.write_text("sentence\tlabel\nok\t1\nok\tpositive\n")
    with pytest.raises(tasks.TaskDataError, match=r"train.tsv:3: unknown label 'positive'"):
        tasks.read_glue("sst2", bad_label)
    bad_json = tmp_path / "train.jsonl"
    bad_json.write_text('{"text": "a", "label": 1}\n{"text": "b"\n')
    with pytest.raises(tasks.TaskDataError, match=r"train.jsonl:2: invalid JSON"):
        tasks.read_table(bad_json, "text", label_column="label")
    with pytest.raises(tasks.TaskDataError, match=r"no such file"):
        tasks.read_glue("sst2", tmp_path / "missing.tsv")


@pytest.mark.parametrize(
    "read, task, content",
    [
        (tasks.read_glue_test, "sst2", "index\tsentence\n0\ta fine\n1\ta moving\tfilm\n"),
        (
            tasks.read_glue_test,
            "mrpc",
            "index\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
            "0\t1\t2\ta fine\tb\n1\t3\t4\ta\tb moving\tfilm\n",
        ),
        (tasks.read_glue, "sst2", "sentence\tlabel\na fine\t1\na moving\tfilm\t1\n"),
        (
            tasks.read_glue,
            "mrpc",
            "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
            "1\t1\t2\ta fine\tb\n1\t3\t4\ta\tb moving\tfilm\n",
        ),
        # CoLA: no header, four columns.
        (tasks.read_glue, "cola", "\ngj04\t1\t\ta fine\ngj04\t1\t\ta moving\tfilm\n"),
    ],
)
def test_a_tab_inside_a_sentence_is_refused_by_every_glue_reader(tmp_path, read, task, content):
    path = tmp_path / "test.tsv"
    path.write_text(content)
    width = content.splitlines()[-2].count("\t") + 1
    # The last row's text after the stray tab would be dropped.
    with pytest.raises(tasks.TaskDataError) as error:
        read(task, path)
    assert str(error.value) == (
        f"{path}:3: expected {width} tab-separated columns, found {width + 1} "
        "(a tab inside a sentence? the text after it would be lost)"
    )
    # A trailing tab (an empty cell) loses nothing.
    lines = content.splitlines()[:-1]
    path.write_text("\n".join(lines + [lines[-1] + "\t"]) + "\n")
    assert [e.text_a for e in read(task, path)] == ["a fine", "a fine"]


@pytest.mark.parametrize("extension", [".csv", ".tsv"])
def test_a_row_may_leave_off_an_unused_trailing_column(tmp_path, extension):
    # Many exporters end a row at its last non-empty cell.
    path = tmp_path / f"train{extension}"
    comma = "," if extension == ".csv" else "\t"
    path.write_text(comma.join(["text", "label", "source"]) + f"\na{comma}1{comma}web\nb{comma}0\n")
    examples = tasks.read_table(path, "text", label_column="label")
    assert [(e.text_a, e.label) for e in examples] == [("a", "1"), ("b", "0")]
    # A used column left off is still refused.
    path.write_text(comma.join(["text", "label", "source"]) + "\na\n")
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_table(path, "text", label_column="label")
    assert str(error.value) == f"{path}:2: expected 3 columns as in the header"


BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize(
    "name, content",
    [
        ("b.csv", b"text,label\ngood film,pos\n"),
        ("b.tsv", b"text\tlabel\ngood film\tpos\n"),
        ("b.jsonl", b'{"text": "good film", "label": "pos"}\n'),
    ],
)
def test_tables_read_with_or_without_a_byte_order_mark(tmp_path, name, content):
    # Excel's "CSV UTF-8" starts the file with one (issue 49, item 10).
    for prefix in (b"", BOM):
        path = tmp_path / name
        path.write_bytes(prefix + content)
        examples = tasks.read_table(path, "text", label_column="label")
        assert [(e.text_a, e.label) for e in examples] == [("good film", "pos")]


def test_a_glue_test_file_with_a_byte_order_mark_is_a_test_file(fixtures, tmp_path):
    test, dev = tmp_path / "test.tsv", tmp_path / "dev.tsv"
    test.write_bytes(BOM + b"index\tsentence\n0\tgood film\n")
    dev.write_bytes(BOM + (fixtures / "glue" / "SST-2" / "dev.tsv").read_bytes())
    assert tasks.is_glue_test_file(test) and not tasks.is_glue_test_file(dev)


def test_other_task_files_read_with_a_byte_order_mark(fixtures, tmp_path):
    conll = tmp_path / "train.txt"
    conll.write_bytes(BOM + (fixtures / "conll" / "train.txt").read_bytes())
    assert tasks.read_conll(conll) == tasks.read_conll(fixtures / "conll" / "train.txt")


def test_generic_tables(fixtures):
    csv_rows = tasks.read_table(fixtures / "generic/train.csv", "text", label_column="label")
    assert csv_rows[0].text_a == "a great, moving film" and csv_rows[0].label == "pos"
    jsonl = tasks.read_table(fixtures / "generic/train.jsonl", "text", "text_b", "label")
    assert jsonl[1].text_b == "a great film" and jsonl[1].label == "0"
    tsv = tasks.read_table(fixtures / "generic/reg_train.tsv", "text", label_column="score")
    assert tsv[0].label == "4.5"
    with pytest.raises(tasks.TaskDataError, match=r"header has no column\(s\) \['sentence'\]"):
        tasks.read_table(fixtures / "generic/train.csv", "sentence")


def test_labels_have_one_spelling(tmp_path):
    tsv = tmp_path / "train.tsv"
    tsv.write_text("text\tlabel\na\tpos \nb\t pos\nc\t1\nd\t1.0\ne\t2.5\n")
    labels = [e.label for e in tasks.read_table(tsv, "text", label_column="label")]
    assert labels == ["pos", "pos", "1", "1", "2.5"]
    jsonl = tmp_path / "train.jsonl"
    jsonl.write_text(
        '{"text": "a", "label": 1}\n{"text": "b", "label": 1.0}\n'
        '{"text": "c", "label": "1"}\n{"text": "d", "label": true}\n'
    )
    labels = [e.label for e in tasks.read_table(jsonl, "text", label_column="label")]
    assert labels == ["1", "1", "1", "true"]


@pytest.mark.parametrize(
    "name, content, message",
    [
        (
            "train.jsonl",
            '{"text": "a", "label": 1}\n{"text": "b", "label": null}\n',
            "train.jsonl:2: no label in column 'label' (null)",
        ),
        ("train.tsv", "text\tlabel\na\t1\nb\t \n", "train.tsv:3: empty label in column 'label'"),
        # 40 rows must not become 34 examples: the stray quote is named.
        (
            "train.tsv",
            'text\tlabel\na\t1\n"b\t0\n' + "c\t1\n" * 6 + 'd"\t0\n',
            "train.tsv:3: a quoted field runs on to line 10 (a stray '\"'?); "
            "a TSV field cannot hold a line break",
        ),
    ],
)
def test_bad_labels_and_stray_quotes_name_the_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_table(path, "text", label_column="label")
    assert str(error.value) == f"{path}:{message.split(':', 1)[1]}"


def test_dynamic_padding_and_buckets(fixtures, tokenizer):
    examples = tasks.read_glue("sst2", fixtures / "glue/SST-2/train.tsv")
    features = tasks.classification_features(examples, tokenizer, max_seq_length=128)
    lengths = [len(t) for t in features["token_ids"]]
    assert features["token_ids"][0][0] == tokenizer.cls_id
    assert features["token_ids"][0][-1] == tokenizer.sep_id
    labels = [int(e.label) for e in examples]
    x, y = next(iter(tasks.make_dataset(features, labels, batch_size=4, length_multiple=1)))
    # Each batch is padded only to its own longest sequence.
    assert x["token_ids"].shape == (4, max(lengths[:4]))
    np.testing.assert_array_equal(x["padding_mask"].numpy().sum(axis=1), lengths[:4])
    np.testing.assert_array_equal(y.numpy(), labels[:4])
    # By default that length is rounded up to a multiple of 16 with [PAD].
    rounded, _ = next(iter(tasks.make_dataset(features, labels, batch_size=4)))
    assert rounded["token_ids"].shape == (4, -(-max(lengths[:4]) // 16) * 16)
    for name in ("token_ids", "segment_ids", "padding_mask"):
        np.testing.assert_array_equal(rounded[name][:, : x[name].shape[1]], x[name])
        assert not rounded[name][:, x[name].shape[1] :].numpy().any()
    seen = []
    for x, y in tasks.make_dataset(
        features,
        labels,
        batch_size=2,
        training=True,
        group_by_length=True,
        bucket_boundaries=(8,),
        length_multiple=1,
    ):
        seen.extend(y.numpy().tolist())
        assert x["token_ids"].shape[1] == x["padding_mask"].numpy().sum(axis=1).max()
    assert sorted(seen) == sorted(labels)


def two_length_features(count=64):
    """`count` sequences alternating 5 and 40 tokens; label = length."""
    lengths = [5, 40] * (count // 2)
    features = {
        "token_ids": [[101] + [7] * (n - 2) + [102] for n in lengths],
        "segment_ids": [[0] * n for n in lengths],
    }
    return features, [float(n) for n in lengths]


def batch_length_sets(dataset):
    return [set(x["padding_mask"].numpy().sum(axis=1).tolist()) for x, _ in dataset]


def test_training_batches_are_random_unless_grouped_by_length():
    features, labels = two_length_features()
    # Default, as in the original: random batches mix short and long examples.
    random_batches = batch_length_sets(
        tasks.make_dataset(features, labels, batch_size=8, training=True, seed=3)
    )
    assert sum(len(lengths) == 2 for lengths in random_batches) >= 6
    grouped = batch_length_sets(
        tasks.make_dataset(
            features, labels, batch_size=8, training=True, seed=3, group_by_length=True
        )
    )
    assert all(len(lengths) == 1 for lengths in grouped)
    assert sorted(min(lengths) for lengths in grouped) == [5] * 4 + [40] * 4


@pytest.mark.parametrize("group_by_length", [False, True])
def test_group_by_length_option_reaches_the_training_batches(tmp_path, tokenizer, group_by_length):
    folder = tmp_path / "STS-B"
    folder.mkdir()
    header = (
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    )
    rows = [
        "".join(f"{i}\tg\tf\ty\t{i}\ts\ts\t{text}\t{text}\t{score}\n")
        for i, (text, score) in enumerate(
            [("a cat .", 1.0), (" ".join(["the dog ran home ."] * 6), 4.0)] * 16
        )
    ]
    for name in ("train.tsv", "dev.tsv"):
        (folder / name).write_text(header + "".join(rows))
    config = load_finetune_config(
        "stsb",
        default_config_file("stsb"),
        [f"training.group_by_length={str(group_by_length).lower()}", "training.batch_size=8"],
    )
    stsb = SentenceTask("stsb", config, tmp_path, tokenizer)
    mixed = [len(set(y.numpy().tolist())) == 2 for _, y in stsb.train_dataset()]
    assert not any(mixed) if group_by_length else any(mixed)


def test_token_labels_are_padded_with_the_ignored_label():
    features = {
        "token_ids": [[101, 7, 102], [101, 8, 9, 10, 102]],
        "segment_ids": [[0] * 3, [0] * 5],
    }
    x, y = next(
        iter(
            tasks.make_dataset(
                features, [[-1, 2, -1], [-1, 1, 3, 0, -1]], batch_size=2, length_multiple=4
            )
        )
    )
    assert x["token_ids"].shape == y.shape == (2, 8)
    np.testing.assert_array_equal(y[0], [-1, 2, -1, -1, -1, -1, -1, -1])
    np.testing.assert_array_equal(x["padding_mask"][1], [1, 1, 1, 1, 1, 0, 0, 0])


def test_pair_segments(fixtures, tokenizer):
    examples = tasks.read_glue("stsb", fixtures / "glue/STS-B/train.tsv")
    features = tasks.classification_features(examples, tokenizer, max_seq_length=128)
    tokens, segments = features["token_ids"][0], features["segment_ids"][0]
    # "the cat sat ." twice: [CLS] 4 [SEP] 4 [SEP].
    assert len(tokens) == 11 and segments == [0] * 6 + [1] * 5


def test_conll_first_subword_carries_the_label(fixtures, tokenizer):
    sentences = tasks.read_conll(fixtures / "conll/train.txt")
    assert len(sentences) == 2
    assert sentences[0].words == ["John", "Smith", "visited", "Paris", "."]
    names = tasks.tag_names(sentences)
    assert names[0] == "O" and "B-ORG" in names
    features, labels, starts = tasks.tagging_features(sentences, tokenizer, 128, names)
    # "visited" → visit ##ed: label on "visit", -1 on "##ed".
    assert starts[0] == [1, 2, 3, 5, 6]
    index = {n: i for i, n in enumerate(names)}
    assert labels[0] == [
        -1,
        index["B-PER"],
        index["I-PER"],
        index["O"],
        -1,
        index["B-LOC"],
        index["O"],
        -1,
    ]
    # Truncation: words that do not fit are marked -1.
    _, _, starts = tasks.tagging_features(sentences, tokenizer, 5, names)
    assert starts[0] == [1, 2, -1, -1, -1]


def test_conll_words_past_max_seq_length_are_counted_and_warned_of(
    fixtures, tokenizer, tmp_path, caplog
):
    sentences = tasks.read_conll(fixtures / "conll/train.txt")
    # Pieces per word: 1 1 2 1 1 and 1 1 1 1 1 1 1; [CLS] and [SEP] take 2.
    assert tasks.words_cut(sentences, tokenizer, 5) == (7, 2)
    assert tasks.words_cut(sentences, tokenizer, 8) == (1, 1)
    assert tasks.words_cut(sentences, tokenizer, 9) == (0, 0)
    # The task says so for each file it reads, with what becomes of them.
    config = load_finetune_config(
        "conll2003", default_config_file("conll2003"), ["data.max_seq_length=8"]
    )
    with caplog.at_level(logging.WARNING):
        TaggingTask("conll2003", config, fixtures / "conll", tokenizer)
        text = tmp_path / "text.txt"
        text.write_text("a\n" * 7)
        TaggingTask("conll2003", config, None, tokenizer).read_unlabelled(str(text))
        model = types.SimpleNamespace(label_names=tasks.tag_names(sentences))
        TaggingTask("conll2003", config, None, tokenizer).use_eval_file(
            str(fixtures / "conll/valid.txt"), model
        )
    conll = fixtures / "conll"
    assert [r.getMessage() for r in caplog.records] == [
        f"{conll / 'train.txt'}: words past data.max_seq_length=8 (6 word pieces): "
        "1 in 1 of 2 sentences, not trained on.",
        f"{conll / 'valid.txt'}: words past data.max_seq_length=8 (6 word pieces): "
        "1 in 1 of 2 sentences, predicted O and scored so.",
        f"{text}: words past data.max_seq_length=8 (6 word pieces): "
        "1 in 1 of 1 sentences, tagged O.",
        f"{conll / 'valid.txt'}: words past data.max_seq_length=8 (6 word pieces): "
        "1 in 1 of 2 sentences, predicted O and scored so.",
    ]


def test_conll_iob1_and_bad_tags(fixtures, tmp_path):
    sentences = tasks.read_conll(fixtures / "conll/iob1.txt")
    assert sentences[0].tags[-1] == "B-PER"
    bad = tmp_path / "bad.txt"
    bad.write_text("John B-PER\nSmith PER\n")
    with pytest.raises(tasks.TaskDataError, match=r"bad.txt:2: 'PER' is not an IOB tag"):
        tasks.read_conll(bad)


def test_swag_choices(fixtures, tokenizer):
    examples = tasks.read_swag(fixtures / "swag/train.csv")
    assert examples[0].endings[1] == "The cat ran to Paris."
    assert [e.label for e in examples] == [0, 1, 2]
    features = tasks.choice_features(examples, tokenizer, 32)
    ((x, y),) = list(
        tasks.make_dataset(features, [e.label for e in examples], batch_size=3, num_choices=4)
    )
    assert x["token_ids"].shape[:2] == (3, 4)
    # Shorter choices are padded inside the example, and masked.
    mask = x["padding_mask"].numpy()
    assert (mask.sum(axis=-1) == (x["token_ids"].numpy() != 0).sum(axis=-1)).all()
    assert mask.min() == 0


def test_squad_windows_and_positions(fixtures, tokenizer):
    examples = tasks.read_squad(fixtures / "squad/train-v1.1.json", training=True)
    assert len(examples) == 4
    features = tasks.squad_features(examples, tokenizer, max_seq_length=384, training=True)
    assert len(features) == 4
    for example, feature in zip(examples, features):
        pieces = feature.token_ids[feature.start_position : feature.end_position + 1]
        assert tokenizer.detokenize([pieces]).numpy()[0].decode() == example.answers[0].lower()
    # Small windows: several features per question, each context token's
    # best window marked exactly once.
    features = tasks.squad_features(
        examples[:1], tokenizer, max_seq_length=24, doc_stride=4, max_query_length=8, training=True
    )
    assert len(features) > 2
    assert all(len(f.token_ids) <= 24 for f in features)
    best = {}
    for f in features:
        for position, is_max in f.token_is_max_context.items():
            if is_max:
                key = (f.token_to_word[position], f.token_ids[position])
                best[key] = best.get(key, 0) + 1
    assert best and all(v >= 1 for v in best.values())
    answered = [f for f in features if f.start_position > 0]
    assert answered and all(f.start_position <= f.end_position for f in answered)


def _squad_file(tmp_path, starts, context="the cat sat on the mat ."):
    qas = [
        {
            "id": f"q{i}",
            "question": "where ?",
            "answers": [{"text": "the mat", "answer_start": start}],
        }
        for i, start in enumerate(starts)
    ]
    path = tmp_path / "train.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": context, "qas": qas}]}]}))
    return path


def test_squad_answers_off_their_offsets_are_counted(tmp_path, caplog):
    path = _squad_file(tmp_path, [15, 15, 15, 2])
    examples = tasks.read_squad(path, training=True)
    assert [e.qid for e in examples] == ["q0", "q1", "q2"]
    assert (
        f"{path}: 1 of 4 answers are not at their 'answer_start' in the "
        "context (first: data[0].paragraphs[0].qas[3]); those questions are "
        "left out of training."
    ) in caplog.text
    assert len(tasks.read_squad(path)) == 4  # Evaluation keeps every question.


@pytest.mark.parametrize(
    "starts, context, message",
    [
        (
            [15, 2, 3],
            "the cat sat on the mat .",
            "2 of 3 answers are not at their 'answer_start' in the context (first: "
            "data[0].paragraphs[0].qas[1]); offsets from another file or text?",
        ),
        ([0], 12, "data[0].paragraphs[0]: 'context' must be text, not int"),
    ],
)
def test_bad_squad_files_are_refused(tmp_path, starts, context, message):
    path = _squad_file(tmp_path, starts, context)
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_squad(path, training=True)
    assert str(error.value) == f"{path}: {message}"


def _edited_squad(fixtures, tmp_path, edit):
    """The dev fixture with `edit(questions)` applied, written to a file."""
    squad = json.loads((fixtures / "squad/dev-v1.1.json").read_text())
    edit([q for a in squad["data"] for p in a["paragraphs"] for q in p["qas"]])
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(squad))
    return path


@pytest.mark.parametrize("repeated", ["q1", 1])
def test_repeated_question_ids_are_refused_where_answers_are_keyed_by_id(
    fixtures, tmp_path, repeated
):
    def repeat_first(questions):
        questions[0]["id"] = repeated
        questions[2]["id"] = "1" if repeated == 1 else repeated

    path = _edited_squad(fixtures, tmp_path, repeat_first)
    # Predictions and scores key answers by id: one answer would stand for two.
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_squad(path)
    assert str(error.value) == (
        f"{path}: question id '1' is repeated (data[0].paragraphs[0].qas[0] and "
        "data[1].paragraphs[0].qas[0]); answers are keyed by id, so each needs its own"
        if repeated == 1
        else f"{path}: question id 'q1' is repeated (data[0].paragraphs[0].qas[0] and "
        "data[1].paragraphs[0].qas[0]); answers are keyed by id, so each needs its own"
    )
    # Training does not key by id.
    assert len(tasks.read_squad(path, training=True)) == 4


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("text", [1895, None])
def test_an_answer_that_is_not_text_is_refused_when_read(fixtures, tmp_path, training, text):
    def number(questions):
        questions[3]["answers"][0]["text"] = text

    path = _edited_squad(fixtures, tmp_path, number)
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_squad(path, training=training)
    assert str(error.value) == (
        f"{path}: data[1].paragraphs[0].qas[1] (id 'q4'): answer 'text' must be text, "
        f"not {type(text).__name__}"
    )


@pytest.mark.parametrize(
    "answers, message",
    [
        ({"text": "a", "answer_start": 0}, "'answers' must be a list, not dict"),
        ([5], "every answer needs 'text' and 'answer_start'"),
    ],
)
def test_malformed_answers_are_refused(fixtures, tmp_path, answers, message):
    def malform(questions):
        questions[1]["answers"] = answers

    path = _edited_squad(fixtures, tmp_path, malform)
    with pytest.raises(tasks.TaskDataError) as error:
        tasks.read_squad(path)
    assert str(error.value) == f"{path}: data[0].paragraphs[0].qas[1]: {message}"


def test_squad_v2_unanswerable(fixtures, tokenizer):
    examples = tasks.read_squad(fixtures / "squad/train-v2.0.json", version_2=True, training=True)
    impossible = [e for e in examples if e.is_impossible]
    assert len(impossible) == 1 and impossible[0].answers == []
    features = tasks.squad_features(impossible, tokenizer, training=True)
    assert (features[0].start_position, features[0].end_position) == (0, 0)


def test_final_text_maps_back_to_the_original():
    # Word "(a" tokenized as "( a": the answer "a" is trimmed out of it.
    assert final_text("a team", "(a team)", "( a team )") == "a team"
    assert final_text("denver broncos", "Denver Broncos", "denver broncos") == "Denver Broncos"
    assert final_text("1920s", "1920s,", "1920s ,") == "1920s"
    # Not found: the whole original words.
    assert final_text("xyz", "Paris", "paris") == "Paris"


def test_squad_predictions_with_oracle_logits(fixtures, tokenizer):
    path = fixtures / "squad/dev-v1.1.json"
    train = {e.qid: e for e in tasks.read_squad(path, training=True)}
    examples = tasks.read_squad(path)
    features = tasks.squad_features(examples, tokenizer)
    oracle = tasks.squad_features([train[e.qid] for e in examples], tokenizer, training=True)
    starts = np.full((len(features), 384), -5.0)
    ends = starts.copy()
    for i, f in enumerate(oracle):
        starts[i, f.start_position] = 5.0
        ends[i, f.end_position] = 5.0
    predictions, _ = squad_predictions(examples, features, starts, ends, tokenizer.vocabulary)
    assert predictions == {
        "q1": "Denver Broncos",
        "q2": "California",
        "q3": "London",
        "q4": "John Smith",
    }
    # v2: a strong [CLS] score means "no answer".
    starts[:, 0] = ends[:, 0] = 50.0
    predictions, odds = squad_predictions(
        examples, features, starts, ends, tokenizer.vocabulary, version_2=True
    )
    assert set(predictions.values()) == {""} and all(v > 0 for v in odds.values())


def _table(p):
    return tasks.read_table(p, "text", label_column="label")


# Every task reader, with a file of its format whose third line holds an
# "é" (issue 67: one decoding for every text file).
READERS = {
    "glue": (
        "train.tsv",
        lambda p: tasks.read_glue("sst2", p),
        "sentence\tlabel\nfine\t1\na café\t0\n",
    ),
    "glue_test": (
        "test.tsv",
        lambda p: tasks.read_glue_test("sst2", p),
        "index\tsentence\n0\tfine\n1\ta café\n",
    ),
    "csv": ("train.csv", _table, "text,label\nfine,pos\na café,neg\n"),
    "tsv": ("train.tsv", _table, "text\tlabel\nfine\tpos\na café\tneg\n"),
    "jsonl": (
        "train.jsonl",
        _table,
        '{"text": "fine", "label": "pos"}\n\n{"text": "café", "label": "neg"}\n',
    ),
    "json": (
        "train.json",
        _table,
        '{"text": "fine", "label": "pos"}\r\n\r\n{"text": "café", "label": "neg"}\r\n',
    ),
    "conll": ("train.txt", tasks.read_conll, "-DOCSTART- O\n\nCafé B-ORG\nfilms O\n"),
    "swag": (
        "train.csv",
        tasks.read_swag,
        "sent1,sent2,ending0,ending1,ending2,ending3,label\nA,b,c,d,e,f,0\nA café,b,c,d,e,f,1\n",
    ),
    "squad": (
        "train-v1.1.json",
        tasks.read_squad,
        '{"version": "1.1", "data": [{"title": "t", "paragraphs": [\n'
        '{"qas": [{"id": "q", "question": "What?", "answers": [{"text": "film", "answer_start": 7}]}],\n'
        '"context": "a café film"}]}]}\n',
    ),
}


@pytest.mark.parametrize("name, read, text", READERS.values(), ids=READERS)
def test_every_reader_reads_a_byte_order_mark(tmp_path, name, read, text):
    path = tmp_path / name
    path.write_bytes(text.encode())
    expected = read(str(path))
    path.write_bytes(BOM + text.encode())
    assert read(str(path)) == expected


@pytest.mark.parametrize("name, read, text", READERS.values(), ids=READERS)
def test_every_reader_names_the_line_that_is_not_utf8(tmp_path, name, read, text):
    # Issue 67 item 13: a Latin-1 "é" was "not UTF-8 text (invalid
    # continuation byte 0xe9)", in a file of any length.
    path = tmp_path / name
    path.write_bytes(text.encode("latin-1"))
    column = text.splitlines()[2].index("é") + 1
    with pytest.raises(tasks.TaskDataError) as error:
        read(str(path))
    assert str(error.value) == (
        f"{path}: line 3 is not UTF-8 (byte 0xe9 at column {column}); save the file as UTF-8"
    )


@pytest.mark.parametrize(
    "text", ['[{"text": "fine", "label": "pos"}]\n', '[\n  {"text": "fine", "label": "pos"}\n]\n']
)
def test_a_json_array_is_read_from_json_and_named_in_jsonl(tmp_path, text):
    # Issue 67 item 13: "missing key(s) ['text', 'label']", or "invalid JSON";
    # issue 70: a .json file may hold an array of records.
    path = tmp_path / "train.json"
    path.write_text(text)
    assert [(e.text_a, e.label) for e in _table(str(path))] == [("fine", "pos")]
    path = tmp_path / "train.jsonl"
    path.write_text(text)
    with pytest.raises(tasks.TaskDataError) as error:
        _table(str(path))
    assert str(error.value) == (
        f"{path}:1: a JSON array in a .jsonl file (one object a line); name it .json to "
        "read it as an array of records"
    )
