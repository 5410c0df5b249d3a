"""The transfer set: its sentences, and a labelling that resumes."""

import json
import os
import signal

import pytest

from keras_bert.distillation.config import TransferConfig
from keras_bert.distillation.transfer_set import (
    TransferSet,
    expand_text_files,
    label_transfer_set,
    labelling_seconds,
    read_text_file,
)
from keras_bert.errors import FinetuneError
from pipelines.transfer_set import read_shards

pytestmark = pytest.mark.backend_independent

LABELLED = [
    {"text_a": "a good film", "text_b": None, "label": 1},
    {"text_a": "a bad film", "text_b": None, "label": 0},
]
TEXT = ["some film", "another one", "a third"]


def transfer_set(copies=2, shard_size=4, batch_size=2, seed=0, **settings):
    transfer = TransferConfig(
        copies=copies, shard_size=shard_size, batch_size=batch_size, **settings
    )
    unlabelled = [{"text_a": t, "text_b": None, "label": None} for t in TEXT]
    return TransferSet(LABELLED, unlabelled, transfer, seed=seed)


class CountingTeacher:
    """Outputs the length of each sentence; stops (as a kill would) after
    `stop_after` batches."""

    num_outputs = 2

    def __init__(self, fingerprint="t1", stop_after=None):
        self.fingerprint = fingerprint
        self.stop_after = stop_after
        self.labelled = []

    def batch_outputs(self, rows, batch_size):
        for start in range(0, len(rows), batch_size):
            if self.stop_after is not None and len(self.labelled) >= self.stop_after * batch_size:
                raise KeyboardInterrupt
            batch = rows[start : start + batch_size]
            self.labelled += [r["text_a"] for r in batch]
            yield (
                range(start, start + len(batch)),
                [{"teacher": [len(r["text_a"]), 0.0]} for r in batch],
            )


class ReversingTeacher(CountingTeacher):
    """Labels the rows last first, as `Teacher` labels them in an order of
    its own (shortest first)."""

    def batch_outputs(self, rows, batch_size):
        backwards = rows[::-1]
        for indices, outputs in super().batch_outputs(backwards, batch_size):
            yield [len(rows) - 1 - i for i in indices], outputs


def shard_rows(paths):
    return [
        (r["text_a"].decode(), float(r["teacher"][0]), int(r["has_label"]))
        for r in read_shards(paths, 2).as_numpy_iterator()
    ]


def test_every_sentence_once_as_it_is_and_copies_augmented_without_labels():
    rows = list(transfer_set().rows(0, 15))
    assert len(transfer_set()) == 15
    assert [r["text_a"] for r in rows[::3]] == ["a good film", "a bad film"] + TEXT
    assert [r["label"] for r in rows[::3]] == [1, 0, None, None, None]
    assert all(r["label"] is None for i, r in enumerate(rows) if i % 3)
    # Sentence i is the same however the set is cut into pieces.
    assert list(transfer_set().rows(4, 9)) == rows[4:9]


def test_the_teachers_outputs_are_written_in_order_in_shards(tmp_path):
    teacher = CountingTeacher()
    paths = label_transfer_set(transfer_set(), teacher, str(tmp_path), progress=False)
    assert [os.path.basename(p) for p in paths] == [f"shard-0000{i}.tfrecord" for i in range(4)]
    rows = [(r["text_a"], r["label"]) for r in transfer_set().rows(0, 15)]
    assert shard_rows(paths) == [(a, len(a), int(label is not None)) for a, label in rows]
    assert sorted(teacher.labelled) == sorted(a for a, _ in rows)


def test_the_shard_keeps_the_rows_order_whatever_order_the_teacher_labels_in(tmp_path):
    paths = label_transfer_set(transfer_set(), ReversingTeacher(), str(tmp_path), progress=False)
    rows = [(r["text_a"], r["label"]) for r in transfer_set().rows(0, 15)]
    assert shard_rows(paths) == [(a, len(a), int(label is not None)) for a, label in rows]
    manifest = json.loads((tmp_path / "transfer_set" / "manifest.json").read_text())
    assert manifest["size"] == 15 and manifest["teacher"] == "t1"


def test_a_stopped_labelling_resumes_at_the_first_shard_it_had_not_written(tmp_path):
    stopped = CountingTeacher(stop_after=5)  # In the middle of the third shard.
    with pytest.raises(KeyboardInterrupt):
        label_transfer_set(transfer_set(), stopped, str(tmp_path), progress=False)
    # What a killed writer leaves: a partial shard (an older version's
    # name, and the hidden random one `write_shard` writes now).
    (tmp_path / "transfer_set" / "shard-00002.tfrecord.partial").write_bytes(b"cut")
    (tmp_path / "transfer_set" / ".shard-00002.tfrecord.0f1e.partial").write_bytes(b"cut")
    resumed = CountingTeacher()
    paths = label_transfer_set(transfer_set(), resumed, str(tmp_path), progress=False)
    assert len(resumed.labelled) == 15 - 8
    assert shard_rows(paths) == shard_rows(
        label_transfer_set(transfer_set(), CountingTeacher(), str(tmp_path / "b"), progress=False)
    )
    assert not [p for p in os.listdir(tmp_path / "transfer_set") if p.endswith(".partial")]


class Clock:
    """A `time.time` that moves only when told: a batch labelled is a second."""

    def __init__(self):
        self.now = 0.0

    def time(self):
        return self.now


class TimedTeacher(CountingTeacher):
    def __init__(self, clock, stop_after=None):
        super().__init__(stop_after=stop_after)
        self.clock = clock

    def batch_outputs(self, rows, batch_size):
        for batch in super().batch_outputs(rows, batch_size):
            self.clock.now += 1.0
            yield batch


def test_a_resumed_labelling_costs_what_all_its_runs_spent_on_its_shards(tmp_path, monkeypatch):
    clock = Clock()
    monkeypatch.setattr("keras_bert.distillation.transfer_set.time", clock)
    with pytest.raises(KeyboardInterrupt):  # Two shards of two batches written.
        label_transfer_set(
            transfer_set(), TimedTeacher(clock, stop_after=5), str(tmp_path), progress=False
        )
    assert labelling_seconds(str(tmp_path)) == 4.0
    label_transfer_set(transfer_set(), TimedTeacher(clock), str(tmp_path), progress=False)
    # The other two shards' four batches; the stopped shard's one is lost.
    assert labelling_seconds(str(tmp_path)) == 8.0
    assert labelling_seconds(str(tmp_path / "never_labelled")) == 0.0


def test_the_same_set_and_teacher_label_nothing_and_another_labels_all(tmp_path):
    label_transfer_set(transfer_set(), CountingTeacher(), str(tmp_path), progress=False)
    again = CountingTeacher()
    label_transfer_set(transfer_set(batch_size=3), again, str(tmp_path), progress=False)
    assert again.labelled == []
    for changed_set, teacher in [
        (transfer_set(seed=1), CountingTeacher()),  # Other copies.
        (transfer_set(copies=1), CountingTeacher()),
        (transfer_set(mask_probability=0.5), CountingTeacher()),
        (transfer_set(replace_words="content"), CountingTeacher()),
        (transfer_set(masked_lm_context="sentence"), CountingTeacher()),
        (transfer_set(), CountingTeacher(fingerprint="t2")),
    ]:
        paths = label_transfer_set(changed_set, teacher, str(tmp_path), progress=False)
        assert len(teacher.labelled) == len(changed_set)
        assert len(shard_rows(paths)) == len(changed_set)
    assert sorted(os.listdir(tmp_path / "transfer_set")) == ["manifest.json"] + [
        f"shard-0000{i}.tfrecord" for i in range(4)
    ]


def test_a_shard_cut_short_damaged_or_unrecorded_is_labelled_again(tmp_path, caplog):
    # Issue 82 item 10: a shard cut in half failed training with a
    # DataLossError traceback, and so did every rerun.
    label_transfer_set(transfer_set(), CountingTeacher(), str(tmp_path), progress=False)
    folder = tmp_path / "transfer_set"
    cut, damaged, unrecorded = (folder / f"shard-0000{i}.tfrecord" for i in range(3))
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF  # The same size, another byte.
    damaged.write_bytes(bytes(data))
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["shards"][unrecorded.name]  # Killed between the shard and its record.
    (folder / "manifest.json").write_text(json.dumps(manifest))
    again = CountingTeacher()
    paths = label_transfer_set(transfer_set(), again, str(tmp_path), progress=False)
    assert len(again.labelled) == 3 * 4
    assert f"{cut.name}, {damaged.name}, {unrecorded.name} not as written" in caplog.text
    assert shard_rows(paths) == shard_rows(
        label_transfer_set(transfer_set(), CountingTeacher(), str(tmp_path / "b"), progress=False)
    )
    after = CountingTeacher()
    label_transfer_set(transfer_set(), after, str(tmp_path), progress=False)
    assert after.labelled == []


def test_a_transfer_set_that_is_a_file_is_one_line(tmp_path):
    (tmp_path / "transfer_set").write_text("mine")
    with pytest.raises(FinetuneError) as error:
        label_transfer_set(transfer_set(), CountingTeacher(), str(tmp_path), progress=False)
    assert str(error.value) == (
        f"{tmp_path / 'transfer_set'}: is a file, not a folder (the teacher's labels go "
        "there); move it away"
    )
    assert (tmp_path / "transfer_set").read_text() == "mine"


class SwallowingTeacher(CountingTeacher):
    """Sent Ctrl-C twice while it labels its second batch, where it drops
    the `KeyboardInterrupt`s as jaxlib's garbage-collection callback does."""

    def batch_outputs(self, rows, batch_size):
        for outputs in super().batch_outputs(rows, batch_size):
            if len(self.labelled) == 4 + batch_size:  # The second shard's first batch.
                for _ in range(2):
                    try:
                        os.kill(os.getpid(), signal.SIGINT)
                    except KeyboardInterrupt:
                        pass
            yield outputs


def test_ctrl_c_stops_the_labelling_at_the_next_batch_whoever_catches_it(tmp_path):
    # Issue 82 item 12: under JAX, Ctrl-C landed in jaxlib's callback and
    # labelling went on.
    handler = signal.getsignal(signal.SIGINT)
    teacher = SwallowingTeacher()
    with pytest.raises(KeyboardInterrupt):
        label_transfer_set(transfer_set(), teacher, str(tmp_path), progress=False)
    assert len(teacher.labelled) == 4 + 2
    assert sorted(os.listdir(tmp_path / "transfer_set")) == [
        "manifest.json",
        "shard-00000.tfrecord",
    ]
    assert signal.getsignal(signal.SIGINT) is handler


def test_a_labelling_over_its_time_limit_stops_after_its_first_shard(tmp_path, caplog):
    # Issue 79 item 8: no one starts a twenty-hour labelling by accident.
    caplog.set_level("INFO", "keras_bert.distill")
    limited = transfer_set(max_labelling_hours=1e-9)
    first = CountingTeacher()
    with pytest.raises(FinetuneError) as error:
        label_transfer_set(limited, first, str(tmp_path), progress=False)
    assert len(first.labelled) == 4  # One shard of the 15 sentences.
    assert "labelling the transfer set's 11 sentences left would take about" in str(error.value)
    assert "over distillation.transfer.max_labelling_hours=1e-09; the shard" in str(error.value)
    assert "\n" not in str(error.value)
    assert "Transfer set: 11 sentences left to label at" in caplog.text
    # A higher limit goes on from the shard kept: the limit is no part of
    # what the set is.
    rest = CountingTeacher()
    paths = label_transfer_set(transfer_set(), rest, str(tmp_path), progress=False)
    assert len(rest.labelled) == 11 and len(shard_rows(paths)) == 15
    # A set of one shard is labelled before any estimate could be made.
    single = transfer_set(copies=0, shard_size=8, max_labelling_hours=1e-9)
    label_transfer_set(single, CountingTeacher(), str(tmp_path / "single"), progress=False)


def test_without_copies_another_seed_labels_nothing(tmp_path):
    label_transfer_set(transfer_set(copies=0), CountingTeacher(), str(tmp_path), progress=False)
    again = CountingTeacher()
    label_transfer_set(transfer_set(copies=0, seed=1), again, str(tmp_path), progress=False)
    assert again.labelled == []


def test_text_files_give_a_sentence_a_pair_or_words_a_line(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text("one sentence\n\n  two  \n")
    assert read_text_file(str(path), "sentence") == [
        {"text_a": "one sentence", "text_b": None, "label": None},
        {"text_a": "two", "text_b": None, "label": None},
    ]
    assert read_text_file(str(path), "words") == [
        {"words": ["one", "sentence"], "labels": None},
        {"words": ["two"], "labels": None},
    ]
    path.write_text("a\tb\nc\td\n")
    assert [(r["text_a"], r["text_b"]) for r in read_text_file(str(path), "pair")] == [
        ("a", "b"),
        ("c", "d"),
    ]
    path.write_text("a\tb\nno tab\n")
    with pytest.raises(FinetuneError, match=r"text.txt:2: a sentence-pair task takes two"):
        read_text_file(str(path), "pair")
    path.write_text("\n \n")
    with pytest.raises(FinetuneError, match="holds no sentences"):
        read_text_file(str(path), "sentence")


def test_a_text_files_bom_is_dropped_and_bytes_not_utf8_name_their_line(tmp_path):
    # Issue 82 item 16: Notepad's BOM stayed in the first sentence.
    path = tmp_path / "text.txt"
    path.write_bytes(b"\xef\xbb\xbfone sentence\ntwo\n")
    assert [r["text_a"] for r in read_text_file(str(path), "sentence")] == ["one sentence", "two"]
    path.write_bytes(b"one\ncaf\xe9 au lait\n")
    with pytest.raises(FinetuneError) as error:
        read_text_file(str(path), "sentence")
    assert str(error.value) == (
        f"--text {path}: line 2 is not UTF-8 (byte 0xe9 at column 4); save the file as UTF-8"
    )


def test_text_files_are_paths_or_globs_that_name_a_file(tmp_path):
    for name in ("b.txt", "a.txt", "c.csv"):
        (tmp_path / name).write_text("x\n")
    assert expand_text_files([str(tmp_path / "*.txt"), str(tmp_path / "c.csv")]) == [
        str(tmp_path / "a.txt"),
        str(tmp_path / "b.txt"),
        str(tmp_path / "c.csv"),
    ]
    with pytest.raises(FinetuneError, match=r"\*.json: matches no file"):
        expand_text_files([str(tmp_path / "*.json")])
    with pytest.raises(FinetuneError, match="d.txt: no such file"):
        expand_text_files([str(tmp_path / "d.txt")])
