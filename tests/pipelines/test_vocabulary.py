"""Vocabulary learning and the two command-line entry points."""

import glob
import os

import numpy as np
import pytest
import tensorflow as tf

import pipelines
from keras_bert import data as data_cli
from keras_bert import vocab as vocab_cli
from pipelines import corpus
from tests.pipelines.common import CORPUS, VOCAB

SMALL = sorted(glob.glob(os.path.join(CORPUS, "inaugural", "19*.txt")))[:4]


def test_learn_vocabulary_cli(tmp_path, capsys):
    output = tmp_path / "vocab.txt"
    argv = ["--output", str(output), "--vocab_size", "500"]
    for path in SMALL:
        argv += ["--input", path]
    assert vocab_cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert "Wrote" in out and "1/1" in err  # Megabytes read, on stderr.
    tokens = pipelines.load_vocabulary(str(output))
    assert tokens[:5] == list(pipelines.SPECIAL_TOKENS)
    assert 250 <= len(tokens) <= 500
    assert any(t.startswith("##") for t in tokens)
    tokenizer = pipelines.BertTokenizer(str(output))
    text = tf.constant(open(SMALL[0], encoding="utf-8").read().splitlines())
    ids = tokenizer(text).flat_values.numpy()
    # Every character of the corpus is in the alphabet, so no [UNK].
    assert np.mean(ids == tokenizer.unk_id) < 0.001
    # Pieces, not whole words: more ids than with the 30k vocabulary.
    assert len(ids) > len(pipelines.BertTokenizer(VOCAB)(text).flat_values)


def test_vocab_cli_reports_bad_input(tmp_path, capsys):
    argv = ["--input", str(tmp_path / "missing*.txt"), "--output",
            str(tmp_path / "v.txt")]
    assert vocab_cli.main(argv) == 2
    assert "missing*.txt" in capsys.readouterr().err


def test_data_cli_writes_shards(tmp_path, capsys):
    argv = ["--input", SMALL[0], "--input", SMALL[1], "--output_dir",
            str(tmp_path), "--vocab", VOCAB, "--corpus_format", "text",
            "--num_shards", "2"]
    assert data_cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert "Wrote 2 documents" in out and "2/2" in err  # Files, on stderr.
    assert sorted(os.listdir(tmp_path)) == [
        "metadata.json", "part-00000-of-00002.tfrecord",
        "part-00001-of-00002.tfrecord"]
    argv = ["--input", SMALL[0], "--output_dir", str(tmp_path), "--vocab",
            str(tmp_path / "nope.txt")]
    assert data_cli.main(argv) == 2
    assert "nope.txt" in capsys.readouterr().err


def _data_argv(output_dir, *extra):
    return ["--input", SMALL[0], "--output_dir", str(output_dir), "--vocab",
            VOCAB, "--corpus_format", "text", *extra]


@pytest.mark.parametrize("setup, extra, message", [
    ("new", ["--num_shards", "0"],
     "`num_shards` must be a positive integer. Received: num_shards=0"),
    ("new", ["--num_shards", "-3"],
     "`num_shards` must be a positive integer. Received: num_shards=-3"),
    ("file", [], "`output_dir` is a file, not a folder."),
    ("full", [], "`output_dir` must be new or empty; it holds metadata.json, "
     "part-00000-of-00001.tfrecord."),
    ("interrupted", [], "`output_dir` holds shards but no metadata.json (left by "
     "a run that was stopped?); delete them or pick another folder."),
    ("under_file", [], "`output_dir` cannot be written: "),
])
def test_data_cli_rejects_bad_output(tmp_path, capsys, setup, extra, message):
    output = tmp_path / "out"
    if setup == "under_file":
        (tmp_path / "file").write_text("mine")
        output = tmp_path / "file" / "out"
    if setup == "file":
        output.write_text("mine")
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
    argv = ["--input", str(corpus_dir / "*.txt"), "--output_dir",
            str(tmp_path / "out"), "--vocab", VOCAB, "--corpus_format", "text"]
    assert data_cli.main(argv) == 2
    assert capsys.readouterr().err.startswith(
        "error: Every corpus file matching")
    # Past the size up to which files are checked for blankness, the
    # tokenizer finds no document: refused too, and no shard is left.
    monkeypatch.setattr(corpus, "_BLANK_CHECK_BYTES", 0)
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


@pytest.mark.parametrize("error, raised", [
    (KeyboardInterrupt(), KeyboardInterrupt),
    (OSError(28, "No space left on device"), pipelines.CorpusError),
])
def test_stopped_shard_writing_leaves_nothing(tmp_path, error, raised):
    with pytest.raises(raised) as caught:
        corpus.write_tfrecord_shards(SMALL, str(tmp_path), VOCAB,
                                     corpus_format="text", num_shards=2,
                                     progress=_stop_after_two_files(error))
    if raised is pipelines.CorpusError:
        assert str(caught.value) == (f"Writing shards in {str(tmp_path)!r} failed, "
                                     "none kept: No space left on device")
    assert os.listdir(tmp_path) == []
    # The same command then runs.
    info = corpus.write_tfrecord_shards(SMALL, str(tmp_path), VOCAB,
                                        corpus_format="text", num_shards=2)
    assert info["documents"] == len(SMALL)


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
    with pytest.raises(pipelines.CorpusError,
                       match="part-00000-of-00001.tfrecord' is not one of"):
        corpus.check_tfrecord_vocabulary(files, VOCAB)
    corpus.check_tfrecord_vocabulary(files[1:], VOCAB)
    with pytest.raises(pipelines.CorpusError, match="written with vocabulary"):
        corpus.check_tfrecord_vocabulary(files[1:], str(other_vocab))
    os.remove(tmp_path / "b" / "metadata.json")
    with pytest.raises(pipelines.CorpusError, match="has no metadata.json"):
        corpus.check_tfrecord_vocabulary(
            [str(tmp_path / "b" / stray.name)], str(other_vocab))


@pytest.mark.parametrize("setup, extra, message", [
    (None, ["--vocab_size", "0"], "`vocab_size` must be an int >= 10 "),
    (None, ["--vocab_size", "3"], "Received: vocab_size=3"),
    ("folder", [], "--output {out}: is a folder, not a file"),
    ("under_file", [], "--output {out}: {tmp}/file is not an existing folder"),
    ("exists", [], "--output {out}: already exists; pass --overwrite to replace it"),
])
def test_vocab_cli_rejects_bad_arguments_before_learning(tmp_path, capsys, setup,
                                                         extra, message):
    output = tmp_path / "vocab.txt"
    if setup == "folder":
        output.mkdir()
    elif setup == "exists":
        output.write_text("mine")
    elif setup == "under_file":
        (tmp_path / "file").write_text("mine")
        output = tmp_path / "file" / "vocab.txt"
    argv = ["--input", SMALL[0], "--output", str(output), *extra]

    assert vocab_cli.main(argv) == 2

    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert message.format(out=output, tmp=tmp_path) in err
    assert sorted(p.name for p in tmp_path.iterdir()) == (
        ["file"] if setup == "under_file" else ["vocab.txt"] if setup else [])
    if setup == "exists":
        assert output.read_text() == "mine"


def test_vocab_cli_full_disk_leaves_no_file(tmp_path, capsys, monkeypatch):
    class FullDisk(tf.io.gfile.GFile):
        def write(self, data):
            super().write(data[:len(data) // 2])
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(pipelines.vocabulary.tf.io.gfile, "GFile", FullDisk)
    output = tmp_path / "vocab.txt"
    output.write_text("mine")
    argv = ["--input", SMALL[0], "--output", str(output), "--vocab_size", "300",
            "--overwrite"]

    assert vocab_cli.main(argv) == 2

    # One error line, after the progress bar of the words counted.
    lines = capsys.readouterr().err.splitlines()
    assert [l for l in lines if "error" in l] == lines[-1:] == [
        f"error: Cannot write {output}: No space left on device"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vocab.txt"]
    assert output.read_text() == "mine"


def test_vocab_size_is_a_maximum(tmp_path):
    # 300 CJK characters, each a word of its own: 605 tokens for the
    # alphabet alone, which the learner keeps whatever its target.
    chars = [chr(0x4E00 + i) for i in range(300)]
    (tmp_path / "cjk.txt").write_text(
        "\n".join(" ".join(chars[i:] + chars[:i]) for i in range(0, 300, 7)),
        encoding="utf-8")
    tokens = pipelines.learn_vocabulary(str(tmp_path / "cjk.txt"), 200,
                                        min_count=2)
    assert len(tokens) <= 200 and tokens[:5] == list(pipelines.SPECIAL_TOKENS)


def test_cap_size_drops_the_rarest_pieces_keeps_characters():
    from pipelines.vocabulary import _cap_size

    learned = list(pipelines.SPECIAL_TOKENS) + [
        "a", "b", "##", "##a", "the", "##b", "##ab", "ba"]
    assert _cap_size(learned, 11) == learned[:11]
    assert _cap_size(learned, 10) == learned[:9] + ["##b"]
    assert _cap_size(learned, 20) == learned


# Tests may run as root, whom chmod does not lock out: the refusals are faked.
def test_vocab_cli_unwritable_output(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(vocab_cli.os, "access", lambda path, mode: False)
    argv = ["--input", SMALL[0], "--output", str(tmp_path / "v.txt")]
    assert vocab_cli.main(argv) == 2
    assert capsys.readouterr().err == (
        f"error: --output {tmp_path}/v.txt: folder {tmp_path} is not writable\n")


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
    info = corpus.write_tfrecord_shards(
        SMALL, str(tmp_path), VOCAB, corpus_format="text", num_shards=2,
        progress=lambda done, total: calls.append((done, total)))
    assert calls == [(i, len(SMALL)) for i in range(1, len(SMALL) + 1)]
    assert info["documents"] == len(SMALL)  # A document a file.


def test_word_counting_reports_bytes_read(tmp_path):
    calls = []
    pipelines.learn_vocabulary(SMALL, 500, progress=lambda *call: calls.append(call))
    total = sum(os.path.getsize(path) for path in SMALL)
    assert len(calls) >= 2 and calls[-1] == (total, total)
    assert all(t == total for _, t in calls)
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[0] > 0
