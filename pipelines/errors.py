"""Errors raised for bad pipeline inputs.

Every error names the offending file and the problem, and is raised eagerly
(in Python, before the tf.data graph is built) so that a bad corpus or
vocabulary never surfaces as a crash deep inside TensorFlow.
"""


class UserError(ValueError):
    """An input the user can fix. The message is one line that names it;
    keras_bert's commands print it without a traceback and exit with
    status 2. Defined here, at the bottom of the import graph, so that the
    pipelines' errors and keras_bert's share one base."""


class PipelineInputError(UserError):
    """A corpus file, shard or vocabulary cannot be used."""


class VocabularyError(PipelineInputError):
    """A vocabulary file is missing, malformed or lacks a special token."""


class CorpusError(PipelineInputError):
    """Corpus files are missing, empty or unreadable."""
