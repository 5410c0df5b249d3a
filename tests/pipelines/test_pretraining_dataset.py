"""`pipelines.pretraining_dataset`: contract, determinism, pairs, bad input."""

import glob
import logging
import os
import re

import numpy as np
import pytest
import tensorflow as tf

import pipelines
from pipelines import corpus, corpus_files
from pipelines.pretraining import PACK_PIECE_TOKENS, _packed_sequences
from tests.pipelines.common import CORPUS, VOCAB

pytestmark = pytest.mark.backend_independent

CLS, SEP, PAD = 101, 102, 0
SOURCES = sorted(glob.glob(os.path.join(CORPUS, "inaugural", "18*.txt")))[:12]


def _sentences(text):
    text = re.sub(r"\s+", " ", text)
    return [s for s in re.split(r"(?<=[.!?]) ", text) if s.strip()]


@pytest.fixture(scope="module")
def sentence_corpus(tmp_path_factory):
    """Two files in the original format, 6 documents each."""
    root = tmp_path_factory.mktemp("sentences")
    documents = []
    for i in range(2):
        with open(root / f"part-{i}.txt", "w", encoding="utf-8") as f:
            for path in SOURCES[6 * i : 6 * i + 6]:
                doc = _sentences(open(path, encoding="utf-8").read())
                documents.append(doc)
                f.write("\n".join(doc) + "\n\n")
    return str(root / "*.txt"), documents


def _dataset(pattern, **kwargs):
    kwargs.setdefault("seed", 0)
    kwargs.setdefault("batch_size", 16)
    return pipelines.pretraining_dataset(pattern, VOCAB, **kwargs)


def _take(ds, n):
    return [tf.nest.map_structure(lambda t: t.numpy(), b) for b in ds.take(n)]


def _unmask(features, labels, weights):
    ids = features["token_ids"].copy()
    rows, cols = np.nonzero(weights["mlm"])
    ids[rows, features["mask_positions"][rows, cols]] = labels["mlm"][rows, cols]
    return ids


def test_contract(sentence_corpus):
    pattern, _ = sentence_corpus
    ds = _dataset(pattern, seq_len=64, max_predictions=10, batch_size=8)
    features, labels, weights = ds.element_spec
    expected = {
        "token_ids": ([8, 64], tf.int32),
        "segment_ids": ([8, 64], tf.int32),
        "padding_mask": ([8, 64], tf.bool),
        "mask_positions": ([8, 10], tf.int32),
    }
    assert {k: (v.shape.as_list(), v.dtype) for k, v in features.items()} == expected
    assert {k: (v.shape.as_list(), v.dtype) for k, v in labels.items()} == {
        "mlm": ([8, 10], tf.int32),
        "nsp": ([8], tf.int32),
    }
    assert {k: (v.shape.as_list(), v.dtype) for k, v in weights.items()} == {
        "mlm": ([8, 10], tf.float32)
    }
    for f, l, w in _take(ds, 5):
        ids = _unmask(f, l, w)
        assert (ids[:, 0] == CLS).all()
        np.testing.assert_array_equal(f["padding_mask"], ids != PAD)
        assert ((ids == SEP).sum(axis=1) == 2).all()
        assert set(np.unique(l["nsp"])) <= {0, 1}
        assert set(np.unique(f["segment_ids"])) <= {0, 1}
        assert (f["segment_ids"][~f["padding_mask"]] == 0).all()
        assert (w["mlm"].sum(axis=1) >= 1).all()


def test_same_seed_same_batches(sentence_corpus):
    pattern, _ = sentence_corpus
    first = _take(_dataset(pattern, seed=7), 3)
    second = _take(_dataset(pattern, seed=7), 3)
    for a, b in zip(tf.nest.flatten(first), tf.nest.flatten(second)):
        np.testing.assert_array_equal(a, b)
    other = _take(_dataset(pattern, seed=8), 3)
    assert not np.array_equal(other[0][0]["token_ids"], first[0][0]["token_ids"])


def test_is_next_b_follows_a_in_source(sentence_corpus, tokenizer):
    pattern, documents = sentence_corpus
    streams = []
    for doc in documents:
        ids = tokenizer(tf.constant(doc)).flat_values.numpy().astype(np.int32)
        streams.append(ids.tobytes())

    def locate(segment):
        """(document, token offset) of a contiguous run, or None."""
        needle = np.asarray(segment, np.int32).tobytes()
        for d, stream in enumerate(streams):
            at = stream.find(needle)
            while at != -1 and at % 4:
                at = stream.find(needle, at + 1)
            if at != -1:
                return d, at // 4
        return None

    nsp = []
    for f, l, w in _take(_dataset(pattern, repeat=False), 10):
        ids = _unmask(f, l, w)
        for row, label in zip(ids, l["nsp"]):
            seps = np.flatnonzero(row == SEP)
            a, b = row[1 : seps[0]], row[seps[0] + 1 : seps[1]]
            where_a, where_b = locate(a), locate(b)
            assert where_a is not None and where_b is not None
            if label == 0:
                assert where_a[0] == where_b[0]
                assert where_a[1] + len(a) <= where_b[1]
            nsp.append(label)
    assert 0 < np.mean(nsp) < 1


def test_next_sentence_rate_on_bundled_corpus():
    ds = _dataset(
        os.path.join(CORPUS, "*", "*.txt"), corpus_format="text", batch_size=64, seq_len=128
    )
    labels = np.concatenate([l["nsp"] for _, l, _ in _take(ds, 40)])
    # NotNext is forced for one-sentence chunks, so slightly above 1/2.
    assert abs(labels.mean() - 0.5) < 0.06, labels.mean()


def test_finite_without_repeat_and_sharding(sentence_corpus, tokenizer):
    pattern, documents = sentence_corpus
    files = corpus_files.list_files(pattern)
    seen = []
    for pipeline_id in range(2):
        context = tf.distribute.InputContext(2, pipeline_id, 1)
        docs = corpus.documents_dataset(files, tokenizer, input_context=context, shuffle=False)
        seen.append({tuple(d.flat_values.numpy()[:8]) for d in docs})
    assert not seen[0] & seen[1]
    assert len(seen[0] | seen[1]) == len(documents)
    batches = list(_dataset(pattern, repeat=False, batch_size=8))
    assert 0 < len(batches) < 1000


def test_repeat_crosses_epochs_but_ends_on_a_corpus_without_documents(
    sentence_corpus, tokenizer, tmp_path
):
    pattern, documents = sentence_corpus
    docs = corpus.documents_dataset(corpus_files.list_files(pattern), tokenizer, repeat=True)
    assert len(list(docs.take(3 * len(documents)))) == 3 * len(documents)
    blank = tmp_path / "blank.txt"  # Over the size that list_files reads.
    blank.write_text(("\u200b" * 100 + "\n") * 4000)
    docs = corpus.documents_dataset([str(blank)], tokenizer, repeat=True)
    with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(corpus.NO_DOCUMENT)):
        next(iter(docs))


def test_text_format_and_sentence_split(tmp_path):
    text = (
        'Mr. Smith went to Washington. He said: "Hello!" Then he left?\n'
        "Yes.\n\nA new paragraph starts here\nand goes on."
    )
    sentences = corpus.split_sentences(tf.constant([text]))[0].numpy().tolist()
    assert sentences == [
        b"Mr.\x01Smith went to Washington.",
        b'He said: "Hello!"',
        b"Then he left?",
        b"Yes.",
        b"A new paragraph starts here\nand goes on.",
    ]
    path = tmp_path / "doc.txt"
    path.write_text(text * 20)
    f, _, _ = _take(_dataset(str(path), corpus_format="text", batch_size=4), 1)[0]
    assert f["token_ids"].shape == (4, 128)


def test_tfrecord_shards_round_trip(sentence_corpus, tokenizer, tmp_path):
    pattern, documents = sentence_corpus
    info = pipelines.write_tfrecord_shards(pattern, str(tmp_path), VOCAB, num_shards=3)
    assert info["documents"] == len(documents)
    from_text = corpus.documents_dataset(corpus_files.list_files(pattern), tokenizer, shuffle=False)
    from_shards = corpus.documents_dataset(
        corpus_files.list_files(str(tmp_path / "*.tfrecord"), "tfrecord"),
        tokenizer,
        corpus_format="tfrecord",
        shuffle=False,
    )
    key = lambda d: d.to_list()  # noqa: E731
    assert sorted(map(key, from_text)) == sorted(map(key, from_shards))
    ds = _dataset(str(tmp_path / "*.tfrecord"), corpus_format="tfrecord")
    f, l, w = _take(ds, 1)[0]
    assert f["token_ids"].shape == (16, 128)
    # Shards remember their vocabulary.
    other_vocab = tmp_path / "vocab.txt"
    other_vocab.write_text(open(VOCAB, encoding="utf-8").read() + "zzzextrazzz\n")
    with pytest.raises(pipelines.CorpusError, match="vocab"):
        pipelines.pretraining_dataset(
            str(tmp_path / "*.tfrecord"), str(other_vocab), corpus_format="tfrecord"
        )


def test_split_files():
    pattern = os.path.join(CORPUS, "*", "*.txt")
    train, heldout = pipelines.split_files(pattern, 0.1, seed=0)
    assert set(train).isdisjoint(heldout)
    assert sorted(train + heldout) == corpus_files.list_files(pattern)
    size = {f: os.path.getsize(f) for f in train + heldout}
    held, total = sum(size[f] for f in heldout), sum(size.values())
    # By size: within half a file of 10% of the bytes.
    assert abs(held - 0.1 * total) <= max(size[f] for f in heldout) / 2
    assert pipelines.split_files(pattern, 0.1, seed=0) == (train, heldout)
    assert pipelines.split_files(pattern, 0.1, seed=1)[1] != heldout


@pytest.mark.parametrize("seed", range(6))
def test_split_holds_out_the_small_file_never_the_majority(seed, tmp_path, caplog):
    (tmp_path / "a.txt").write_text("a large document .\n" * 950)
    (tmp_path / "b.txt").write_text("a small document .\n" * 50)
    with caplog.at_level(logging.INFO):
        train, heldout = pipelines.split_files(str(tmp_path / "*.txt"), 0.05, seed=seed)
    assert (train, heldout) == ([str(tmp_path / "a.txt")], [str(tmp_path / "b.txt")])
    assert "Held-out split: 1 of 2 files (950 bytes, 5.0%) held out" in caplog.text


def _documents(files, tokenizer, corpus_format):
    docs = corpus.documents_dataset(
        corpus_files.list_files(files, corpus_format),
        tokenizer,
        corpus_format=corpus_format,
        shuffle=False,
    )
    return [d.flat_values.numpy().tolist() for d in docs]


def test_split_single_file_holds_out_a_seeded_stretch_of_lines(tmp_path, tokenizer, caplog):
    path = str(tmp_path / "reviews.txt")
    with open(path, "w") as f:
        f.writelines(f"review {i} says the film was good .\n" for i in range(400))
    with caplog.at_level(logging.INFO):
        train, heldout = pipelines.split_files(path, 0.1, seed=0, corpus_format="lines")
    assert "a stretch of each of 1 file(s) is held out" in caplog.text
    assert pipelines.split_files(path, 0.1, seed=0, corpus_format="lines") == (train, heldout)
    assert pipelines.split_files(path, 0.1, seed=1, corpus_format="lines") != (train, heldout)
    everything = _documents(path, tokenizer, "lines")
    train_docs = _documents(train, tokenizer, "lines")
    heldout_docs = _documents(heldout, tokenizer, "lines")
    # Whole lines, none in both, none lost; one contiguous tenth held out.
    assert sorted(train_docs + heldout_docs) == sorted(everything)
    assert len(heldout_docs) == 40
    start = everything.index(heldout_docs[0])
    assert everything[start : start + 40] == heldout_docs


def test_split_of_two_equal_tfrecord_shards_holds_out_records(sentence_corpus, tokenizer, tmp_path):
    pipelines.write_tfrecord_shards(sentence_corpus[0], str(tmp_path), VOCAB, num_shards=2)
    pattern = str(tmp_path / "*.tfrecord")
    train, heldout = pipelines.split_files(pattern, 0.2, corpus_format="tfrecord")
    assert all(isinstance(f, corpus_files.FileRange) for f in train + heldout)
    everything = _documents(pattern, tokenizer, "tfrecord")
    train_docs = _documents(train, tokenizer, "tfrecord")
    heldout_docs = _documents(heldout, tokenizer, "tfrecord")
    assert sorted(train_docs + heldout_docs) == sorted(everything)
    assert len(heldout_docs) == 2  # A fifth of each shard's 6 documents, rounded.


def test_split_of_one_line_is_refused(tmp_path):
    (tmp_path / "one.txt").write_text("a single line that cannot be split .\n")
    with pytest.raises(pipelines.CorpusError, match="one.txt.*eval_files"):
        pipelines.split_files(str(tmp_path / "one.txt"), 0.05, corpus_format="lines")


# === Bad input ===


def _unreachable(real):
    """`real`, except that a `gs://` path fails as an unreachable bucket."""

    def call(path, *args):
        if str(path).startswith("gs://"):
            raise tf.errors.FailedPreconditionError(
                None,
                None,
                "Error executing an HTTP request: libcurl code 6 meaning "
                "'Could not resolve hostname'\n\t when reading gs://bucket",
            )
        return real(path, *args)

    return call


@pytest.mark.parametrize(
    "pattern, reason",
    [
        ("foo://bucket/*.txt", "no file system plugin for foo://"),
        ("s3://bucket/corpus.txt", "no file system plugin for s3://"),
        ("gs://bucket/*.txt", "Could not resolve hostname"),
        ("gs://bucket/corpus.txt", "Could not resolve hostname"),
    ],
)
def test_unknown_or_unreachable_file_system_is_one_corpus_error(pattern, reason, monkeypatch):
    monkeypatch.setattr(tf.io.gfile, "glob", _unreachable(tf.io.gfile.glob))
    monkeypatch.setattr(tf.io.gfile, "exists", _unreachable(tf.io.gfile.exists))
    with pytest.raises(pipelines.CorpusError) as error:
        pipelines.list_files(pattern, "text")
    message = str(error.value)
    assert f"Cannot read corpus files {pattern!r}" in message and reason in message
    assert "\n" not in message


def test_missing_vocabulary(sentence_corpus, tmp_path):
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(pipelines.VocabularyError, match="nope.txt"):
        pipelines.pretraining_dataset(sentence_corpus[0], missing)


def test_vocabulary_without_mask_or_with_duplicates(tmp_path):
    tokens = open(VOCAB, encoding="utf-8").read().splitlines()
    no_mask = tmp_path / "no_mask.txt"
    no_mask.write_text("\n".join(t for t in tokens if t != "[MASK]") + "\n")
    with pytest.raises(pipelines.VocabularyError, match=r"no_mask.txt.*\[MASK\]"):
        pipelines.BertTokenizer(str(no_mask))
    duplicate = tmp_path / "duplicate.txt"
    duplicate.write_text("\n".join(tokens + ["the"]) + "\n")
    with pytest.raises(pipelines.VocabularyError, match="duplicate.txt.*'the'"):
        pipelines.BertTokenizer(str(duplicate))
    assert issubclass(pipelines.VocabularyError, ValueError)


def test_pattern_without_files(tmp_path):
    with pytest.raises(pipelines.CorpusError, match="nothing-here"):
        _dataset(str(tmp_path / "nothing-here*.txt"))


def test_empty_and_blank_files(sentence_corpus, tmp_path, caplog):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "blank.txt").write_text("\n\n   \n\t\n" * 100)
    with pytest.raises(pipelines.CorpusError, match="empty.txt"):
        _dataset(str(tmp_path / "*.txt"))
    good = sentence_corpus[0]
    with caplog.at_level(logging.WARNING):
        ds = _dataset([good, str(tmp_path / "*.txt")])
    assert "Skipping 2 empty or blank" in caplog.text
    assert "blank.txt" in caplog.text and "empty.txt" in caplog.text
    assert len(_take(ds, 1)) == 1


@pytest.mark.parametrize("corpus_format", ["sentences", "text"])
def test_binary_corpus_file_is_named_in_a_warning(tmp_path, caplog, corpus_format):
    # NUL bytes, yet UTF-8: a file that is not is refused, its line named.
    (tmp_path / "model.bin").write_bytes(bytes(range(128)) * 8)
    (tmp_path / "notes.txt").write_text("Plain text.\n")
    with caplog.at_level(logging.WARNING):
        files = corpus_files.list_files(str(tmp_path / "*"), corpus_format)
    assert files == [str(tmp_path / "model.bin"), str(tmp_path / "notes.txt")]
    assert f"Corpus file {tmp_path / 'model.bin'} looks binary" in caplog.text
    assert "notes.txt" not in caplog.text


def test_one_sentence_document(tmp_path):
    path = tmp_path / "one.txt"
    path.write_text("Only one sentence lives in this document.\n")
    f, l, _ = _take(_dataset(str(path), batch_size=4, shuffle=False), 1)[0]
    # Paired with itself as the "random" document, as the original does when
    # there is no other document.
    assert (l["nsp"] == 1).all()
    assert f["token_ids"].shape == (4, 128)


def test_megabyte_line_without_spaces_and_invalid_utf8(tmp_path, tokenizer, reference):
    long_line = b"x" * (1 << 20)
    bad = b"caf\xc3 \xff\xfe broken \xed\xa0\x80 bytes."
    path = tmp_path / "bad.txt"
    # The tokenizer drops `bad`'s bytes; a corpus file holding them is
    # refused, its line named (test_every_corpus_reader_names_...).
    path.write_bytes(
        b"First sentence here.\n" + long_line + b"\nLast one.\n\nSecond doc.\nWith two lines.\n"
    )
    ids = tokenizer(tf.constant([long_line, bad])).to_list()
    assert ids[0] == [tokenizer.unk_id]
    assert ids[1] == reference.ids(bad)
    ds = _dataset(str(path), batch_size=4, seq_len=32, shuffle=False)
    f, l, w = _take(ds, 1)[0]
    assert f["token_ids"].shape == (4, 32)
    assert tokenizer.unk_id in _unmask(f, l, w)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"seq_len": 4}, "seq_len=4"),
        ({"max_predictions": 200}, "max_predictions=200"),
        ({"batch_size": 0}, "batch_size=0"),
        ({"mask_rate": 1.5}, "mask_rate=1.5"),
        ({"corpus_format": "json"}, "corpus_format='json'"),
        ({"pack_documents": True, "next_sentence_rate": 0.5}, "next_sentence_rate=0.5"),
    ],
)
def test_bad_arguments(sentence_corpus, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _dataset(sentence_corpus[0], **kwargs)


def test_whole_word_masking_at_512(sentence_corpus, tokenizer):
    pattern, _ = sentence_corpus
    ds = _dataset(pattern, seq_len=512, max_predictions=80, batch_size=4, whole_word_masking=True)
    f, l, w = _take(ds, 1)[0]
    assert f["token_ids"].shape == (4, 512) and f["mask_positions"].shape == (4, 80)
    ids = _unmask(f, l, w)
    is_suffix = tokenizer.is_suffix.numpy()
    for row in range(4):
        n = int(f["padding_mask"][row].sum())
        k = int(w["mlm"][row].sum())
        assert 1 <= k <= min(80, round(n * 0.15))
        chosen = set(f["mask_positions"][row, :k].tolist())
        for p in chosen:
            # A chosen "##" piece brings the piece before it along.
            if is_suffix[ids[row, p]] and ids[row, p - 1] not in (CLS, SEP):
                assert p - 1 in chosen


def _word_family_corpus(root, num_docs, sentences_per_doc, seed=0):
    """`num_docs` text files, each written with its own disjoint set of
    whole-word vocabulary entries; returns the pattern and id -> document."""
    vocab = open(VOCAB, encoding="utf-8").read().splitlines()
    words = [w for w in vocab[2000:12000] if w.isalpha() and len(w) > 3]
    rng = np.random.default_rng(seed)
    family = {}
    for d in range(num_docs):
        own = words[d * 12 : (d + 1) * 12]
        family.update({vocab.index(w): d for w in own})
        sentences = [
            " ".join(rng.choice(own, rng.integers(8, 20))) + "." for _ in range(sentences_per_doc)
        ]
        (root / f"doc-{d:02d}.txt").write_text(" ".join(sentences))
    return str(root / "*.txt"), family


def _document_of(tokens, family):
    docs = {family[t] for t in tokens if t in family}
    assert len(docs) == 1, docs
    return docs.pop()


def test_not_next_b_comes_from_another_document(tmp_path):
    # Two long documents: the whole stream of pieces alternates between them,
    # so a NotNext B drawn from "the other documents of the group" must never
    # be A's own document (the original: ~0.1% on a real corpus).
    pattern, family = _word_family_corpus(tmp_path, 2, 600)
    not_next = 0
    for f, l, w in _take(
        _dataset(pattern, corpus_format="text", seq_len=64, max_predictions=10, batch_size=64), 8
    ):
        for row, label in zip(_unmask(f, l, w), l["nsp"]):
            seps = np.flatnonzero(row == SEP)
            a, b = row[1 : seps[0]], row[seps[0] + 1 : seps[1]]
            same = _document_of(a, family) == _document_of(b, family)
            assert same == (label == 0)
            not_next += label
    assert not_next > 100


def test_one_document_corpus_still_makes_not_next_pairs(tmp_path):
    pattern, _ = _word_family_corpus(tmp_path, 1, 400)
    labels = np.concatenate(
        [
            l["nsp"]
            for _, l, _ in _take(
                _dataset(pattern, corpus_format="text", seq_len=64, max_predictions=10), 4
            )
        ]
    )
    assert 0.3 < labels.mean() < 0.7


def test_batches_mix_many_documents(tmp_path):
    # 24 equally long documents of ~150 sequences each: a global shuffle
    # puts 24 * (1 - (23/24)^32) = 17.1 distinct documents in a batch of 32.
    # Pairs built per group of whole documents gave about 6.
    pattern, family = _word_family_corpus(tmp_path, 24, 700)
    counts = []
    for f, l, w in _take(
        _dataset(pattern, corpus_format="text", seq_len=64, max_predictions=10, batch_size=32), 10
    ):
        ids = _unmask(f, l, w)
        counts.append(len({_document_of(row[1 : np.argmax(row == SEP)], family) for row in ids}))
    assert np.mean(counts) >= 13.5, counts


def test_next_sentence_rate_zero_keeps_text_contiguous(tmp_path):
    pattern, family = _word_family_corpus(tmp_path, 3, 300)
    labels = np.concatenate(
        [
            l["nsp"]
            for _, l, _ in _take(
                _dataset(
                    pattern,
                    corpus_format="text",
                    seq_len=16,
                    max_predictions=3,
                    next_sentence_rate=0.0,
                ),
                4,
            )
        ]
    )
    # Sentences of 8-20 words fill a 13-token target alone: they take the
    # next sentence as B (a random B each before). Only the last sentence of
    # a piece (~18 sentences at this length) may not.
    assert labels.mean() < 0.15


@pytest.fixture(scope="module")
def one_line_documents(tmp_path_factory, reference):
    """300 short one-line documents (numbered, so order is visible)."""
    root = tmp_path_factory.mktemp("lines")
    lines = [
        f"review {i} : the film was {'good' if i % 3 else 'bad'} . {'really ' * (i % 5)}"
        for i in range(300)
    ]
    (root / "reviews.txt").write_text("\n".join(lines) + "\n\n")
    return str(root / "reviews.txt"), [reference.ids(line) for line in lines]


def test_packed_short_documents_fill_sequences_in_order(one_line_documents):
    pattern, documents = one_line_documents
    batches = _take(
        _dataset(
            pattern,
            corpus_format="lines",
            seq_len=32,
            max_predictions=5,
            next_sentence_rate=0.0,
            pack_documents=True,
            shuffle=False,
            repeat=False,
            batch_size=4,
        ),
        100,
    )
    ids = np.concatenate([_unmask(*batch) for batch in batches])
    assert (ids[:, 0] == CLS).all()
    real = ids != PAD
    # Every sequence is full; only the last one of the corpus (block) is not.
    assert real[:-1].all() and real[-1, :2].all()
    for features, labels, _ in batches:
        assert (features["segment_ids"] == 0).all() and (labels["nsp"] == 0).all()
    # The bodies, read one after another, are the documents in order, each
    # ended by [SEP]; a document may go on in the next sequence.
    stream = ids[:, 1:][real[:, 1:]].tolist()
    expected = [t for doc in documents for t in doc + [SEP]]
    # drop_remainder may leave out the last sequences: a prefix of the corpus.
    assert len(stream) > 0.9 * len(expected)
    assert stream == expected[: len(stream)]


def test_packed_documents_share_of_real_tokens(one_line_documents):
    pattern, _ = one_line_documents
    unpacked, packed = (
        np.concatenate(
            [
                f["padding_mask"]
                for f, _, _ in _take(
                    _dataset(
                        pattern,
                        corpus_format="lines",
                        seq_len=64,
                        max_predictions=5,
                        next_sentence_rate=0.0,
                        pack_documents=pack,
                        batch_size=8,
                    ),
                    20,
                )
            ]
        ).mean()
        for pack in (False, True)
    )
    assert unpacked < 0.4 and packed > 0.95


def test_lines_format_with_next_sentence_task(one_line_documents):
    pattern, _ = one_line_documents
    f, l, w = _take(_dataset(pattern, corpus_format="lines", seq_len=32, max_predictions=5), 1)[0]
    ids = _unmask(f, l, w)
    # One document a line, each of two sentences: [CLS] A [SEP] B [SEP].
    assert ((ids == SEP).sum(axis=1) == 2).all()
    assert set(np.unique(l["nsp"])) == {0, 1}


def _sep_gaps(ids):
    """Lengths of the runs of tokens between [SEP]s in a token stream."""
    seps = np.flatnonzero(ids == SEP)
    return np.diff(np.concatenate([[-1], seps])) - 1


def test_packed_long_document_is_cut_into_pieces_of_bounded_tokens(tmp_path, reference):
    """A one-line document of ~6,000 tokens is packed as pieces of at most
    PACK_PIECE_TOKENS tokens, each ended by [SEP]: the buffers hold pieces,
    never whole documents."""
    rng = np.random.default_rng(0)
    words = ["the", "film", "was", "good", "bad", "really", "review", "and"]
    line = " ".join(rng.choice(words, 6000)) + " ."
    (tmp_path / "one_line.txt").write_text(line + "\n")
    batches = _take(
        _dataset(
            str(tmp_path / "one_line.txt"),
            corpus_format="lines",
            seq_len=32,
            max_predictions=5,
            next_sentence_rate=0.0,
            pack_documents=True,
            shuffle=False,
            repeat=False,
            batch_size=4,
        ),
        1000,
    )
    ids = np.concatenate([_unmask(*batch) for batch in batches])
    stream = ids[:, 1:][ids[:, 1:] != PAD]
    document = reference.ids(line)
    width = PACK_PIECE_TOKENS - 1
    expected = [
        t
        for start in range(0, len(document), width)
        for t in document[start : start + width] + [SEP]
    ]
    assert len(stream) > 0.9 * len(expected)
    assert stream.tolist() == expected[: len(stream)]
    assert _sep_gaps(stream)[:-1].max() == width


def test_packed_huge_repeated_document_fills_bounded_buffers():
    """A 1M-token document, repeated and shuffled as in training: the first
    sequences come from a buffer of pieces (16 copies' worth), not of
    thousands of whole copies."""
    tokens = tf.random.stateless_uniform([1 << 20], [0, 1], 1000, 30000, tf.int32)
    document = tf.RaggedTensor.from_row_lengths(tokens, [1 << 20])
    documents = tf.data.Dataset.from_tensors(document).repeat()
    tokenizer = pipelines.BertTokenizer(VOCAB)
    sequences = _packed_sequences(documents, tokenizer, seq_len=64, shuffle=True, seed=0)
    ids = np.stack([s["token_ids"].numpy() for s in sequences.take(64)])
    assert ids.shape == (64, 64) and (ids[:, 0] == CLS).all()
    assert (ids != PAD).all()
    body = ids[:, 1:].reshape(-1)
    assert _sep_gaps(body)[1:-1].max() <= PACK_PIECE_TOKENS - 1


def test_corpus_token_counts_are_the_first_tokens_of_the_documents(sentence_corpus, reference):
    # In file order (no shuffle) the two files' documents alternate
    # (interleaved, one document from each in turn); the count stops
    # inside the fourth document.
    pattern, documents = sentence_corpus
    in_order = [d for pair in zip(documents[:6], documents[6:]) for d in pair]
    tokens = [i for document in in_order for s in document for i in reference.ids(s)]
    first_three = sum(len(reference.ids(s)) for d in in_order[:3] for s in d)
    max_tokens = first_three + 7
    counts = pipelines.corpus_token_counts(
        pattern, VOCAB, max_tokens=max_tokens, corpus_format="sentences", shuffle=False
    )
    expected = np.bincount(tokens[:max_tokens], minlength=30522)
    np.testing.assert_array_equal(counts, expected)


# A corpus whose third line holds an "é" (issue 67: one decoding for every
# text file, corpora included).
TEXT = "First sentence here.\nA second one.\nA café, then.\n\nOther doc.\nIts end.\n"


@pytest.mark.parametrize("corpus_format", ["sentences", "text", "lines"])
def test_a_corpus_reads_the_same_with_a_byte_order_mark(tmp_path, tokenizer, corpus_format):
    (tmp_path / "a.txt").write_bytes(TEXT.encode())
    (tmp_path / "b.txt").write_bytes(b"\xef\xbb\xbf" + TEXT.encode())
    files = corpus_files.list_files(str(tmp_path / "*.txt"), corpus_format)
    ds = corpus.documents_dataset(
        files, tokenizer, corpus_format=corpus_format, shuffle=False, cycle_length=1
    )
    documents = [d.to_list() for d in ds]
    half = len(documents) // 2
    assert half and documents[:half] == documents[half:]


def test_the_vocabulary_learner_reads_a_byte_order_mark(tmp_path):
    learned = []
    for name, data in [("plain.txt", TEXT.encode()), ("bom.txt", b"\xef\xbb\xbf" + TEXT.encode())]:
        (tmp_path / name).write_bytes(data)
        learned.append(pipelines.learn_vocabulary(str(tmp_path / name), 40, min_count=1))
    assert learned[0] == learned[1]


# Every corpus reader: each takes its files from `corpus_files.list_files`.
CORPUS_READERS = {
    "pretraining_dataset": lambda pattern, tmp: _dataset(pattern),
    "split_files": lambda pattern, tmp: pipelines.split_files(pattern, 0.5),
    "corpus_token_counts": lambda pattern, tmp: pipelines.corpus_token_counts(
        pattern, VOCAB, max_tokens=10
    ),
    "learn_vocabulary": lambda pattern, tmp: pipelines.learn_vocabulary(pattern, 40),
    "write_tfrecord_shards": lambda pattern, tmp: pipelines.write_tfrecord_shards(
        pattern, str(tmp / "shards"), VOCAB, num_shards=1
    ),
}


@pytest.mark.parametrize("read", CORPUS_READERS.values(), ids=CORPUS_READERS)
def test_every_corpus_reader_names_the_line_that_is_not_utf8(tmp_path, read):
    # The graph dropped the byte: every accented letter of a Latin-1 corpus.
    good, bad = tmp_path / "a.txt", tmp_path / "b.txt"
    good.write_text(TEXT, encoding="utf-8")
    bad.write_bytes(TEXT.encode("latin-1"))
    with pytest.raises(pipelines.CorpusError) as error:
        read(str(tmp_path / "*.txt"), tmp_path)
    assert str(error.value) == (
        f"{bad}: line 3 is not UTF-8 (byte 0xe9 at column 6); save the file as UTF-8"
    )
