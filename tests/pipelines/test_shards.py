"""TFRecord shards: `pipelines.shards` and `python -m keras_bert.data`."""

import glob
import os

import pytest
import tensorflow as tf

import pipelines
from keras_bert import data as data_cli
from pipelines import corpus_files, shards
from tests.pipelines.common import CORPUS, VOCAB

pytestmark = pytest.mark.backend_independent

SMALL = sorted(glob.glob(os.path.join(CORPUS, "inaugural", "19*.txt")))[:4]


def test_data_cli_writes_shards(tmp_path, capsys):
    argv = [
        "--input",
        SMALL[0],
        "--input",
        SMALL[1],
        "--output_dir",
        str(tmp_path),
        "--vocab",
        VOCAB,
        "--corpus_format",
        "text",
        "--num_shards",
        "2",
    ]
    assert data_cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert "Wrote 2 documents" in out and "2/2" in err  # Files, on stderr.
    assert sorted(os.listdir(tmp_path)) == [
        "metadata.json",
        "part-00000-of-00002.tfrecord",
        "part-00001-of-00002.tfrecord",
    ]
    argv = [
        "--input",
        SMALL[0],
        "--output_dir",
        str(tmp_path),
        "--vocab",
        str(tmp_path / "nope.txt"),
    ]
    assert data_cli.main(argv) == 2
    assert "nope.txt" in capsys.readouterr().err


def _data_argv(output_dir, *extra):
    return [
        "--input",
        SMALL[0],
        "--output",
        str(output_dir),
        "--vocab",
        VOCAB,
        "--corpus_format",
        "text",
        *extra,
    ]


@pytest.mark.parametrize(
    "setup, extra, message",
    [
        (
            "new",
            ["--num_shards", "0"],
            "`num_shards` must be a positive integer. Received: num_shards=0",
        ),
        (
            "new",
            ["--num_shards", "-3"],
            "`num_shards` must be a positive integer. Received: num_shards=-3",
        ),
        ("file", [], "`output_dir` is a file, not a folder."),
        (
            "full",
            [],
            "`output_dir` must be new or empty (--overwrite replaces the shards of an "
            "earlier run); it holds metadata.json, part-00000-of-00001.tfrecord.",
        ),
        (
            "interrupted",
            [],
            "`output_dir` holds shards but no metadata.json (left by "
            "a run that was stopped?); pass --overwrite to replace them or pick another folder.",
        ),
        ("under_file", [], "`output_dir` cannot be written: "),
        (
            "foreign",
            ["--overwrite"],
            "`output_dir` holds notes.txt, which are not shards this command wrote: "
            "not replaced, even with --overwrite",
        ),
    ],
)
def test_data_cli_rejects_bad_output(tmp_path, capsys, setup, extra, message):
    output = tmp_path / "out"
    if setup == "under_file":
        (tmp_path / "file").write_text("mine")
        output = tmp_path / "file" / "out"
    if setup == "file":
        output.write_text("mine")
    elif setup == "foreign":
        output.mkdir()
        (output / "metadata.json").write_text("{}")
        (output / "notes.txt").write_text("mine")
    elif setup in ("full", "interrupted"):
        output.mkdir()
        (output / "part-00000-of-00001.tfrecord").write_text("mine")
        if setup == "full":
            (output / "metadata.json").write_text("{}")
    before = sorted(map(str, tmp_path.rglob("*")))

    assert data_cli.main(_data_argv(output, *extra)) == 2

    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1
    assert f"output_dir={str(output)!r}" in err or setup == "new"
    assert sorted(map(str, tmp_path.rglob("*"))) == before


def test_text_that_tokenizes_to_nothing_is_refused(tmp_path, capsys, monkeypatch):
    corpus_dir = tmp_path / "corpus"
    corpus_dir.mkdir()
    for i in range(2):
        (corpus_dir / f"d{i}.txt").write_text(("\u200b" * 40 + "\n") * 10)
    argv = [
        "--input",
        str(corpus_dir / "*.txt"),
        "--output_dir",
        str(tmp_path / "out"),
        "--vocab",
        VOCAB,
        "--corpus_format",
        "text",
    ]
    assert data_cli.main(argv) == 2
    assert capsys.readouterr().err.startswith("error: Every corpus file matching")
    # Past the size up to which files are checked for blankness, the
    # tokenizer finds no document: refused too, and no shard is left.
    monkeypatch.setattr(corpus_files, "_BLANK_CHECK_BYTES", 0)
    assert data_cli.main(argv) == 2
    # After the progress bar (both files were read): the error's own line.
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("error: No document in 2 corpus file(s)")
    assert os.listdir(tmp_path / "out") == []


def _stop_after_two_files(error):
    """A `progress` callback that raises `error` once two files are written."""

    def progress(done, total):
        if done == 2:
            raise error

    return progress


@pytest.mark.parametrize(
    "error, raised",
    [
        (KeyboardInterrupt(), KeyboardInterrupt),
        (OSError(28, "No space left on device"), pipelines.CorpusError),
    ],
)
def test_stopped_shard_writing_leaves_nothing(tmp_path, error, raised):
    with pytest.raises(raised) as caught:
        shards.write_tfrecord_shards(
            SMALL,
            str(tmp_path),
            VOCAB,
            corpus_format="text",
            num_shards=2,
            progress=_stop_after_two_files(error),
        )
    if raised is pipelines.CorpusError:
        assert str(caught.value) == (
            f"Writing shards in {str(tmp_path)!r} failed, none kept: No space left on device"
        )
    assert os.listdir(tmp_path) == []
    # The same command then runs.
    info = shards.write_tfrecord_shards(
        SMALL, str(tmp_path), VOCAB, corpus_format="text", num_shards=2
    )
    assert info["documents"] == len(SMALL)


def _folder(path):
    return {name: (path / name).read_bytes() for name in sorted(os.listdir(path))}


def test_overwrite_replaces_an_earlier_run_once_the_new_one_is_complete(tmp_path, capsys):
    output = tmp_path / "out"
    assert data_cli.main(_data_argv(output, "--num_shards", "3")) == 0
    earlier = _folder(output)
    # Stopped while tokenizing: the earlier run's shards are all still there.
    with pytest.raises(KeyboardInterrupt):
        shards.write_tfrecord_shards(
            SMALL,
            str(output),
            VOCAB,
            corpus_format="text",
            num_shards=2,
            progress=_stop_after_two_files(KeyboardInterrupt()),
            overwrite=True,
        )
    assert _folder(output) == earlier
    # A shard that is a link to a folder outside (issue 67 item 2): the
    # link goes, its target stays.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    os.remove(output / "part-00002-of-00003.tfrecord")
    (output / "part-00002-of-00003.tfrecord").symlink_to(outside)
    # Completed: two shards replace the three, and they read back whole.
    capsys.readouterr()
    argv = _data_argv(output, "--num_shards", "2", "--overwrite")
    argv[argv.index(SMALL[0])] = os.path.join(CORPUS, "inaugural", "19*.txt")
    assert data_cli.main(argv) == 0
    assert sorted(os.listdir(output)) == [
        "metadata.json",
        "part-00000-of-00002.tfrecord",
        "part-00001-of-00002.tfrecord",
    ]
    assert os.listdir(outside) == ["keep.txt"]
    files = pipelines.list_files(str(output / "*.tfrecord"), "tfrecord")
    shards.check_tfrecord_vocabulary(files, VOCAB)
    written = int(capsys.readouterr().out.split("Wrote ")[1].split()[0])
    assert sum(1 for _ in tf.data.TFRecordDataset(files)) == written > 1


def test_shards_are_never_staged_through_a_planted_link(tmp_path):
    # Issue 82 item 3: the staging folder had a fixed name, `.partial`; a
    # link planted there had TensorFlow's rmtree empty its target and the
    # shards written into it.
    victim = tmp_path / "outside"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    output = tmp_path / "out"
    assert data_cli.main(_data_argv(output, "--num_shards", "1")) == 0
    (output / ".partial").symlink_to(victim)
    (output / ".partial-0").mkdir()  # What a killed run leaves.
    (output / ".partial-0" / "part-00000-of-00001.tfrecord").write_text("cut")
    info = shards.write_tfrecord_shards(
        SMALL, str(output), VOCAB, corpus_format="text", num_shards=2, overwrite=True
    )
    assert os.listdir(victim) == ["keep.txt"]
    assert (victim / "keep.txt").read_text() == "mine"
    assert sorted(os.listdir(output)) == [  # The link unlinked, the leftover gone.
        "metadata.json",
        "part-00000-of-00002.tfrecord",
        "part-00001-of-00002.tfrecord",
    ]
    assert sum(1 for _ in tf.data.TFRecordDataset(info["shards"])) == len(SMALL)


def test_every_shard_is_checked_against_the_vocabulary(tmp_path):
    other_vocab = tmp_path / "other_vocab.txt"
    other_vocab.write_text(open(VOCAB, encoding="utf-8").read() + "zzz\n")
    assert data_cli.main(_data_argv(tmp_path / "a", "--num_shards", "2")) == 0
    argv = _data_argv(tmp_path / "b", "--num_shards", "1")
    argv[argv.index(VOCAB)] = str(other_vocab)
    assert data_cli.main(argv) == 0
    # A shard of the other vocabulary dropped among the first run's ones.
    stray = tmp_path / "a" / "part-00000-of-00001.tfrecord"
    stray.write_bytes((tmp_path / "b" / stray.name).read_bytes())
    files = pipelines.list_files(str(tmp_path / "a" / "*.tfrecord"), "tfrecord")

    assert files[0] == str(stray)
    with pytest.raises(pipelines.CorpusError, match="part-00000-of-00001.tfrecord' is not one of"):
        shards.check_tfrecord_vocabulary(files, VOCAB)
    shards.check_tfrecord_vocabulary(files[1:], VOCAB)
    with pytest.raises(pipelines.CorpusError, match="written with vocabulary"):
        shards.check_tfrecord_vocabulary(files[1:], str(other_vocab))
    os.remove(tmp_path / "b" / "metadata.json")
    with pytest.raises(pipelines.CorpusError, match="has no metadata.json"):
        shards.check_tfrecord_vocabulary([str(tmp_path / "b" / stray.name)], str(other_vocab))


def test_data_cli_unwritable_output(tmp_path, capsys, monkeypatch):
    def refuse(path):
        raise tf.errors.PermissionDeniedError(None, None, f"{path}; Permission denied")

    monkeypatch.setattr(tf.io, "TFRecordWriter", refuse)
    assert data_cli.main(_data_argv(tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: `output_dir` cannot be written: ")
    assert "Permission denied" in err and err.count("\n") == 1


def test_shard_writing_reports_each_file_in_order(tmp_path):
    calls = []
    info = shards.write_tfrecord_shards(
        SMALL,
        str(tmp_path),
        VOCAB,
        corpus_format="text",
        num_shards=2,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls == [(i, len(SMALL)) for i in range(1, len(SMALL) + 1)]
    assert info["documents"] == len(SMALL)  # A document a file.
