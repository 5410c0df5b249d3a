"""The import graph the commands rely on (issue 48): a command's argument
parser, its `--help` and a bad flag answer before TensorFlow, Keras or
JAX load; and `import keras_bert` registers its classes in every program
that is not one of those commands."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from tests.test_doc_references import COMMANDS

pytestmark = pytest.mark.backend_independent

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAVY = ("tensorflow", "keras", "jax", "torch")


def heavy_imports(args, tmp_path):
    """`python -X importtime ARGS` → the heavy packages it imported."""
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    imported = re.findall(r"^import time:.*\|\s*([\w.]+)$", result.stderr, re.MULTILINE)
    return result, sorted(set(imported) & set(HEAVY))


@pytest.mark.parametrize("flag", ["--help", "--no_such_flag"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_parses_its_arguments_without_heavy_imports(command, flag, tmp_path):
    result, heavy = heavy_imports(["-m", f"keras_bert.{command}", flag], tmp_path)
    assert result.returncode == (0 if flag == "--help" else 2), result.stderr[-2000:]
    assert f"usage: python -m keras_bert.{command}" in result.stdout + result.stderr
    assert heavy == [], f"{command} {flag} imported {heavy}"


def test_the_import_check_sees_a_heavy_import(tmp_path):
    _, heavy = heavy_imports(["-c", "import keras_bert, keras"], tmp_path)
    assert "keras" in heavy


def test_import_keras_bert_leaves_keras_unloaded(tmp_path):
    result, heavy = heavy_imports(["-c", "import keras_bert"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert heavy == []


@pytest.mark.parametrize(
    "imports", ["import keras_bert, keras", "import keras, keras_bert", "import keras_bert.models"]
)
def test_the_classes_are_registered_whichever_loads_first(imports):
    # Issue 67 item 1: the same in every program, a command's included; no
    # sniffing of the command line.
    code = (
        f"{imports}; import keras; "
        "print(keras.saving.get_registered_object('keras_bert>BertClassifier').__name__, "
        "keras.saving.get_registered_object('keras_bert>AdamWeightDecay').__name__)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["BertClassifier", "AdamWeightDecay"]


def test_a_users_python_dash_m_package_gets_the_classes_registered(tmp_path):
    # Issue 48: keras_bert once read "python -m" from sys.argv[0], which is
    # "-m" while *any* -m target's package is imported, so a user's package
    # importing keras_bert in its __init__ could not load a .keras file.
    package = tmp_path / "user_package"
    package.mkdir()
    (package / "__init__.py").write_text("import keras_bert\n")
    (package / "main.py").write_text(
        textwrap.dedent(
            """
            import keras
            print(keras.saving.get_registered_object("keras_bert>BertBackbone").__name__)
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    result = subprocess.run(
        [sys.executable, "-m", "user_package.main"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "BertBackbone"


def finetune_args(*extra, data_dir=".", checkpoint="random:bert_tiny"):
    return ["keras_bert.finetune", "--task", "sst2", "--data_dir", data_dir] + [
        "--init_checkpoint",
        checkpoint,
        "--model_dir",
        "runs/never",
        *extra,
    ]


@pytest.mark.parametrize(
    "args, error",
    [
        (["keras_bert.pretrain", "--set", "foo=1"], "error: Unknown config key 'foo'"),
        # Issue 67 item 11: every local path a config names, before the probe.
        (
            ["keras_bert.pretrain", "--set", "data.train_files=nosuch/*.txt"],
            "error: No corpus file matches 'nosuch/*.txt'. Received: data.train_files",
        ),
        (
            ["keras_bert.pretrain", "--set", "data.eval_files=[nosuch.txt]"],
            "error: No corpus file matches 'nosuch.txt'. Received: data.eval_files",
        ),
        (
            ["keras_bert.pretrain", "--set", "data.vocab_file=no/vocab.txt"],
            "error: data.vocab_file 'no/vocab.txt' does not exist.",
        ),
        (
            # A folder with no checkpoints: the default run's, left by
            # `make pretrain`, would resume and never read the file.
            [
                "keras_bert.pretrain",
                "--init_checkpoint",
                "no/such.keras",
                "--model_dir",
                "runs/never",
            ],
            "error: init_checkpoint 'no/such.keras' does not exist.",
        ),
        (
            ["keras_bert.pretrain", "--set", "phases.0.seq_len=3"],
            "error: phases.0: `seq_len` must be >= 5",
        ),
        (
            finetune_args(data_dir="no/such/dir"),
            "error: --data_dir no/such/dir: no such directory",
        ),
        (finetune_args("--set", "training.epochs=0"), "error: "),
        (finetune_args("--set", "trainign.epochs=1"), "error: "),
        (
            finetune_args(checkpoint="no/such.keras"),
            "error: no/such.keras: no such checkpoint file or folder",
        ),
        (
            finetune_args(checkpoint="random:bert_huge"),
            "error: --init_checkpoint random:bert_huge: Unknown model config 'bert_huge'",
        ),
        (
            finetune_args("--vocab", "no/vocab.txt"),
            "error: --vocab no/vocab.txt: no such file",
        ),
    ],
)
def test_a_training_commands_bad_input_answers_before_the_backend_is_measured(
    args, error, tmp_path
):
    # Issue 49 item 11: with KERAS_BACKEND unset and nothing cached, the
    # error came after the backend probe (~2 minutes on a slow machine).
    result, heavy = heavy_imports(["-m", *args], tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].startswith(error), result.stderr[-2000:]
    assert "Measuring which Keras backend" not in result.stderr
    assert heavy == [] and not (tmp_path / "cache").exists()


@pytest.mark.parametrize(
    "args, error",
    [
        (
            ["keras_bert.pretrain", "--model_dir", "runs/never"]
            + ["--set", "model_overrides.hidden_dim=100000000000"],
            "error: model_overrides: `hidden_dim` must be an integer in [1, 65,536]. "
            "Received: hidden_dim=100000000000",
        ),
        (
            finetune_args(checkpoint="random:HUGE"),
            "error: --init_checkpoint random:HUGE: HUGE: `hidden_dim` must be an integer "
            "in [1, 65,536]. Received: hidden_dim=100000000000",
        ),
    ],
    ids=["pretrain-model_overrides", "finetune-random"],
)
def test_a_model_out_of_bounds_is_one_line_before_the_backend_is_measured(args, error, tmp_path):
    # Issue 67 item 9: an out-of-memory traceback after the backend probe.
    huge = tmp_path / "huge.yaml"
    huge.write_text(
        "vocabulary_size: 100\nnum_layers: 2\nnum_heads: 2\n"
        "hidden_dim: 100000000000\nintermediate_dim: 32\n"
    )
    args = [arg.replace("HUGE", str(huge)) for arg in args]
    result, heavy = heavy_imports(["-m", *args], tmp_path)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if not line.startswith("import time:")]
    assert lines == [error.replace("HUGE", str(huge))], result.stderr[-2000:]
    assert heavy == [] and not (tmp_path / "cache").exists()
