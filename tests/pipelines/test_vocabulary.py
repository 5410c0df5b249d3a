"""Vocabulary learning and `python -m keras_bert.vocab`."""

import glob
import os

import numpy as np
import pytest
import tensorflow as tf

import pipelines
from keras_bert import vocab as vocab_cli
from keras_bert.conversion.vocabulary import read_vocabulary
from keras_bert.errors import CheckpointError, ConfigError, ExportError
from keras_bert.pretraining import run_setup
from keras_bert.serving import CoreOpsBertTokenizer, serving_export
from tests.pipelines.common import CORPUS, VOCAB

pytestmark = pytest.mark.backend_independent

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
    argv = ["--input", str(tmp_path / "missing*.txt"), "--output", str(tmp_path / "v.txt")]
    assert vocab_cli.main(argv) == 2
    assert "missing*.txt" in capsys.readouterr().err


@pytest.mark.parametrize(
    "setup, extra, message",
    [
        (None, ["--vocab_size", "0"], "`vocab_size` must be an int >= 10 "),
        (None, ["--vocab_size", "3"], "Received: vocab_size=3"),
        ("folder", [], "--output {out}: is a folder, not a file"),
        ("under_file", [], "--output {out}: {tmp}/file is not an existing folder"),
        ("exists", [], "--output {out}: already exists; pass --overwrite to replace it"),
    ],
)
def test_vocab_cli_rejects_bad_arguments_before_learning(tmp_path, capsys, setup, extra, message):
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
        ["file"] if setup == "under_file" else ["vocab.txt"] if setup else []
    )
    if setup == "exists":
        assert output.read_text() == "mine"


def test_vocab_cli_full_disk_leaves_no_file(tmp_path, capsys, monkeypatch):
    from keras_bert import file_io

    class FullDisk(file_io._TextOrBytes):
        def write(self, data):
            super().write(data[: len(data) // 2])
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(file_io, "_TextOrBytes", FullDisk)
    output = tmp_path / "vocab.txt"
    output.write_text("mine")
    argv = ["--input", SMALL[0], "--output", str(output), "--vocab_size", "300", "--overwrite"]

    assert vocab_cli.main(argv) == 2

    # One error line, after the progress bar of the words counted.
    lines = capsys.readouterr().err.splitlines()
    assert (
        [l for l in lines if "error" in l]
        == lines[-1:]
        == [f"error: Cannot write {output}: No space left on device"]
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vocab.txt"]
    assert output.read_text() == "mine"


def test_vocab_size_is_a_maximum(tmp_path):
    # 300 CJK characters, each a word of its own: 605 tokens for the
    # alphabet alone, which the learner keeps whatever its target.
    chars = [chr(0x4E00 + i) for i in range(300)]
    (tmp_path / "cjk.txt").write_text(
        "\n".join(" ".join(chars[i:] + chars[:i]) for i in range(0, 300, 7)), encoding="utf-8"
    )
    tokens = pipelines.learn_vocabulary(str(tmp_path / "cjk.txt"), 200, min_count=2)
    assert len(tokens) <= 200 and tokens[:5] == list(pipelines.SPECIAL_TOKENS)


def test_cap_size_drops_the_rarest_pieces_keeps_characters():
    from pipelines.vocabulary_learner import _cap_size

    learned = list(pipelines.SPECIAL_TOKENS) + ["a", "b", "##", "##a", "the", "##b", "##ab", "ba"]
    assert _cap_size(learned, 11) == learned[:11]
    assert _cap_size(learned, 10) == learned[:9] + ["##b"]
    assert _cap_size(learned, 20) == learned


# Tests may run as root, whom chmod does not lock out: the refusals are faked.
def test_vocab_cli_unwritable_output(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(vocab_cli.os, "access", lambda path, mode: False)
    argv = ["--input", SMALL[0], "--output", str(tmp_path / "v.txt")]
    assert vocab_cli.main(argv) == 2
    assert capsys.readouterr().err == (
        f"error: --output {tmp_path}/v.txt: folder {tmp_path} is not writable\n"
    )


def test_word_counting_reports_bytes_read(tmp_path):
    calls = []
    pipelines.learn_vocabulary(SMALL, 500, progress=lambda *call: calls.append(call))
    total = sum(os.path.getsize(path) for path in SMALL)
    assert len(calls) >= 2 and calls[-1] == (total, total)
    assert all(t == total for _, t in calls)
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[0] > 0


def test_vocab_output_is_never_an_input_or_a_runs_file(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(open(SMALL[0], "rb").read())
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("task: sst2\n")
    (run / "vocab.txt").write_text("[PAD]\n")
    for output, message in [
        (corpus, f"is the input --input {corpus}"),
        (run / "vocab.txt", f"is vocab.txt of the run in {run}"),
    ]:
        argv = ["--input", str(tmp_path / "*.txt"), "--output", str(output), "--overwrite"]
        assert vocab_cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
    assert corpus.read_bytes() == open(SMALL[0], "rb").read()
    assert (run / "vocab.txt").read_text() == "[PAD]\n"


def test_vocab_to_dev_null_discards_and_leaves_the_device(tmp_path, capsys):
    # Issue 49, item 1: a rename over /dev/null would replace the device.
    import stat

    assert (
        vocab_cli.main(["--input", SMALL[0], "--output", "/dev/null", "--vocab_size", "300"]) == 0
    )
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert "Wrote" in capsys.readouterr().out


# Every reader of a vocabulary file (issue 67: one decoding for every text
# file), with the error it raises.
VOCABULARY_READERS = {
    "load_vocabulary": (pipelines.load_vocabulary, pipelines.VocabularyError),
    "convert": (lambda path: read_vocabulary(path)[0], CheckpointError),
    "pretrain": (run_setup._read_vocabulary, ConfigError),
    "export": (serving_export._read_vocabulary, ExportError),
    "serving_tokenizer": (lambda path: CoreOpsBertTokenizer(path).vocabulary, ExportError),
}


@pytest.mark.parametrize("read, error", VOCABULARY_READERS.values(), ids=VOCABULARY_READERS)
def test_every_vocabulary_reader_reads_a_byte_order_mark(tmp_path, read, error):
    # Issue 67 item 10: "lacks the special token(s) [PAD]", or "\ufeff[PAD]"
    # as token 0 of a model's vocabulary.
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"\xef\xbb\xbf" + open(VOCAB, "rb").read())
    assert read(str(path)) == read(VOCAB)


@pytest.mark.parametrize("read, error", VOCABULARY_READERS.values(), ids=VOCABULARY_READERS)
def test_every_vocabulary_reader_names_the_line_that_is_not_utf8(tmp_path, read, error):
    lines = open(VOCAB, "rb").read().split(b"\n")
    lines[20000] = b"caf\xe9"  # Latin-1, far past the first piece decoded.
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(error) as raised:
        read(str(path))
    assert str(raised.value) == (
        f"{path}: line 20001 is not UTF-8 (byte 0xe9 at column 4); save the file as UTF-8"
    )
