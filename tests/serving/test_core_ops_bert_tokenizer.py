"""CoreOpsBertTokenizer gives the ids of the original BERT tokenizer.

Held to `tests/pipelines/reference_tokenizer.py` (the spec) and to
`pipelines.BertTokenizer` (the training tokenizer) on edge cases, a seeded
random fuzz, a sample of the bundled corpus (all of it under -m slow), and
invalid UTF-8 (dropped, as `bytes.decode("utf-8", "ignore")` does).
"""

import glob
import os
import random
import subprocess
import sys
import unicodedata

import pytest
import tensorflow as tf

from keras_bert.serving.core_ops_bert_tokenizer import CoreOpsBertTokenizer
from tests.pipelines.reference_tokenizer import ReferenceTokenizer

pytestmark = pytest.mark.backend_independent

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
VOCAB = os.path.join(ROOT, "data", "vocab", "bert_uncased_vocab.txt")

EDGE_CASES = [
    "",
    " \t\n\r ",
    "Hello, World!",
    "unaffable running ##s [MASK] [CLS]",
    "héllo wörld ÀÉÎ Ångström naïve façade",
    # str.lower()'s final sigma looks through case-ignorable characters.
    "ΟΔΟΣ ΣΑΣ ΑΣ.Β Σ ΑΣ' ΑΣ'Β ΑΣ\u0301",
    "İstanbul straße ǅ ﬁ Ｆｕｌｌ",
    "中文字符 mixed测试 日本語のテキスト 한국어 텍스트 豈",
    "a\u200bb c\x00d e\ufffdf g\u00adh \x7f\x85\x9f",
    "tab\tnew\nline\u2028sep\u2029para\u3000ideo\u00a0nbsp\u1680ogham",
    "\u202eright-to-left\u202c \u200fעברית\u200e العربية",
    "emoji 😀👍🏽 👨‍👩‍👧 ok🇫🇷",
    # NFD output that is punctuation; marks reordered across characters.
    "≠ ≮ ≯ \u1fef a\u0301\u0316 x\U0001d16d\U0001d165y \u302e\u302f",
    "\u0301\u0302 lone marks",
    "don't stop-believing... U.S.A. $5.00 (x) [y] {z} ~`^_|\\",
    "x" * 200,
    "x" * 201,
    "y" * 199 + "é",
    "a" * 300 + " b " + "c" * 1000,
    "supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis",
]


@pytest.fixture(scope="module")
def core():
    return CoreOpsBertTokenizer(VOCAB)


@pytest.fixture(scope="module")
def reference():
    return ReferenceTokenizer(VOCAB)


@pytest.fixture(scope="module")
def training_tokenizer():
    import pipelines

    return pipelines.BertTokenizer(VOCAB)


def _ids(tokenizer, texts):
    fn = tf.function(lambda x: tokenizer.tokenize(x)["token_ids"])
    out = []
    for i in range(0, len(texts), 2048):
        out += fn(tf.constant(texts[i : i + 2048])).to_list()
    return out


def _reference_ids(reference, texts):
    return [
        reference.ids(t.decode("utf-8", "ignore") if isinstance(t, bytes) else t) for t in texts
    ]


def _fuzz(seed, count):
    rng = random.Random(seed)
    pool = [chr(c) for c in range(0x20, 0x250)]
    pool += [chr(c) for c in rng.sample(range(0x250, 0x30000), 3000)]
    pool += list(" \t\n\u00a0\u2028\u200b\u0301\u0316\u03a3\u03c3.,;'\"-")
    pool += ["\U0001d165", "\U0001d16d", "\u302e", "\u0345", "ΑΣ", "İ"]
    texts = [
        "".join(rng.choice(pool) for _ in range(rng.randint(0, 40))).encode(
            "utf-8", "surrogatepass"
        )
        for _ in range(count)
    ]
    for _ in range(count // 4):  # Invalid UTF-8 around valid text.
        junk = bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 12)))
        texts.append(junk + b"ab\xc3\xa9 c" + junk + b"\xe4\xb8")
    return texts


def _corpus_lines():
    lines = []
    for path in sorted(glob.glob(os.path.join(ROOT, "data", "corpus", "*", "*"))):
        with open(path, encoding="utf-8") as f:
            lines += f.read().splitlines()
    return lines


def test_edge_cases_match_reference(core, reference):
    assert _ids(core, EDGE_CASES) == _reference_ids(reference, EDGE_CASES)


def test_edge_cases_match_training_tokenizer(core, training_tokenizer):
    expected = training_tokenizer(tf.constant(EDGE_CASES)).to_list()
    assert _ids(core, EDGE_CASES) == expected


def test_cased_matches_reference(reference):
    cased = CoreOpsBertTokenizer(VOCAB, lower_case=False)
    ref = ReferenceTokenizer(VOCAB, lower_case=False)
    texts = EDGE_CASES + [t.lower() for t in EDGE_CASES]
    assert _ids(cased, texts) == _reference_ids(ref, texts)


def test_invalid_utf8_is_dropped(core, reference, training_tokenizer):
    texts = [
        b"caf\xc3",  # Truncated sequence at the end.
        b"a\xffb \xfe\xfe c",
        b"\xed\xa0\x80surrogate",  # Encoded surrogate.
        b"\xc0\xafoverlong",
        b"\xf4\x90\x80\x80beyond",  # Above U+10FFFF.
        b"\xe4\xb8\xadok\xe4\xb8",
        b"\x00\x00nul\x00",
    ]
    ids = _ids(core, texts)
    assert ids == _reference_ids(reference, texts)
    assert ids == training_tokenizer(tf.constant(texts)).to_list()


def test_random_fuzz_matches_reference(core, reference):
    texts = _fuzz(seed=0, count=1500)
    assert _ids(core, texts) == _reference_ids(reference, texts)


def test_corpus_sample_matches_reference_and_training(core, reference, training_tokenizer):
    lines = _corpus_lines()
    sample = lines[:: max(1, len(lines) // 2000)]
    ids = _ids(core, sample)
    assert ids == _reference_ids(reference, sample)
    assert ids == training_tokenizer(tf.constant(sample)).to_list()


@pytest.mark.slow
def test_whole_corpus_matches_reference_and_training(core, reference, training_tokenizer):
    lines = _corpus_lines()
    ids = _ids(core, lines)
    assert ids == training_tokenizer(tf.constant(lines)).to_list()
    assert ids == _reference_ids(reference, lines)


@pytest.mark.slow
def test_large_fuzz_matches_reference_and_training(core, reference, training_tokenizer):
    texts = _fuzz(seed=1, count=20000)
    ids = _ids(core, texts)
    assert ids == _reference_ids(reference, texts)
    # tensorflow-text's RE2/ICU tables know code points newer than this
    # Python's `unicodedata` (e.g. U+1B4E, punctuation since Unicode 16), so
    # the training tokenizer can only agree on characters both know.
    known = [
        i
        for i, t in enumerate(texts)
        if not any(unicodedata.category(c) == "Cn" for c in t.decode("utf-8", "ignore"))
    ]
    training = training_tokenizer(tf.constant([texts[i] for i in known]))
    assert [ids[i] for i in known] == training.to_list()


def test_offsets_cut_out_the_pieces(core):
    text = "Héllo, wörld! 中文 unaffable"
    out = core.tokenize(tf.constant([text]))
    data = text.encode("utf-8")
    spans = [
        data[s:e].decode("utf-8")
        for s, e in zip(out["start_offsets"][0].numpy(), out["end_offsets"][0].numpy())
    ]
    assert spans == ["Héllo", ",", "wörld", "!", "中", "文", "una", "ffa", "ble"]
    assert out["word_index"].to_list() == [[0, 0, 1, 1, 2, 3, 4, 4, 4]]
    assert out["word_start_offsets"].to_list() == [[0, 8, 16, 19, 23]]
    assert out["word_end_offsets"].to_list() == [[7, 15, 19, 22, 32]]


def test_max_words_per_row_keeps_the_first_pieces(core):
    text = "the quick brown fox " * 50000  # 1 MB.
    out = core.tokenize(tf.constant([text, "a b"]), max_words_per_row=8)
    full = core.tokenize(tf.constant([text[:200]]))["token_ids"][0].numpy()
    assert out["token_ids"][0].numpy().tolist() == full[:8].tolist()
    assert out["token_ids"][1].numpy().tolist() == [1037, 1038]


def test_batch_shapes(core):
    for texts in ([], [""], ["a"] * 256):
        out = core.tokenize(tf.constant(texts, tf.string))
        assert out["token_ids"].nrows() == len(texts)


def test_rejects_vocabulary_without_unk():
    with pytest.raises(ValueError, match="unk_token"):
        CoreOpsBertTokenizer(["[PAD]", "a"])


@pytest.mark.slow
def test_works_without_tensorflow_text():
    # None in sys.modules makes `import tensorflow_text` fail, as on a host
    # without it; keras_bert (and keras-hub) must still import and tokenize.
    code = (
        "import sys; sys.modules['tensorflow_text'] = None\n"
        "import tensorflow as tf\n"
        "from keras_bert.serving import CoreOpsBertTokenizer\n"
        "tok = CoreOpsBertTokenizer(['[UNK]', 'a', '##b'])\n"
        "ids = tok.tokenize(tf.constant(['AB a']))['token_ids'].to_list()\n"
        "assert ids == [[1, 2, 1]], ids\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
