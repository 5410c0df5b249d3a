"""`output_bias_init: unigram`: the masked LM's output bias starts at the
log-frequency of the training documents' first tokens."""

import numpy as np
import pytest

from keras_bert.errors import ConfigError
from keras_bert.pretraining import build_pretraining
from keras_bert.pretraining import run_setup as pretraining_module
from keras_bert.pretraining.run_setup import split_corpus, unigram_log_prior
from tests.pipelines.reference_tokenizer import ReferenceTokenizer
from tests.pretraining.conftest import VOCAB, tiny_config


@pytest.mark.backend_independent
def test_prior_is_the_smoothed_log_frequency_of_the_first_training_tokens(
    tmp_path, tiny_corpus, monkeypatch
):
    # Without shuffling, the first two training files' text (one document
    # each, read in turn), cut after 300 tokens, tokenized here by the
    # pure-Python reference.
    monkeypatch.setattr(pretraining_module, "PRIOR_TOKENS", 300)
    config = tiny_config(tmp_path, tiny_corpus)  # data.shuffle false
    train_files, _ = split_corpus(config.data)
    prior = unigram_log_prior(config, train_files)

    reference = ReferenceTokenizer(VOCAB)
    first, second = (reference.ids(open(path, encoding="utf-8").read()) for path in train_files[:2])
    assert len(first) < 300 < len(first) + len(second)
    tokens = first + second
    counts = np.bincount(tokens[:300], minlength=30522) + 0.1
    np.testing.assert_allclose(prior, np.log(counts / counts.sum()), rtol=1e-5)


@pytest.mark.parametrize("objective", ["masked_lm", "electra"])
def test_unigram_sets_the_masked_lm_output_bias(tmp_path, tiny_corpus, objective):
    config = tiny_config(tmp_path, tiny_corpus, objective=objective, output_bias_init="unigram")
    pretraining = build_pretraining(config)
    expected = unigram_log_prior(config, pretraining.train_files)
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
