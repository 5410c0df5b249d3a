"""`random_position_offsets: true`: a short phase trains the position
embeddings that the longest phase uses; the saved backbone is BERT's."""

import numpy as np
import pytest

from keras_bert.models import BertBackbone
from keras_bert.pretraining import build_pretraining
from tests.pretraining.conftest import tiny_config


def _position_rows_moved(tmp_path, corpus, offsets):
    """The shares of positions 0-31 and 32-63 that the first phase's updates move of
    the tiny config (phases of 32, then 64 tokens)."""
    config = tiny_config(tmp_path, corpus, random_position_offsets=offsets)
    pretraining = build_pretraining(config)
    backbone = pretraining.model.backbone
    embeddings = backbone.embeddings
    assert embeddings.training_position_window == (64 if offsets else None)
    table = embeddings.position_embedding.position_embeddings
    before = np.array(table)
    pretraining.model.fit(pretraining.phases[0].dataset(), steps_per_epoch=3, verbose=0)
    moved = np.abs(np.array(table) - before).max(axis=1) > 1e-4  # Adam: about the rate.
    return moved[:32].mean(), moved[32:64].mean(), backbone


@pytest.mark.parametrize("offsets", [False, True])
def test_the_short_phase_trains_the_long_phases_positions(tmp_path, tiny_corpus, offsets):
    short, long, backbone = _position_rows_moved(tmp_path, tiny_corpus, offsets)
    assert short > 0.5  # Less than all: padding's positions get no gradient.
    # Twelve random offsets reach most of positions 32-63; weight decay
    # alone moves none of them by the rate.
    assert long > 0.5 if offsets else long == 0.0
    # Saved and rebuilt, the backbone starts every sequence at position 0.
    rebuilt = BertBackbone.from_config(backbone.get_config())
    assert rebuilt.embeddings.training_position_window is None
