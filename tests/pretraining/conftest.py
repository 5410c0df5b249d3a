"""Shared helpers for the training tests: a tiny corpus and config."""

import json
import os
import random

import keras
import pytest

from keras_bert.pretraining import load_pretraining_config, run_pretraining

VOCAB = "data/vocab/bert_uncased_vocab.txt"


def write_corpus(directory, documents=6, seed=0):
    """Raw-text files of random real WordPiece words: one document each."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    with open(VOCAB) as f:
        words = f.read().split()[2000:4000]
    for d in range(documents):
        paragraphs = []
        for _ in range(4):
            sentences = [
                " ".join(rng.choice(words) for _ in range(rng.randint(5, 14))) + "."
                for _ in range(rng.randint(3, 6))
            ]
            paragraphs.append(" ".join(sentences))
        (directory / f"doc{d}.txt").write_text("\n\n".join(paragraphs) + "\n")
    return str(directory / "*.txt")


def tiny_overrides(tmp_path, corpus):
    """A 1-layer H=16 BERT, two short phases, unshuffled (fast start-up)."""
    return {
        "model_overrides": {
            "num_layers": 1,
            "hidden_dim": 16,
            "num_heads": 2,
            "intermediate_dim": 32,
            "dropout": 0.0,
        },
        "data.train_files": corpus,
        "data.holdout_fraction": 0.3,
        "data.shuffle": False,
        "phases": [
            {"seq_len": 32, "max_predictions": 5, "batch_size": 4, "steps": 6},
            {"seq_len": 64, "max_predictions": 10, "batch_size": 2, "steps": 3},
        ],
        "train_steps": 9,
        "train_budget_minutes": None,  # Step-based; time budgets: test_time_budget.py.
        # Counting the prior costs seconds on a tiny corpus: test_output_bias_init.py.
        "output_bias_init": "zeros",
        "optimizer.warmup_steps": 2,
        "optimizer.learning_rate": 1e-3,
        "checkpoint.every_steps": 3,
        "checkpoint.keep": 2,
        "steps_per_loop": 2,
        "eval_steps": 1,
        "eval_every_steps": 0,
        "fill_mask_probes": [],
        "strategy": "auto",
        "model_dir": str(tmp_path / "run"),
    }


def tiny_config(tmp_path, corpus, **extra):
    overrides = tiny_overrides(tmp_path, corpus)
    overrides.update(extra)
    return load_pretraining_config("default", overrides)


def tiny_cli_args(tmp_path, corpus, **extra):
    """`tiny_config`'s values as `python -m keras_bert.pretrain` flags."""
    overrides = tiny_overrides(tmp_path, corpus)
    overrides.update(extra)
    # JSON is YAML: `--set` values read back as the same lists and dicts.
    return [
        arg for key, value in overrides.items() for arg in ("--set", f"{key}={json.dumps(value)}")
    ]


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus"))


class StepRecorder(keras.callbacks.Callback):
    """Records the optimizer step at every batch."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def on_train_batch_begin(self, batch, logs=None):
        self.seen.append(int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)))


@pytest.fixture(scope="session")
def full_run(tmp_path_factory, tiny_corpus):
    """`tiny_config`'s step-based run from seed 7, trained once per test
    process: the reference that resumed and budgeted runs must equal, and a
    finished folder to rerun (`test_runner.copy_of_full_run`)."""
    tmp_path = tmp_path_factory.mktemp("full")
    keras.utils.set_random_seed(7)
    config = tiny_config(tmp_path, tiny_corpus)
    recorder = StepRecorder()
    previous = os.umask(0o022)  # See test_runner.test_outputs_follow_the_umask.
    try:
        results = run_pretraining(config, verbose=0, callbacks=[recorder])
    finally:
        os.umask(previous)
    return config, results, recorder
