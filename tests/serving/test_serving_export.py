"""export_for_serving: versioned SavedModels that answer raw text on stock TF.

Models are built under whatever `KERAS_BACKEND` runs the suite; the export
itself always happens under TensorFlow (a child process for JAX/PyTorch).
The SavedModels are called in a fresh process that imports only tensorflow
(`serve_fresh.py`), and the ids they compute are compared with the
reference tokenizer packed by the fine-tuning readers.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_bert import BertBackbone, BertPretrainer, BertSpanLabeler
from keras_bert.serving import export_for_serving, find_model_file, serving_export
from pipelines.tasks.features import pack_pair
from tests.pipelines.reference_tokenizer import ReferenceTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
VOCAB = os.path.join(ROOT, "data", "vocab", "bert_uncased_vocab.txt")
SEQ_LEN = 32
PAD, CLS, SEP, MASK = 0, 101, 102, 103

HOSTILE = [
    b"",
    b"   \t\n  ",
    ("the quick brown fox " * 52429).encode(),  # 1 MB.
    b"\xff\xfe invalid \xc3 utf-8 \xed\xa0\x80",
    b"nul\x00bytes\x00\x00",
    "emoji 😀👍🏽 👨‍👩‍👧".encode(),
    "中文字符测试 and 日本語".encode(),
    "\u202eright-to-left\u202c \u200fשלום\u200e مرحبا".encode(),
    b"Hello, World! unaffable",
    ("z" * 5000).encode(),
]


@pytest.fixture(scope="module")
def vocab():
    with open(VOCAB, encoding="utf-8") as f:
        return f.read().splitlines()


@pytest.fixture(scope="module")
def reference():
    return ReferenceTokenizer(VOCAB)


def _backbone(vocab, **levers):
    keras.utils.set_random_seed(7)
    backbone = BertBackbone(
        vocabulary_size=len(vocab),
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=64,
        **levers,
    )
    backbone.vocabulary = vocab
    return backbone


@pytest.fixture(scope="module")
def backbone_export(vocab, tmp_path_factory):
    backbone = _backbone(vocab)
    path = export_for_serving(backbone, str(tmp_path_factory.mktemp("backbone")), seq_len=SEQ_LEN)
    return backbone, path


@pytest.fixture(scope="module")
def pretrainer_export(vocab, tmp_path_factory):
    """Exported through the CLI from a training-style output directory; its
    backbone has every small-compute lever that `convert` refuses (pre-LN,
    no linear biases, gated feed-forward), which SavedModel holds as any."""
    pretrainer = BertPretrainer(
        _backbone(vocab, normalize_first=True, use_bias=False, gated_feedforward=True)
    )
    model_dir = tmp_path_factory.mktemp("run")
    pretrainer.save(str(model_dir / "pretrainer.keras"))
    pretrainer.backbone.save(str(model_dir / "backbone.keras"))
    output = tmp_path_factory.mktemp("served")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "keras_bert.export",
            "--model_dir",
            str(model_dir),
            "--output",
            str(output),
            "--seq_len",
            str(SEQ_LEN),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return pretrainer, str(output / "1")


def serve(requests, tmp_path):
    """Runs [(path, signature, inputs)] in a fresh tensorflow-only process."""
    encoded = [
        {
            "path": path,
            "signature": signature,
            "inputs": {
                k: _latin1(v) if _is_text(v) else np.asarray(v).tolist() for k, v in inputs.items()
            },
        }
        for path, signature, inputs in requests
    ]
    request_file, result_file = tmp_path / "requests.json", tmp_path / "out.json"
    request_file.write_text(json.dumps(encoded))
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "tests", "serving", "serve_fresh.py"),
            str(request_file),
            str(result_file),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return [
        {k: _from_latin1(v) for k, v in out.items()} for out in json.loads(result_file.read_text())
    ]


def _is_text(value):
    flat = np.asarray(value, dtype=object).ravel()
    return flat.size > 0 and isinstance(flat[0], (bytes, str))


def _latin1(value):
    def convert(x):
        if isinstance(x, list):
            return [convert(y) for y in x]
        return (x if isinstance(x, bytes) else x.encode()).decode("latin-1")

    return convert(list(value))


def _from_latin1(value):
    array = np.asarray(value, dtype=object)
    if array.size and isinstance(array.flat[0], str):
        return np.vectorize(lambda s: s.encode("latin-1"), otypes=[object])(array)
    return np.asarray(value)


def _text(value):
    return value.decode("utf-8", "ignore") if isinstance(value, bytes) else value


def expected_packed(reference, texts_a, texts_b=None, seq_len=SEQ_LEN):
    """The fine-tuning readers' packing of reference-tokenizer ids."""
    rows = []
    for i, a in enumerate(texts_a):
        b = None if texts_b is None or not texts_b[i] else texts_b[i]
        ids, _ = pack_pair(
            reference.ids(_text(a)),
            None if b is None else reference.ids(_text(b)),
            seq_len,
            CLS,
            SEP,
        )
        rows.append(ids + [PAD] * (seq_len - len(ids)))
    return np.array(rows, np.int32)


def keras_inputs(token_ids, segment_ids=None):
    token_ids = np.asarray(token_ids, np.int32)
    if segment_ids is None:
        segment_ids = np.zeros_like(token_ids)
    return {
        "token_ids": token_ids,
        "segment_ids": np.asarray(segment_ids, np.int32),
        "padding_mask": (token_ids != PAD).astype(np.int32),
    }


def to_numpy(tree):
    return keras.tree.map_structure(keras.ops.convert_to_numpy, tree)


# --- Layout, versions, atomic writes ------------------------------------------


def test_version_directory_layout(backbone_export, vocab):
    _, path = backbone_export
    base, version = os.path.split(path)
    assert version == "1"
    assert sorted(os.listdir(base)) == ["1"]  # No staging leftovers.
    with open(os.path.join(path, "assets", "vocab.txt"), encoding="utf-8") as f:
        assert f.read().splitlines() == vocab
    assert os.path.exists(os.path.join(path, "saved_model.pb"))
    assert serving_export.next_version(base) == 2


def test_existing_version_is_refused(backbone_export):
    backbone, path = backbone_export
    with pytest.raises(FileExistsError, match="version"):
        export_for_serving(backbone, os.path.dirname(path), version=1)


@pytest.mark.backend_independent  # File handling: the export is TensorFlow's.
def test_overwrite_replaces_a_version_once_the_new_one_is_complete(tmp_path, vocab, monkeypatch):
    backbone = _backbone(vocab)
    base = tmp_path / "models"
    version = export_for_serving(backbone, str(base), version=3, seq_len=16)
    graph = os.path.join(version, "saved_model.pb")
    with open(graph, "rb") as f:
        first = f.read()

    def stopped(model, path, *args):
        os.makedirs(path)
        with open(os.path.join(path, "saved_model.pb"), "w") as f:
            f.write("half")
        raise KeyboardInterrupt

    monkeypatch.setattr(serving_export, "_write_saved_model", stopped)
    with pytest.raises(KeyboardInterrupt):
        export_for_serving(backbone, str(base), version=3, overwrite=True)
    monkeypatch.undo()
    with open(graph, "rb") as f:
        assert f.read() == first
    assert os.listdir(base) == ["3"]
    export_for_serving(backbone, str(base), version=3, seq_len=24, overwrite=True)
    with open(graph, "rb") as f:
        assert f.read() != first  # Another truncation length: another graph.
    assert os.listdir(base) == ["3"]


@pytest.mark.backend_independent  # File handling: the export is TensorFlow's.
def test_overwrite_of_a_version_that_is_a_link_leaves_its_target_alone(tmp_path, vocab):
    # Issue 67 item 2: replacing the version emptied the served folder
    # the link pointed to.
    served = tmp_path / "served"
    served.mkdir()
    (served / "saved_model.pb").write_text("another model's")
    base = tmp_path / "models"
    base.mkdir()
    (base / "1").symlink_to(served)
    export_for_serving(_backbone(vocab), str(base), version=1, seq_len=16, overwrite=True)
    assert (served / "saved_model.pb").read_text() == "another model's"
    assert not os.path.islink(base / "1") and (base / "1" / "saved_model.pb").is_file()


@pytest.mark.backend_independent
def test_overwrite_reaches_the_tensorflow_child(monkeypatch, tmp_path):
    commands = []

    def run(command, **kwargs):
        commands.append(command)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(serving_export.subprocess, "run", run)
    for overwrite in (True, False):
        serving_export._export_in_subprocess(
            "m.keras", str(tmp_path), 3, overwrite, None, None, {"seq_len": 16}
        )
    assert ["--overwrite" in command for command in commands] == [True, False]


@pytest.mark.slow  # A child process under JAX/PyTorch.
def test_failed_export_leaves_no_version(tmp_path, vocab):
    broken = tmp_path / "model.keras"
    broken.write_bytes(b"not a keras archive")
    output = tmp_path / "out"
    with pytest.raises(Exception):  # noqa: B017 (any failure: the point is what it leaves)
        export_for_serving(str(broken), str(output), vocabulary=vocab)
    assert not output.exists() or os.listdir(output) == []


@pytest.mark.backend_independent
def test_argument_errors(vocab, tmp_path):
    backbone = _backbone(vocab)
    # One minimum with fine-tuning and pre-training: [CLS] A [SEP] B [SEP].
    with pytest.raises(ValueError, match=r"at least 5 .*Received: seq_len=4"):
        export_for_serving(backbone, str(tmp_path), seq_len=4)
    with pytest.raises(ValueError, match="top_k"):
        export_for_serving(backbone, str(tmp_path), top_k=0)
    for name in ("doc_stride", "n_best_size"):
        with pytest.raises(ValueError, match=rf"`{name}` must be a positive int"):
            export_for_serving(backbone, str(tmp_path), **{name: 0})
    # A span labeler's question must leave a context piece in every window.
    span_labeler = BertSpanLabeler(backbone)
    with pytest.raises(
        ValueError,
        match=(
            r"`max_query_length` must leave room .* Received: "
            r"max_query_length=29, seq_len=32"
        ),
    ):
        export_for_serving(span_labeler, str(tmp_path), seq_len=32, max_query_length=29)
    assert os.listdir(tmp_path) == []


@pytest.mark.backend_independent
def test_find_model_file(tmp_path):
    for name in ("backbone.keras", "pretrainer.keras", "model.keras"):
        (tmp_path / name).write_bytes(b"")
        assert find_model_file(str(tmp_path)) == str(tmp_path / name)
    with pytest.raises(FileNotFoundError, match="model_dir"):
        find_model_file(str(tmp_path / "missing"))


@pytest.mark.backend_independent
def test_infer_lower_case():
    assert serving_export.infer_lower_case(["[PAD]", "[UNK]", "the", "##s"])
    assert not serving_export.infer_lower_case(["[PAD]", "[UNK]", "The"])


# --- Backbone: raw text in a tensorflow-only process ---------------------------


BACKBONE_TEXT_B = [b"", b"second segment", b""] * 3 + [b"\xff"]
BATCH_256 = [HOSTILE[i % len(HOSTILE)][:300] for i in range(256)]
FILL_MASK_TEXTS = ["The [MASK] sat on the [MASK].", "no mask here", "[MASK]", ""]


@pytest.fixture(scope="module")
def served(backbone_export, pretrainer_export, reference, tmp_path_factory):
    """Every request of this module, answered by one fresh process."""
    expected = expected_packed(reference, HOSTILE, BACKBONE_TEXT_B)
    backbone = backbone_export[1]
    requests = {
        "pair": (backbone, "serving_default", {"text_a": HOSTILE, "text_b": BACKBONE_TEXT_B}),
        "single": (backbone, "serve_text", {"text_a": HOSTILE}),
        "batch_256": (backbone, "serve_text", {"text_a": BATCH_256}),
        "batch_1": (backbone, "serving_default", {"text_a": [b"one"], "text_b": [b"two"]}),
        "ids": (backbone, "serve_token_ids", keras_inputs(expected)),
        "fill_mask": (pretrainer_export[1], "serve_text", {"text_a": FILL_MASK_TEXTS}),
    }
    outputs = serve(list(requests.values()), tmp_path_factory.mktemp("serve"))
    return dict(zip(requests, outputs))


def test_backbone_raw_text_in_fresh_process(backbone_export, served, reference):
    backbone, _ = backbone_export
    texts_b = BACKBONE_TEXT_B
    expected = expected_packed(reference, HOSTILE, texts_b)
    out_pair, out_single, out_256, out_one, out_ids = (
        served[k] for k in ("pair", "single", "batch_256", "batch_1", "ids")
    )
    # Ids identical to the training tokenizer + reader, for hostile rows too.
    np.testing.assert_array_equal(out_pair["token_ids"], expected)
    np.testing.assert_array_equal(out_single["token_ids"], expected_packed(reference, HOSTILE))
    np.testing.assert_array_equal(out_256["token_ids"], expected_packed(reference, BATCH_256))
    np.testing.assert_array_equal(
        out_one["token_ids"], expected_packed(reference, [b"one"], [b"two"])
    )
    assert out_pair["padding_mask"].tolist() == (expected != PAD).astype(int).tolist()
    assert out_pair["sequence_output"].shape == (len(HOSTILE), SEQ_LEN, 8)
    assert out_256["pooled_output"].shape == (256, 8)
    assert np.isfinite(out_pair["sequence_output"]).all()
    # The SavedModel computes what the Keras model computes.
    segments = np.zeros_like(expected)
    for row, b in enumerate(texts_b):
        if b:
            first_sep = list(expected[row]).index(SEP)
            segments[row, first_sep + 1 :] = expected[row, first_sep + 1 :] != PAD
    keras_out = to_numpy(backbone(keras_inputs(expected, segments)))
    np.testing.assert_allclose(out_pair["pooled_output"], keras_out["pooled_output"], atol=1e-4)
    keras_single = to_numpy(backbone(keras_inputs(expected)))
    np.testing.assert_allclose(
        out_ids["sequence_output"], keras_single["sequence_output"], atol=1e-4
    )


@pytest.mark.slow
def test_saved_model_cli_run(backbone_export):
    _, path = backbone_export
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    result = subprocess.run(
        [
            cli,
            "run",
            "--dir",
            path,
            "--tag_set",
            "serve",
            "--signature_def",
            "serving_default",
            "--input_exprs",
            'text_a=[b"Hello, World!", b"\\xff\\x00 \\xe4\\xb8\\xad"];text_b=[b"", b"x"]',
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Result for output key pooled_output" in result.stdout
    assert "Result for output key token_ids" in result.stdout


# --- Pretrainer: fill-mask -------------------------------------------------------


def test_pretrainer_fill_mask(pretrainer_export, served, reference, vocab):
    pretrainer, _ = pretrainer_export
    texts = FILL_MASK_TEXTS
    out = served["fill_mask"]
    expected = []
    for text in texts:
        ids = []
        for i, part in enumerate(text.split("[MASK]")):
            ids += ([MASK] if i else []) + reference.ids(part)
        ids = [CLS] + ids[: SEQ_LEN - 2] + [SEP]
        expected.append(ids + [PAD] * (SEQ_LEN - len(ids)))
    expected = np.array(expected, np.int32)
    np.testing.assert_array_equal(out["token_ids"], expected)
    positions = out["mask_positions"]
    assert positions.shape == (4, 20)
    assert positions[:, :3].tolist() == [[2, 6, -1], [-1] * 3, [1, -1, -1], [-1] * 3]
    # Top-k agrees with the Keras model's own masked-LM logits.
    inputs = keras_inputs(expected)
    inputs["mask_positions"] = np.maximum(positions, 0).astype(np.int32)
    logits = to_numpy(pretrainer(inputs))["mlm"]
    top = np.argsort(-logits, axis=-1)[:, :, :5]
    valid = positions >= 0
    np.testing.assert_array_equal(out["top_k_token_ids"][valid], top[valid])
    assert (out["top_k_token_ids"][~valid] == -1).all()
    tokens = out["top_k_tokens"][valid]
    assert [[t.decode() for t in row] for row in tokens] == [
        [vocab[i] for i in row] for row in top[valid]
    ]
    probabilities = out["top_k_probabilities"]
    assert (np.diff(probabilities[valid], axis=-1) <= 1e-7).all()
    assert (probabilities[~valid] == 0).all()
    np.testing.assert_allclose(out["next_sentence_probabilities"].sum(-1), 1.0, atol=1e-5)


@pytest.mark.backend_independent
def test_cli_reports_a_missing_model_in_one_line(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "keras_bert.export",
            "--model_dir",
            str(tmp_path / "missing"),
            "--output",
            str(tmp_path / "out"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("python -m keras_bert.export: error: `model_dir`")
    assert "Traceback" not in result.stderr


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "name, bad",
    [
        ("token_ids", -5),
        ("token_ids", 30522),
        ("segment_ids", 2),
        ("padding_mask", -1),
    ],
)
def test_serve_token_ids_refuses_out_of_range_ids(backbone_export, name, bad):
    import tensorflow as tf

    served = tf.saved_model.load(backbone_export[1])
    inputs = {
        "token_ids": tf.constant([[101, 7, 102]]),
        "segment_ids": tf.zeros([1, 3], tf.int32),
        "padding_mask": tf.ones([1, 3], tf.int32),
    }
    served.signatures["serve_token_ids"](**inputs)  # In range: answered.
    inputs[name] = tf.tensor_scatter_nd_update(inputs[name], [[0, 1]], [bad])
    with pytest.raises(tf.errors.InvalidArgumentError, match=rf"{name} must be in \[0, "):
        served.signatures["serve_token_ids"](**inputs)


def _damage(path, how):
    """Truncates a `.keras` zip, or flips bytes inside its weights file."""
    data = bytearray(path.read_bytes())
    if how == "truncated":
        path.write_bytes(bytes(data[: len(data) // 2]))
        return
    import zipfile

    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("model.weights.h5")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    middle = start + info.compress_size // 2
    data[middle : middle + 8] = bytes(b ^ 0xFF for b in data[middle : middle + 8])
    path.write_bytes(bytes(data))


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "args, damage, message",
    [
        (["--version", "-1"], None, "`version` must be a non-negative int. Received: version=-1"),
        ([], "truncated", "{model}: not a .keras archive (truncated or corrupt zip file)"),
        ([], "crc", "{model}: corrupt .keras archive ("),
        (["--seq_len", "4"], None, "`seq_len` must be at least 5"),
        # Found after loading the model: on JAX and PyTorch in the TensorFlow
        # child process, whose one line comes back as is.
        (
            ["--seq_len", "100000"],
            None,
            "`seq_len` must be at most the backbone's "
            "max_sequence_length (64). Received: seq_len=100000",
        ),
        (
            ["--top_k", "100000", "--seq_len", "64"],
            None,
            "`top_k` must be at most the vocabulary size (30522). Received: top_k=100000",
        ),
        (
            ["--vocab", "{short_vocab}", "--seq_len", "64"],
            None,
            "`vocabulary` must have one token per "
            "embedding row. Received: 3 tokens for vocabulary_size=30522",
        ),
    ],
)
def test_cli_bad_input_is_one_line(vocab, tmp_path, capsys, args, damage, message):
    from keras_bert.export import main

    model = tmp_path / "model.keras"
    BertPretrainer(_backbone(vocab)).save(str(model))
    short_vocab = tmp_path / "short_vocab.txt"
    short_vocab.write_text("[PAD]\n[UNK]\n[CLS]\n")
    args = [a.format(short_vocab=short_vocab) for a in args]
    if damage:
        _damage(model, damage)

    assert main(["--model", str(model), "--output", str(tmp_path / "out"), *args]) == 2

    err = capsys.readouterr().err
    assert err.startswith("python -m keras_bert.export: error: " + message.format(model=model))
    assert err.count("\n") == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.backend_independent
def test_cli_refuses_a_run_folder_and_its_parts_and_takes_its_export_folder(
    vocab, tmp_path, capsys
):
    # Issue 49: version folders mixed into a run's own files.
    from keras_bert.export import main

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("task: sst2\n")
    model = tmp_path / "model.keras"
    BertPretrainer(_backbone(vocab)).save(str(model))
    for output in (run, run / "checkpoints"):
        assert main(["--model", str(model), "--output", str(output)]) == 2
        err = capsys.readouterr().err
        assert "export into its export/ folder or another one" in err and err.count("\n") == 1
        assert sorted(p.name for p in run.iterdir()) == ["checkpoints", "config.yaml"]
    # Issue 49 too: with no --seq_len, a 64-position model exports (the
    # default was 128, more than it holds).
    assert main(["--model", str(model), "--output", str(run / "export")]) == 0
    assert (run / "export" / "1" / "saved_model.pb").exists()
