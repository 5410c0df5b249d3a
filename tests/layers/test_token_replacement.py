import keras
import numpy as np
import pytest

from keras_bert.layers import TokenReplacement


def replace(logits, token_ids, positions, original, weights, training=True, layer=None):
    layer = layer or TokenReplacement(seed=1)
    corrupted, replaced = layer(
        np.array(token_ids, "int32"),
        np.array(positions, "int32"),
        np.array(original, "int32"),
        np.array(weights, "float32"),
        np.array(logits, "float32"),
        training=training,
    )
    return keras.ops.convert_to_numpy(corrupted), keras.ops.convert_to_numpy(replaced)


def peaked(choices, vocabulary=10):
    """Generator logits (B, P, V) that put all mass on `choices` (B, P)."""
    logits = np.full((*np.shape(choices), vocabulary), -50.0, "float32")
    for index in np.ndindex(*np.shape(choices)):
        logits[index + (choices[index[0]][index[1]],)] = 50.0
    return logits


def test_samples_go_to_the_chosen_positions_and_label_what_changed():
    # Sequence 0: positions 1 and 3 were [MASK] (id 4) over originals 7, 8;
    # the generator says 9 at 1 (a replacement) and 8 at 3 (the original).
    # Sequence 1: one real slot (position 2, original 6 kept by the
    # 80/10/10 rule, the generator says 5) and a padded slot at position 0.
    token_ids = [[2, 4, 6, 4, 3], [2, 7, 6, 3, 0]]
    corrupted, replaced = replace(
        peaked([[9, 8], [5, 1]]),
        token_ids,
        positions=[[1, 3], [2, 0]],
        original=[[7, 8], [6, 0]],
        weights=[[1, 1], [1, 0]],
    )
    np.testing.assert_array_equal(corrupted, [[2, 9, 6, 8, 3], [2, 7, 5, 3, 0]])
    # A sample equal to the original is not a replacement; the padded slot
    # leaves position 0 alone.
    np.testing.assert_array_equal(replaced, [[0, 1, 0, 0, 0], [0, 0, 1, 0, 0]])


def test_samples_follow_the_generator_distribution():
    # Through the layer: 2,000 slots each at 3:1 odds between tokens 2 and 4.
    logits = np.full((1, 2000, 6), -50.0, "float32")
    logits[..., 2], logits[..., 4] = np.log(3.0), 0.0
    corrupted, replaced = replace(
        logits,
        [[0] * 2000],
        [list(range(2000))],
        [[4] * 2000],
        [[1.0] * 2000],
    )
    assert set(np.unique(corrupted)) <= {2, 4}
    assert abs((corrupted == 2).mean() - 0.75) < 0.04
    np.testing.assert_array_equal(replaced, corrupted == 2)


def test_temperature_flattens_the_draw():
    # At temperature 2 the 3:1 odds above become sqrt(3):1 (softmax of
    # logits / 2), so token 2 takes sqrt(3) / (1 + sqrt(3)) = 0.634.
    logits = np.full((1, 4000, 6), -50.0, "float32")
    logits[..., 2], logits[..., 4] = np.log(3.0), 0.0
    layer = TokenReplacement(seed=1, temperature=2.0)
    corrupted, _ = replace(
        logits, [[0] * 4000], [list(range(4000))], [[4] * 4000], [[1.0] * 4000], layer=layer
    )
    assert set(np.unique(corrupted)) <= {2, 4}
    assert abs((corrupted == 2).mean() - np.sqrt(3) / (1 + np.sqrt(3))) < 0.03
    assert TokenReplacement.from_config(layer.get_config()).temperature == 2.0


def test_temperature_must_be_positive():
    with pytest.raises(ValueError, match=r"temperature.*Received: temperature=0"):
        TokenReplacement(temperature=0)


def test_training_draws_anew_inference_draws_the_same():
    logits = np.zeros((1, 8, 50), "float32")  # uniform over 50 tokens
    args = ([[1] * 10], [list(range(1, 9))], [[1] * 8], [[1.0] * 8])
    layer = TokenReplacement(seed=5)
    first = replace(logits, *args, training=True, layer=layer)[0]
    second = replace(logits, *args, training=True, layer=layer)[0]
    assert not np.array_equal(first, second)
    inference = [replace(logits, *args, training=False, layer=layer)[0] for _ in range(2)]
    np.testing.assert_array_equal(*inference)


def test_draws_across_blocks_of_a_large_vocabulary():
    # V = 1,000: several blocks of the two-level draw and a partial last
    # one. Mass 1:2:1 on tokens 3, 500 and 999 (the last token).
    logits = np.full((1, 4000, 1000), -50.0, "float32")
    logits[..., 3], logits[..., 500], logits[..., 999] = 0.0, np.log(2.0), 0.0
    corrupted, _ = replace(logits, [[0] * 4000], [list(range(4000))], [[1] * 4000], [[1.0] * 4000])
    counts = {token: (corrupted == token).mean() for token in (3, 500, 999)}
    assert sum(counts.values()) == 1.0
    for token, share in ((3, 0.25), (500, 0.5), (999, 0.25)):
        assert abs(counts[token] - share) < 0.03
