"""Input batches shared by the conversion tests, and the fine-tuning
tests' session runs (one per task family) that the fine-tuned conversions
start from."""

import numpy as np
import pytest

from tests.finetuning.conftest import FIXTURES, checkpoint, fine_tuned, fixtures  # noqa: F401


@pytest.fixture
def inputs():
    """Two sequences of length 7, the second padded after 4 tokens."""
    return {
        "token_ids": np.array([[2, 7, 8, 9, 3, 10, 3], [2, 11, 12, 3, 0, 0, 0]], "int32"),
        "segment_ids": np.array([[0, 0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0, 0]], "int32"),
        "padding_mask": np.array([[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0, 0]], "int32"),
    }


@pytest.fixture
def mask_positions():
    return np.array([[1, 3, 5], [1, 2, 2]], "int32")
