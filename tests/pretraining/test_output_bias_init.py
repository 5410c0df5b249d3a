"""`output_bias_init: unigram`: the masked LM's output bias starts at the
log-frequency of the training stream's masked targets."""

import keras
import numpy as np
import pytest

from keras_bert.errors import ConfigError
from keras_bert.pretraining import build_pretraining
from keras_bert.pretraining import pretraining as pretraining_module
from keras_bert.pretraining.pretraining import split_corpus, unigram_log_prior
from tests.pretraining.conftest import tiny_config


def _real_targets(dataset, batches):
    """The original ids of every real prediction in `batches` Keras
    batches, counted here in NumPy."""
    targets = []
    for _, labels, sample_weights in dataset.take(batches):
        ids, weights = np.asarray(labels["mlm"]), np.asarray(sample_weights["mlm"])
        targets.append(ids[weights > 0])
    return np.concatenate(targets)


@pytest.mark.backend_independent
def test_prior_is_the_smoothed_log_frequency_of_the_first_training_targets(
    tmp_path, tiny_corpus, monkeypatch
):
    # Two batches of phase 0 (4 sequences x 5 predictions each).
    monkeypatch.setattr(pretraining_module, "PRIOR_TARGETS", 40)
    config = tiny_config(tmp_path, tiny_corpus, sampled_softmax_candidates=None)
    train_files, _ = split_corpus(config.data)
    keras.utils.set_random_seed(config.data.seed)  # As `build_pretraining` does first.
    prior = unigram_log_prior(config, train_files, 30522)

    stream = build_pretraining(config).phases[0].dataset()
    counts = np.bincount(_real_targets(stream, 2), minlength=30522) + 0.1
    np.testing.assert_allclose(prior, np.log(counts / counts.sum()), rtol=1e-5)


@pytest.mark.parametrize("objective", ["masked_lm", "electra"])
def test_unigram_sets_the_masked_lm_output_bias(tmp_path, tiny_corpus, objective):
    config = tiny_config(tmp_path, tiny_corpus, objective=objective, output_bias_init="unigram")
    pretraining = build_pretraining(config)
    expected = unigram_log_prior(config, pretraining.train_files, 30522)
    bias = np.asarray(pretraining.model.masked_lm_output_bias)
    np.testing.assert_allclose(bias, expected, rtol=1e-6)


def test_zeros_is_the_papers_bias(tmp_path, tiny_corpus):
    config = tiny_config(tmp_path, tiny_corpus, output_bias_init="zeros")
    bias = np.asarray(build_pretraining(config).model.masked_lm_output_bias)
    assert not bias.any()


@pytest.mark.backend_independent
def test_unknown_output_bias_init_is_refused(tmp_path, tiny_corpus):
    with pytest.raises(ConfigError, match="output_bias_init.*unigram"):
        tiny_config(tmp_path, tiny_corpus, output_bias_init="log_prior").validate()
