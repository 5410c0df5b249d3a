"""`python -m keras_bert.convert`: report, one-line errors, atomic writes."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import keras_bert  # noqa: F401  (registers the models for load_model)
from keras_bert.conversion import convert
from keras_bert.convert import main
from keras_bert.file_io import is_disk_full
from tests.conversion.tiny_bert import (
    TINY,
    VOCAB,
    original_shapes,
    random_weights,
    run_model,
    write_google_checkpoint,
)
from tests.reference_bert import bert_forward

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_report(tmp_path, capsys):
    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))

    assert main(["--input", str(tmp_path / "google"), "--output", str(tmp_path / "hf")]) == 0

    report = capsys.readouterr().out
    assert "source:  Google BERT checkpoint" in report
    assert "config:  L=2 H=8 A=2 I=16 V=40" in report
    assert "pooler carried" in report
    assert "vocab: 40 tokens" in report
    assert "(Hugging Face BertModel)" in report
    assert sorted(os.listdir(tmp_path / "hf")) == [
        "config.json",
        "model.safetensors",
        "vocab.txt",
    ]


def test_hidden_activation_picks_the_gelu(tmp_path, capsys, inputs):
    # bert_config.json says "gelu" for erf and tanh alike; the flag decides.
    weights = random_weights(original_shapes(heads=False))
    write_google_checkpoint(tmp_path / "google", weights)
    google = str(tmp_path / "google")

    def reference(approximate):
        return bert_forward(
            weights, num_heads=TINY["num_heads"], approximate_gelu=approximate, **inputs
        )[0]

    erf, tanh = reference(False), reference(True)
    # The two references are far enough apart for the check to tell them.
    assert np.abs(erf - tanh).max() > 1e-4

    outputs = {}
    for flag, form in [
        (None, "exact GELU, x * Phi(x) with erf"),
        ("gelu", "exact GELU, x * Phi(x) with erf"),
        ("gelu_approximate", "tanh approximation of GELU"),
    ]:
        dst = str(tmp_path / f"{flag}.keras")
        argv = [google, dst] + (["--hidden_activation", flag] if flag else [])
        assert main(argv) == 0
        report = capsys.readouterr().out
        name = flag or "gelu"
        why = "as requested" if flag else "from the source's config"
        assert f"activation: {name} ({form}), {why}\n" in report
        backbone = keras.saving.load_model(dst)
        assert backbone.hidden_activation == name
        assert backbone.get_config()["hidden_activation"] == name
        outputs[flag] = run_model(backbone, inputs)["sequence_output"]
    np.testing.assert_allclose(outputs[None], erf, atol=1e-5)
    np.testing.assert_allclose(outputs["gelu"], erf, atol=1e-5)
    np.testing.assert_allclose(outputs["gelu_approximate"], tanh, atol=1e-5)

    # Hugging Face output names the tanh form "gelu_new".
    assert main([google, str(tmp_path / "hf"), "--hidden_activation", "gelu_approximate"]) == 0
    with open(tmp_path / "hf" / "config.json") as f:
        assert json.load(f)["hidden_act"] == "gelu_new"


@pytest.mark.backend_independent
def test_bad_hidden_activation_is_one_line(tmp_path, capsys):
    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))

    argv = [str(tmp_path / "google"), str(tmp_path / "m.keras"), "--hidden_activation", "tanh"]
    assert main(argv) == 2

    assert capsys.readouterr().err == (
        "error: `hidden_activation` must be one of ['gelu', "
        "'gelu_approximate']. Received: hidden_activation='tanh'\n"
    )
    assert sorted(os.listdir(tmp_path)) == ["google"]


@pytest.mark.backend_independent
def test_vocab_of_another_size_is_refused(tmp_path, capsys):
    # One embedding row per token is what export and fine-tuning need.
    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))
    vocab = tmp_path / "small_vocab.txt"
    vocab.write_text("".join(f"tok{i}\n" for i in range(30)))

    argv = [str(tmp_path / "google"), str(tmp_path / "hf"), "--vocab", str(vocab)]
    assert main(argv) == 2

    assert capsys.readouterr().err == (
        f"error: {vocab}: 30 tokens, but {tmp_path / 'google'} has 40 token "
        "embeddings; export and fine-tuning need one per token "
        "(wrong vocab.txt?).\n"
    )
    assert not (tmp_path / "hf").exists()


@pytest.mark.backend_independent
def test_overwrite_through_a_symlink_replaces_its_target(tmp_path, capsys):
    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))
    assert main([str(tmp_path / "google"), str(tmp_path / "hf")]) == 0
    os.symlink(tmp_path / "hf", tmp_path / "link")

    assert main([str(tmp_path / "google"), str(tmp_path / "link"), "--overwrite"]) == 0

    assert os.path.islink(tmp_path / "link")
    assert sorted(os.listdir(tmp_path)) == ["google", "hf", "link"]
    assert sorted(os.listdir(tmp_path / "link")) == [
        "config.json",
        "model.safetensors",
        "vocab.txt",
    ]


@pytest.mark.backend_independent
def test_existing_destination_needs_overwrite(tmp_path, capsys):
    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))
    os.makedirs(tmp_path / "hf")
    (tmp_path / "hf" / "keep.txt").write_text("mine")

    assert main([str(tmp_path / "google"), str(tmp_path / "hf")]) == 2
    assert "already exists" in capsys.readouterr().err
    assert os.listdir(tmp_path / "hf") == ["keep.txt"]


@pytest.mark.backend_independent
def test_two_conversions_onto_one_new_destination_cannot_both_write(tmp_path, capsys):
    # Issue 49, item 6: both passed the existence check; the second replaced
    # the first's output without --overwrite.
    import socket

    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))
    args = [str(tmp_path / "google"), str(tmp_path / "m.keras")]
    # The first is still converting: its claim (this process, running) is held.
    (tmp_path / ".m.keras.lock").write_text(f"{os.getpid()} {socket.gethostname()}\n")
    assert main(args) == 2
    assert "is held by pid" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == [".m.keras.lock", "google"]
    (tmp_path / ".m.keras.lock").unlink()
    # The first has finished: the second's check is made holding the claim.
    assert main(args) == 0 and main(args) == 2
    assert "already exists; pass --overwrite" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["google", "m.keras"]


@pytest.mark.backend_independent
def test_overwrite_replaces_a_previous_output(tmp_path, capsys):
    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))
    google, hf = str(tmp_path / "google"), str(tmp_path / "hf")
    assert main([google, hf]) == 0
    (tmp_path / "hf" / "config.json").write_text("stale")

    assert main([google, hf, "--overwrite"]) == 0
    assert (tmp_path / "hf" / "config.json").read_text() != "stale"
    assert sorted(os.listdir(tmp_path)) == ["google", "hf"]  # No temporaries.
    assert main([google, str(tmp_path / "m.keras")]) == 0
    assert main([google, str(tmp_path / "m.keras"), "--overwrite"]) == 0


def test_a_dropout_that_is_no_number_is_one_line(tmp_path, capsys):
    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))
    hf = tmp_path / "hf"
    assert main([str(tmp_path / "google"), str(hf)]) == 0
    config = json.loads((hf / "config.json").read_text())
    (hf / "config.json").write_text(json.dumps(dict(config, hidden_dropout_prob=None)))
    capsys.readouterr()

    assert main([str(hf), str(tmp_path / "out.keras")]) == 2

    assert capsys.readouterr().err == (
        f"error: {hf / 'config.json'}: `hidden_dropout_prob` must be a number. "
        "Received: hidden_dropout_prob=None\n"
    )
    assert sorted(os.listdir(tmp_path)) == ["google", "hf"]


def folder_bytes(folder):
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


# A previous output takes 20k of a tmpfs (4k pages): 24k leaves no room for the
# new model.safetensors (safetensors' own error type), 32k for its config.json.
@pytest.mark.backend_independent
@pytest.mark.parametrize("size", ["24k", "32k"])
def test_full_disk_keeps_the_previous_hugging_face_folder(tmp_path, small_disk, size):
    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))
    disk = small_disk(size)
    hf = disk / "hf"
    convert(str(tmp_path / "google"), str(hf))
    before = folder_bytes(hf)

    with pytest.raises(Exception) as error:
        convert(str(tmp_path / "google"), str(hf), overwrite=True, heads=True)

    assert is_disk_full(error.value)  # What the command turns into one line.
    assert os.listdir(disk) == ["hf"]  # No temporary folder left.
    assert folder_bytes(hf) == before


@pytest.mark.backend_independent
def test_full_disk_is_one_line(tmp_path, small_disk):
    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))
    disk = small_disk("8k")
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert.convert", str(tmp_path / "google"), str(disk / "hf")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: no space left on device in {disk / 'hf'}: free space and run the same "
        "command again (it replaces what this run wrote; nothing is left half-written)."
    )
    assert os.listdir(disk) == []


@pytest.mark.backend_independent
def test_an_output_folder_spelled_with_a_separator(tmp_path, monkeypatch, capsys):
    # Issue 67 item 7: `pout/hf/` put the claim at `pout/hf/..lock` (no such
    # folder), and `--overwrite` refused the folder for "also holding
    # ..lock"; item 13: a missing parent folder was refused, where predict
    # makes it. As a command, on a backbone another process (this one) wrote.
    from keras_bert import BertBackbone

    env = dict(os.environ, PYTHONPATH=ROOT)
    backbone = BertBackbone(**TINY)
    backbone.vocabulary = VOCAB
    backbone.save(tmp_path / "backbone.keras")
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert.convert", "backbone.keras", "pout/hf/"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    hf_files = ["config.json", "model.safetensors", "vocab.txt"]
    assert sorted(os.listdir(tmp_path / "pout")) == ["hf"]  # No claim left.
    assert sorted(os.listdir(tmp_path / "pout" / "hf")) == hf_files
    monkeypatch.chdir(tmp_path)

    assert main(["backbone.keras", "pout/hf/", "--overwrite"]) == 0, capsys.readouterr().err
    assert sorted(os.listdir(tmp_path / "pout")) == ["hf"]
    assert sorted(os.listdir(tmp_path / "pout" / "hf")) == hf_files


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "dst, make, message",
    [
        (
            "hf",
            "folder",
            "not replaced: --overwrite replaces only a folder "
            "holding config.json, model.safetensors, vocab.txt; it also holds "
            "keep.txt, sub.",
        ),
        ("hf", "file", "is a file, not a Hugging Face folder; not replaced."),
        ("m.keras", "folder", "is a folder, not a .keras file; not replaced."),
    ],
)
def test_overwrite_never_deletes_user_files(tmp_path, capsys, dst, make, message):
    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))
    path = tmp_path / dst
    if make == "folder":
        (path / "sub").mkdir(parents=True)
        (path / "sub" / "notes.txt").write_text("mine")
        (path / "keep.txt").write_text("mine")
        (path / "config.json").write_text("mine")
    else:
        path.write_text("mine")
    before = sorted(str(p) for p in tmp_path.rglob("*"))

    assert main([str(tmp_path / "google"), str(path), "--overwrite"]) == 2

    assert capsys.readouterr().err == f"error: {path}: {message}\n"
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    if make == "folder":
        assert (path / "config.json").read_text() == "mine"
    else:
        assert path.read_text() == "mine"


@pytest.mark.backend_independent
def test_unwritable_destination_is_one_line(tmp_path, capsys, monkeypatch):
    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))
    # Tests may run as root, which chmod cannot lock out.
    monkeypatch.setattr("keras_bert.conversion.converter.os.access", lambda path, mode: False)

    assert main([str(tmp_path / "google"), str(tmp_path / "hf")]) == 2

    assert capsys.readouterr().err == (
        f"error: {tmp_path / 'hf'}: parent folder {tmp_path} is not writable.\n"
    )
    assert sorted(os.listdir(tmp_path)) == ["google"]


@pytest.mark.backend_independent
def test_unreadable_source_is_one_line(tmp_path, capsys, monkeypatch):
    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "google"))

    monkeypatch.setattr("keras_bert.conversion.converter.read_google_checkpoint", refuse)

    assert main([str(tmp_path / "google"), str(tmp_path / "hf")]) == 2

    err = capsys.readouterr().err
    assert err.startswith("error: [Errno 13] Permission denied")
    assert err.count("\n") == 1


@pytest.mark.backend_independent
def test_error_is_one_line(tmp_path, capsys):
    weights = random_weights(original_shapes())
    del weights["cls/seq_relationship/output_bias"]
    write_google_checkpoint(tmp_path / "google", weights)

    assert main([str(tmp_path / "google"), str(tmp_path / "out.keras")]) == 2

    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("error: Google BERT checkpoint")
    assert "1 missing: cls/seq_relationship/output_bias" in captured.err
    assert sorted(os.listdir(tmp_path)) == ["google"]


@pytest.mark.slow
def test_entry_point_exits_non_zero_without_traceback(tmp_path):
    weights = random_weights(original_shapes())
    weights["bert/pooler/dense/kernel"] = np.zeros((8, 3), "float32")
    write_google_checkpoint(tmp_path / "google", weights)

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "keras_bert.convert",
            str(tmp_path / "google"),
            str(tmp_path / "out.keras"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )

    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert "bert/pooler/dense/kernel (8, 3) vs (8, 8)" in errors[0]
    assert "Traceback" not in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["google"]


@pytest.mark.backend_independent
def test_weights_file_destination_is_refused(tmp_path, capsys):
    assert main([str(tmp_path / "missing"), str(tmp_path / "x.weights.h5")]) == 2
    assert "a `.keras` file or a folder" in capsys.readouterr().err
    assert main([str(tmp_path / "missing"), str(tmp_path / "out.keras")]) == 2
    assert "no such checkpoint" in capsys.readouterr().err


@pytest.mark.backend_independent
def test_outputs_follow_the_umask(tmp_path):
    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))
    previous = os.umask(0o027)
    try:
        assert main([str(tmp_path / "google"), str(tmp_path / "hf")]) == 0
        assert main([str(tmp_path / "google"), str(tmp_path / "m.keras")]) == 0
    finally:
        os.umask(previous)

    def mode(name):
        return os.stat(tmp_path / name).st_mode & 0o777

    assert mode("hf") == 0o750 and mode("m.keras") == 0o640
    for name in ("config.json", "model.safetensors", "vocab.txt"):
        assert mode(f"hf/{name}") == 0o640


@pytest.mark.parametrize(
    "flag, heads",
    [
        ("--with_heads", True),
        ("--with-heads", True),
        ("--without_heads", False),
        ("--without-heads", False),
        (None, None),
    ],
)
def test_heads_flags_snake_case_and_hyphenated(flag, heads, monkeypatch, capsys):
    received = {}

    def convert(src, dst, **kwargs):
        received.update(kwargs)
        return ["converted"]

    monkeypatch.setattr("keras_bert.conversion.converter.convert", convert)
    assert main(["src", "dst.keras"] + ([flag] if flag else [])) == 0
    assert received["heads"] is heads
    assert capsys.readouterr().out == "converted\n"


def test_with_and_without_heads_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["src", "dst.keras", "--with_heads", "--without-heads"])
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.backend_independent
def test_destination_is_never_the_source_or_a_runs_model(tmp_path, capsys):
    write_google_checkpoint(tmp_path / "google", random_weights(original_shapes(heads=False)))
    source = str(tmp_path / "m.keras")
    assert main([str(tmp_path / "google"), source]) == 0
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("task: sst2\n")
    (run / "model.keras").write_bytes(b"the run's model")
    os.symlink(source, tmp_path / "link.keras")
    before = open(source, "rb").read()
    capsys.readouterr()
    for dst, message in [
        (str(tmp_path / "link.keras"), f"is the input --input {source}"),
        (str(run / "model.keras"), f"is model.keras of the run in {run}"),
    ]:
        assert main([source, dst, "--overwrite"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
    assert open(source, "rb").read() == before
    assert (run / "model.keras").read_bytes() == b"the run's model"


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "overrides, named",
    [
        ({"normalize_first": True}, "pre-LayerNorm blocks (normalize_first=True)"),
        ({"use_bias": False}, "no linear biases (use_bias=False)"),
        (
            {"gated_feedforward": True, "use_bias": False},
            "no linear biases (use_bias=False) and gated feed-forward blocks "
            "(gated_feedforward=True)",
        ),
    ],
)
def test_a_backbone_the_formats_cannot_hold_is_refused_naming_why(
    tmp_path, capsys, overrides, named
):
    from keras_bert import BertBackbone

    source = tmp_path / "unholdable.keras"
    BertBackbone(**TINY, **overrides).save(source)
    assert main([str(source), str(tmp_path / "hf")]) == 2
    assert capsys.readouterr().err == (
        f"error: keras_bert archive {source}: a BertBackbone with {named}; Google's and "
        "Hugging Face's BERT formats hold BERT's post-LN, biased, ungated blocks only, so "
        "it cannot be converted (it fine-tunes and exports as it is).\n"
    )
    assert sorted(os.listdir(tmp_path)) == ["unholdable.keras"]


@pytest.mark.backend_independent
@pytest.mark.parametrize("which", ["src", "dst"])
def test_a_remote_path_is_one_line_saying_convert_is_local(tmp_path, capsys, which):
    # Issue 49: "no such checkpoint" misled for a gs:// source.
    paths = {"src": str(tmp_path / "google"), "dst": str(tmp_path / "m.keras")}
    paths[which] = "gs://bucket/bert"
    assert main([paths["src"], paths["dst"]]) == 2
    assert capsys.readouterr().err == (
        "error: gs://bucket/bert: convert reads and writes local paths only; copy it here "
        "first (e.g. gcloud storage cp -r).\n"
    )


@pytest.mark.parametrize(
    "argv, paths",
    [
        (["--input", "src", "--output", "dst.keras"], ("src", "dst.keras")),
        (["src", "dst.keras"], ("src", "dst.keras")),  # The first spelling.
        (["--output", "dst.keras", "src"], ("src", "dst.keras")),
        # Issue 67 item 13: refused as "--input and SRC both given".
        (["--input", "src", "dst.keras"], ("src", "dst.keras")),
        # Spelt one way (`paths.normal_path`) whichever way they come.
        (["./src/", "out/../hf/"], ("src", "hf")),
        (["--input", "./src/", "--output", "out/../hf/"], ("src", "hf")),
    ],
)
def test_paths_by_flag_or_by_position(argv, paths, monkeypatch, capsys):
    received = []
    monkeypatch.setattr(
        "keras_bert.conversion.converter.convert",
        lambda src, dst, **kwargs: received.append((src, dst)) or ["converted"],
    )
    assert main(argv) == 0
    assert received == [paths]


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "--input SRC is required (or SRC by position)"),
        (["--input", "src"], "--output DST is required (or DST by position)"),
        (
            ["--input", "a", "b", "c"],
            "--input a, b, c: 3 paths for SRC and DST; give the paths as --input SRC "
            "--output DST, or as SRC DST",
        ),
        (
            ["--output", "a", "b", "c"],
            "--output a, b, c: 3 paths for SRC and DST; give the paths as --input SRC "
            "--output DST, or as SRC DST",
        ),
        (["--input", "a", "--input", "b", "c"], "argument --input: a and b both given; give one"),
    ],
)
def test_a_path_missing_or_given_twice_is_a_usage_error(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().endswith(f"error: {message}")
