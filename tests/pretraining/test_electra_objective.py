"""ELECTRA's objective: its loss and metrics against NumPy, and a tiny run
that trains, resumes, exports and fine-tunes on every backend."""

import json
import os
import subprocess
import sys
import warnings

import keras
import numpy as np
import pytest

from keras_bert.pretraining import CheckpointManager, run_pretraining
from keras_bert.pretraining.replaced_token_accuracy import ReplacedTokenAccuracy
from keras_bert.pretraining.replaced_token_detection_loss import ReplacedTokenDetectionLoss
from tests.pretraining.conftest import tiny_config
from tests.pretraining.test_runner import SignalAt, read_scalars


def packed(logits, replaced):
    return np.stack([logits, replaced], -1).astype("float32")  # (B, T, 2)


def test_loss_is_the_mean_sigmoid_cross_entropy_over_real_tokens():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 5)).astype("float32")
    replaced = (rng.random((2, 5)) < 0.3).astype("float32")
    weights = np.array([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0]], "float32")
    loss = ReplacedTokenDetectionLoss()(
        np.zeros((2, 5)), packed(logits, replaced), sample_weight=weights
    )
    probability = 1 / (1 + np.exp(-logits.astype("float64")))
    ce = -(replaced * np.log(probability) + (1 - replaced) * np.log(1 - probability))
    expected = (ce * weights).sum() / weights.sum()
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(loss)), expected, rtol=1e-5)


def test_accuracy_over_real_tokens_and_over_replaced_ones():
    logits = np.array([[2.0, -1.0, 3.0, -2.0, 5.0]])  # says replaced at 0, 2, 4
    replaced = np.array([[1.0, 1.0, 0.0, 0.0, 1.0]])  # position 4 is padding
    weights = np.array([[1, 1, 1, 1, 0]], "float32")
    overall, on_replaced = ReplacedTokenAccuracy(), ReplacedTokenAccuracy(replaced_only=True)
    for metric in (overall, on_replaced):
        metric.update_state(None, packed(logits, replaced), sample_weight=weights)
    assert float(overall.result()) == pytest.approx(2 / 4)  # right at 0 and 3
    assert float(on_replaced.result()) == pytest.approx(1 / 2)  # 0 found, 1 missed


@pytest.fixture(scope="module")
def electra_run(tmp_path_factory, tiny_corpus):
    tmp_path = tmp_path_factory.mktemp("electra")
    keras.utils.set_random_seed(7)
    config = tiny_config(tmp_path, tiny_corpus, objective="electra", eval_steps=0)
    with warnings.catch_warnings(record=True) as caught:
        results = run_pretraining(config, verbose=0)
    return config, results, [str(warning.message) for warning in caught]


def test_trains_logs_and_exports_the_discriminator(electra_run, tmp_path):
    config, results, caught = electra_run
    assert results["state"].finished and results["state"].step == 9
    # Issue 67 item 13: every run warned that the unused pooler has no
    # gradient.
    assert not [message for message in caught if "Gradients do not exist" in message]
    scalars = read_scalars(os.path.join(config.model_dir, "logs", "train"))
    for key in ("rtd_loss", "mlm_accuracy", "rtd_accuracy", "rtd_replaced_accuracy"):
        assert key in scalars
    files = set(os.listdir(config.model_dir))
    assert {"backbone.keras", "electra_pretrainer.keras"} <= files
    assert "pretrainer.keras" not in files
    backbone = keras.saving.load_model(os.path.join(config.model_dir, "backbone.keras"))
    assert type(backbone).__name__ == "BertBackbone"
    trained = results["pretraining"].backbone
    for a, b in zip(trained.get_weights(), backbone.get_weights()):
        np.testing.assert_array_equal(a, b)
    if keras.backend.backend() != "torch":
        assert os.listdir(os.path.join(config.model_dir, "saved_model")) == ["backbone"]
    # Issue 82 item 10: every .keras loads in a fresh interpreter after
    # nothing but `import keras_bert`, compiled as saved.
    load = (
        "import keras, keras_bert, sys; print(type(keras.saving.load_model(sys.argv[1])).__name__)"
    )
    path = os.path.join(config.model_dir, "electra_pretrainer.keras")
    done = subprocess.run([sys.executable, "-c", load, path], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "ElectraPretrainer"


def test_resume_matches_the_uninterrupted_run(electra_run, tmp_path, tiny_corpus):
    reference = electra_run[1]["pretraining"].model
    keras.utils.set_random_seed(7)
    config = tiny_config(tmp_path, tiny_corpus, objective="electra", eval_steps=0)
    assert run_pretraining(config, verbose=0, callbacks=[SignalAt(4)])["preempted"]
    latest = CheckpointManager(os.path.join(config.model_dir, "checkpoints")).latest()
    assert json.load(open(os.path.join(latest, "state.json")))["step"] == 5
    keras.utils.set_random_seed(7)
    resumed = run_pretraining(config, verbose=0)["pretraining"].model
    # Same data position, generator draws (the sampler's seed state is in
    # the checkpoint) and optimizer state: the same weights.
    for a, b in zip(reference.get_weights(), resumed.get_weights()):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6)


def test_the_discriminator_fine_tunes_as_any_backbone(electra_run, tmp_path):
    from keras_bert import finetune

    config, _, _ = electra_run
    data = tmp_path / "data"
    data.mkdir()
    rows = "".join(f"{'good' if i % 2 else 'bad'} film {i}\t{i % 2}\n" for i in range(16))
    for split in ("train", "dev"):
        (data / f"{split}.tsv").write_text("sentence\tlabel\n" + rows)
    code = finetune.main(
        [
            "--task",
            "sst2",
            "--data_dir",
            str(data),
            "--init_checkpoint",
            os.path.join(config.model_dir, "backbone.keras"),
            "--model_dir",
            str(tmp_path / "ft"),
            "--set",
            "training.epochs=1",
            "--set",
            "training.batch_size=8",
            "--set",
            "export.enabled=false",
        ]
    )
    assert code == 0
    assert os.path.exists(tmp_path / "ft" / "model.keras")


def test_the_generator_answers_the_fill_mask_probes(electra_run):
    from keras_bert.pretraining.fill_mask import fill_mask
    from pipelines import BertTokenizer

    config, results, _ = electra_run
    pretraining = results["pretraining"]
    tokenizer = BertTokenizer(config.data.vocab_file)
    probes = ["the [MASK] of the [MASK] ."]
    answers = fill_mask(pretraining.model, tokenizer, probes, 3, pretraining.objective)
    assert [len(fillers) for fillers in answers[0]] == [3, 3]
