"""Errors raised for bad pipeline inputs.

Every error names the offending file and the problem, and is raised eagerly
(in Python, before the tf.data graph is built) so that a bad corpus or
vocabulary never surfaces as a crash deep inside TensorFlow.
"""


class PipelineInputError(ValueError):
    """A corpus file, shard or vocabulary cannot be used."""


class VocabularyError(PipelineInputError):
    """A vocabulary file is missing, malformed or lacks a special token."""


class CorpusError(PipelineInputError):
    """Corpus files are missing, empty or unreadable."""
