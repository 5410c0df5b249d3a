"""The loss falls when BERT-Tiny pre-trains on the bundled corpus."""

import os

import pytest

from keras_bert.pretraining import load_pretraining_config, run_pretraining
from tests.pretraining.test_runner import read_scalars


@pytest.mark.slow
def test_loss_falls_on_bundled_corpus(tmp_path):
    config = load_pretraining_config(
        "default",
        {
            "phases": [{"seq_len": 128, "max_predictions": 20, "batch_size": 16, "fraction": 1.0}],
            "train_steps": 200,
            "budget_stops_at_train_steps": True,  # Not on to the default's deadline.
            # From a zero output bias the loss starts uniform over the softmax's
            # candidates and falls as word frequencies are learnt; the default's
            # unigram bias starts it on the plateau (6.7), where 200 updates stay.
            "output_bias_init": "zeros",
            "steps_per_loop": 20,
            "eval_steps": 5,
            "eval_every_steps": 0,
            "fill_mask_probes": [],
            "checkpoint.every_steps": 100,
            "optimizer.warmup_steps": 20,
            "model_dir": str(tmp_path / "run"),
        },
    )
    results = run_pretraining(config, verbose=0)
    assert results["state"].finished
    scalars = read_scalars(os.path.join(config.model_dir, "logs", "train"))
    loss = [value for _, value in sorted(scalars["mlm_loss"])]
    assert loss[-1] < loss[0] - 1.0, loss
    assert loss[-1] < 8.0, loss
    assert results["eval"][0]["mlm_accuracy"] > 0.03
