"""Paths shared by the pipeline tests."""

import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = os.path.join(ROOT, "data", "vocab", "bert_uncased_vocab.txt")
CORPUS = os.path.join(ROOT, "data", "corpus")
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "data")


def shared_path(*parts):
    """A path under ../shared/data, or skip the test when it is absent."""
    path = os.path.join(SHARED, *parts)
    if not os.path.exists(path):
        pytest.skip(f"{path} not present (../shared/data is optional)")
    return path
