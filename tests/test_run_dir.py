"""`refuse_another_run`: which run a `model_dir` holds, checked before a
pre-training or fine-tuning run writes into it. (`RunLock` is tested through
the runners: tests/pretraining/test_runner.py, tests/finetuning.)"""

import pytest

from keras_bert.errors import ConfigError, FinetuneError
from keras_bert.run_dir import refuse_another_run

pytestmark = pytest.mark.backend_independent


def folder(tmp_path, config=None, lock=False, checkpoints=False):
    if config is not None:
        (tmp_path / "config.yaml").write_text(config)
    if lock:
        (tmp_path / "pretrain.lock").write_text("1 host\n")
    if checkpoints:
        (tmp_path / "checkpoints").mkdir()
    return str(tmp_path)


@pytest.mark.parametrize("config", [None, "phases: []\n", "{not yaml", "[1, 2]\n"])
def test_pretraining_continues_in_its_own_or_an_unclear_folder(tmp_path, config):
    refuse_another_run(folder(tmp_path, config))


def test_pretraining_refuses_a_finetuning_folder(tmp_path):
    model_dir = folder(tmp_path, "task: sst2\n")
    with pytest.raises(ConfigError) as error:
        refuse_another_run(model_dir)
    assert str(error.value) == (
        f"model_dir {model_dir!r} holds a fine-tuning run (task 'sst2'); "
        "pre-train into another folder."
    )


@pytest.mark.parametrize("setup", [{}, {"config": "task: sst2\n"}])
def test_finetuning_reruns_into_its_own_or_a_new_folder(tmp_path, setup):
    refuse_another_run(folder(tmp_path, **setup), "sst2")


@pytest.mark.parametrize(
    "setup, message",
    [
        (
            {"lock": True},
            "holds a pre-training run; fine-tune into another folder "
            "(--init_checkpoint takes its backbone.keras)",
        ),
        ({"checkpoints": True}, "holds a pre-training run"),
        (
            {"config": "phases: []\ntask: sst2\n"},
            "its config.yaml is not a fine-tuning run's; pick another folder",
        ),
        ({"config": "{not yaml"}, "its config.yaml is not a fine-tuning run's"),
        (
            {"config": "task: cola\n"},
            "holds a fine-tuning run of task 'cola'; pick another folder for 'sst2'",
        ),
    ],
)
def test_finetuning_refuses_another_run(tmp_path, setup, message):
    model_dir = folder(tmp_path, **setup)
    with pytest.raises(FinetuneError) as error:
        refuse_another_run(model_dir, "sst2")
    assert str(error.value).startswith(f"--model_dir {model_dir}: {message}")
