"""Fine-tuning task readers: files → examples → packed ids → tf.data.

* GLUE files, the distribution's TSVs or a Hugging Face `datasets` export
  (`GLUE_TASKS`, `read_glue`), and generic tables (`read_table`), packed by
  `classification_features`. Tables are CSV, TSV, JSON Lines, JSON,
  Parquet, a `datasets` save_to_disk folder or a split in the Hub's
  Parquet shards (`read_rows`; the last three need pyarrow, an optional
  extra).
* SQuAD v1.1/v2.0 JSON (`read_squad`, `squad_features`, windows by
  `doc_spans`).
* CoNLL-2003 IOB1/IOB2 files (`read_conll`, `tagging_features`, `words_cut`).
* SWAG CSV (`read_swag`, `choice_features`).
* `make_dataset`: dynamically padded batches (random for training, or of
  one length bucket each with `group_by_length`) from any of the above.

Bad input raises `TaskDataError` (a `pipelines.PipelineInputError`) naming
the file and line. No Keras here.
"""

from pipelines.tasks.conll import (
    TaggedSentence,
    read_conll,
    tag_names,
    tagging_features,
    words_cut,
)
from pipelines.tasks.errors import TaskDataError
from pipelines.tasks.features import (
    IGNORED_LABEL,
    make_dataset,
    pack_pair,
    tokenize_texts,
    truncated_lengths,
)
from pipelines.tasks.squad import (
    SquadExample,
    SquadFeature,
    doc_spans,
    read_squad,
    split_words,
    squad_features,
)
from pipelines.tasks.swag import NUM_CHOICES, ChoiceExample, choice_features, read_swag
from pipelines.tasks.table_formats import TABLE_EXTENSIONS, is_saved_dataset, read_rows
from pipelines.tasks.tables import (
    GLUE_DIRS,
    GLUE_TASKS,
    GLUE_TEST_COLUMNS,
    Example,
    canonical_label,
    classification_features,
    find_split_file,
    glue_alternative,
    glue_data_dir,
    is_glue_export,
    is_glue_test_file,
    read_glue,
    read_glue_test,
    read_table,
)

__all__ = [
    "ChoiceExample",
    "Example",
    "GLUE_DIRS",
    "GLUE_TASKS",
    "GLUE_TEST_COLUMNS",
    "IGNORED_LABEL",
    "NUM_CHOICES",
    "SquadExample",
    "SquadFeature",
    "TABLE_EXTENSIONS",
    "TaggedSentence",
    "TaskDataError",
    "canonical_label",
    "choice_features",
    "classification_features",
    "doc_spans",
    "find_split_file",
    "glue_alternative",
    "glue_data_dir",
    "is_glue_export",
    "is_glue_test_file",
    "is_saved_dataset",
    "make_dataset",
    "pack_pair",
    "read_conll",
    "read_glue",
    "read_glue_test",
    "read_rows",
    "read_squad",
    "read_swag",
    "read_table",
    "split_words",
    "squad_features",
    "tag_names",
    "tagging_features",
    "tokenize_texts",
    "truncated_lengths",
    "words_cut",
]
