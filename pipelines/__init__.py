"""tf.data + tensorflow-text pipelines for BERT (no Keras here).

Public API:

* `BertTokenizer`: in-graph WordPiece, id for id equal to the original BERT.
* `pretraining_dataset`: masked-LM + next-sentence batches from a corpus.
* `corpus_token_counts`: token frequencies of a corpus's first tokens.
* `split_files`: hold out corpus files for evaluation.
* `write_tfrecord_shards`: tokenize a corpus once (`python -m keras_bert.data`).
* `load_vocabulary`, `learn_vocabulary`
  (`python -m keras_bert.vocab`).
* `PipelineInputError` (a `ValueError`), `VocabularyError`, `CorpusError`.
"""

import importlib

# Each public name is loaded on first use (as `keras_bert`'s own are), so
# that `pipelines.errors` and the other light modules import without
# TensorFlow.
_PUBLIC = {
    "BertTokenizer": "pipelines.bert_tokenizer",
    "CorpusError": "pipelines.errors",
    "PipelineInputError": "pipelines.errors",
    "SPECIAL_TOKENS": "pipelines.vocabulary",
    "VocabularyError": "pipelines.errors",
    "corpus_token_counts": "pipelines.pretraining",
    "learn_vocabulary": "pipelines.vocabulary_learner",
    "list_files": "pipelines.corpus_files",
    "load_vocabulary": "pipelines.vocabulary",
    "pretraining_dataset": "pipelines.pretraining",
    "split_files": "pipelines.corpus_files",
    "strip_gutenberg_boilerplate": "pipelines.corpus",
    "write_tfrecord_shards": "pipelines.shards",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'pipelines' has no attribute {name!r}")
