"""Vocabulary learning and the two command-line entry points."""

import glob
import os

import numpy as np
import tensorflow as tf

import pipelines
from keras_bert import data as data_cli
from keras_bert import vocab as vocab_cli
from tests.pipelines.common import CORPUS, VOCAB

SMALL = sorted(glob.glob(os.path.join(CORPUS, "inaugural", "19*.txt")))[:4]


def test_learn_vocabulary_cli(tmp_path, capsys):
    output = tmp_path / "vocab.txt"
    argv = ["--output", str(output), "--vocab_size", "500"]
    for path in SMALL:
        argv += ["--input", path]
    assert vocab_cli.main(argv) == 0
    assert "Wrote" in capsys.readouterr().out
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
    assert "Wrote 2 documents" in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path)) == [
        "metadata.json", "part-00000-of-00002.tfrecord",
        "part-00001-of-00002.tfrecord"]
    argv = ["--input", SMALL[0], "--output_dir", str(tmp_path), "--vocab",
            str(tmp_path / "nope.txt")]
    assert data_cli.main(argv) == 2
    assert "nope.txt" in capsys.readouterr().err
