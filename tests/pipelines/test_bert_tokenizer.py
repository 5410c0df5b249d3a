"""`pipelines.BertTokenizer` against the independent reference algorithm."""

import glob
import os
import random

import pytest
import tensorflow as tf

import pipelines
from tests.pipelines.common import CORPUS, VOCAB, shared_path
from tests.pipelines.reference_tokenizer import ReferenceTokenizer

pytestmark = pytest.mark.backend_independent

EDGE_CASES = [
    "Hello, World! café naïve résumé Über",
    "a\u200bb zero\u200dwidth\u200cjoin \ufeffbom \u2060wj \u00adsoft",
    "tab\there\x00nul\ufffdrepl\x07bell\x1besc\x7fdel\x85nel",
    "\x0bvt\x0cff\x1cfs \r\nCRLF",
    "中文字符abc 日本語のテキスト カタカナ 한국어 텍스트",
    "$100 + 5% <x> = y ^ ` | ~ © 2020 € 5 °C ¶ §",
    "İstanbul ß ẞ ﬁ Ǆ ΟΔΟΣ Σίσυφος ǅ",
    "U.S.A. don't can't rock'n'roll e.g. i.e.",
    "x\u2028y\u2029z\u3000w\u00a0v\u1680u\u2009t\u202fs",
    "Ａｂｃ full-width ＡＢＣ１２３",
    "\u0301abc e\u0301 a\u0308\u0301 Å Å",
    "ꓸ ‐ ― ¿¡ «» „“ ‹› ・ 。、",
    "ℌ ™ ½ ² ㎏ ① Ⅻ",
    "emoji 😀👍🏽 ok 🇫🇷",
    "\ue000 pua \U000f0000",
    "𠀀 ext-b 𪜀 𫝀 丽 CJK-compat 豈",
    "Ελληνικά Русский العربية עברית हिन्दी ไทย",
    "a" * 199 + " " + "b" * 200 + " " + "c" * 201 + " d",
    "é" * 201 + " " + "é" * 200,
    "x" * 300 + "!" + "y" * 10,
    "abc" * 100 + "中" + "def" * 70,
    "unaffable unwanted running jumped",
    "",
    "   ",
    "\x00\x01\x02",
    "[CLS] [SEP] [MASK] [UNK] [PAD] ##ing",
]


def test_edge_cases_match_reference(tokenizer, reference):
    ids = tokenizer(tf.constant(EDGE_CASES)).to_list()
    for text, got in zip(EDGE_CASES, ids):
        assert got == reference.ids(text), repr(text)


def test_cased_matches_reference():
    tok = pipelines.BertTokenizer(VOCAB, lower_case=False)
    ref = ReferenceTokenizer(VOCAB, lower_case=False)
    ids = tok(tf.constant(EDGE_CASES)).to_list()
    for text, got in zip(EDGE_CASES, ids):
        assert got == ref.ids(text), repr(text)


def test_invalid_utf8_bytes_are_dropped(tokenizer, reference):
    texts = [
        b"caf\xc3",
        b"ab\xffcd",
        b"\xed\xa0\x80surrogate",
        b"ok \xe2\x82 x",
        b"\xc3\xa9t\xc3\xa9",
        b"\x80\x80\x80",
        b"trunc\xf0\x9f\x98",
    ]
    ids = tokenizer(tf.constant(texts)).to_list()
    for text, got in zip(texts, ids):
        assert got == reference.ids(text), repr(text)


def test_scalar_and_shapes(tokenizer):
    ids = tokenizer(tf.constant(["Hello, World!", ""]))
    assert isinstance(ids, tf.RaggedTensor)
    assert ids.dtype == tf.int32
    assert ids.to_list() == [[7592, 1010, 2088, 999], []]
    assert tokenizer(tf.constant("Hello")).numpy().tolist() == [7592]
    assert (
        tokenizer.pad_id,
        tokenizer.unk_id,
        tokenizer.cls_id,
        tokenizer.sep_id,
        tokenizer.mask_id,
    ) == (0, 100, 101, 102, 103)
    assert tokenizer.vocab_size == 30522
    assert tokenizer.vocab_file == VOCAB


def test_works_inside_dataset_graph(tokenizer, reference):
    ds = tf.data.Dataset.from_tensor_slices(EDGE_CASES).batch(4).map(tokenizer)
    got = [row for batch in ds for row in batch.to_list()]
    assert got == [reference.ids(t) for t in EDGE_CASES]


def test_detokenize(tokenizer):
    ids = tokenizer(tf.constant(["The unaffable dog's jumping!"]))
    text = tokenizer.detokenize(ids).numpy()[0].decode()
    assert text == "the unaffable dog ' s jumping !"
    dense = tokenizer.detokenize(tf.constant([[7592, 1010, 2088, 999]]))
    assert dense.numpy().tolist() == [b"hello , world !"]


def _random_unicode_strings(n, seed=0):
    rng = random.Random(seed)
    pools = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        " \t\n\r\u00a0\u2003\u3000\u2028\u1680",
        "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~¡¿«»—–…·•",
        "éèêëàâäôöûüçñÉÈÀÇÑåøæœßĳŉǅǈǋǲ",
        "\u0301\u0308\u0327\u030a\u0323",
        "\x00\x01\x07\x1b\x7f\x85\u200b\u200c\u200d\u2060\ufeff\u00ad\ufffd",
        "中文字符日本語テキストかな한국어",
        "ΑΒΓΣσςабвгдЖЁ",
        "ℌ™½²㎏①Ⅻ€£¥©®°",
        "😀👍🏽🇫🇷",
    ]
    out = []
    for _ in range(n):
        length = rng.randint(0, 60)
        out.append("".join(rng.choice(rng.choice(pools)) for _ in range(length)))
    return out


def test_random_unicode_matches_reference(tokenizer, reference):
    texts = _random_unicode_strings(3000)
    ids = tokenizer(tf.constant(texts)).to_list()
    for text, got in zip(texts, ids):
        assert got == reference.ids(text), repr(text)


def _lines(paths):
    lines = []
    for path in paths:
        with open(path, "rb") as f:
            lines.extend(f.read().split(b"\n"))
    return lines


def _check_lines(lines, tokenizer, reference, batch=4096):
    mismatches = []
    for start in range(0, len(lines), batch):
        chunk = lines[start : start + batch]
        got = tokenizer(tf.constant(chunk)).to_list()
        for line, ids in zip(chunk, got):
            if ids != reference.ids(line):
                mismatches.append(line)
    assert not mismatches, mismatches[:5]
    return len(lines)


def test_bundled_corpus_sample_matches_reference(tokenizer, reference):
    # Every line of the inaugural addresses and the two poetry books: plain
    # and old-spelling English, Latin-1 era punctuation. The full corpus is
    # the slow test below.
    paths = sorted(glob.glob(os.path.join(CORPUS, "inaugural", "*.txt")))
    paths += [
        os.path.join(CORPUS, "gutenberg", "blake-poems.txt"),
        os.path.join(CORPUS, "gutenberg", "shakespeare-caesar.txt"),
    ]
    assert _check_lines(_lines(paths), tokenizer, reference) > 7000


@pytest.mark.slow
def test_whole_bundled_corpus_matches_reference(tokenizer, reference):
    paths = sorted(glob.glob(os.path.join(CORPUS, "*", "*.txt")))
    assert _check_lines(_lines(paths), tokenizer, reference) > 70000


@pytest.mark.slow
def test_shared_corpora_match_reference(tokenizer, reference):
    root = shared_path("corpus")
    paths = sorted(glob.glob(os.path.join(root, "**", "*.txt"), recursive=True))
    assert _check_lines(_lines(paths), tokenizer, reference) > 700000


@pytest.mark.slow
def test_shared_corpora_cased_match_reference():
    root = shared_path("corpus")
    tok = pipelines.BertTokenizer(VOCAB, lower_case=False)
    ref = ReferenceTokenizer(VOCAB, lower_case=False)
    paths = sorted(glob.glob(os.path.join(root, "nltk_2007", "**", "*.txt"), recursive=True))
    assert _check_lines(_lines(paths), tok, ref) > 100000


def test_cased_tokenization_with_an_uncased_vocabulary_warns(caplog, tmp_path):
    pipelines.BertTokenizer(VOCAB, lower_case=False)
    assert (
        "Cased tokenization with " + VOCAB + ", a vocabulary without upper-case tokens (uncased)"
    ) in caplog.text
    caplog.clear()
    cased = tmp_path / "cased_vocab.txt"
    cased.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nThe\nthe\n")
    pipelines.BertTokenizer(str(cased), lower_case=False)
    pipelines.BertTokenizer(VOCAB, lower_case=True)
    assert "Cased tokenization" not in caplog.text
