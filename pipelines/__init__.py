"""tf.data + tensorflow-text pipelines for BERT (no Keras here).

Public API:

* `BertTokenizer`: in-graph WordPiece, id for id equal to the original BERT.
* `pretraining_dataset`: masked-LM + next-sentence batches from a corpus.
* `split_files`: hold out corpus files for evaluation.
* `write_tfrecord_shards`: tokenize a corpus once (`python -m keras_bert.data`).
* `load_vocabulary`, `learn_vocabulary`
  (`python -m keras_bert.vocab`).
* `PipelineInputError` (a `ValueError`), `VocabularyError`, `CorpusError`.
"""

from pipelines.bert_tokenizer import BertTokenizer
from pipelines.corpus import list_files, split_files, strip_gutenberg_boilerplate
from pipelines.errors import CorpusError, PipelineInputError, VocabularyError
from pipelines.pretraining import pretraining_dataset
from pipelines.shards import write_tfrecord_shards
from pipelines.vocabulary import SPECIAL_TOKENS, load_vocabulary
from pipelines.vocabulary_learner import learn_vocabulary

__all__ = [
    "BertTokenizer",
    "CorpusError",
    "PipelineInputError",
    "SPECIAL_TOKENS",
    "VocabularyError",
    "learn_vocabulary",
    "list_files",
    "load_vocabulary",
    "pretraining_dataset",
    "split_files",
    "strip_gutenberg_boilerplate",
    "write_tfrecord_shards",
]
