import keras
import numpy as np

from keras_bert.layers import BertEmbeddings


def test_sum_of_three_tables_then_layer_norm():
    layer = BertEmbeddings(vocabulary_size=20, hidden_dim=6, max_sequence_length=10, dropout=0.5)
    token_ids = np.array([[3, 7, 7, 1]], "int32")
    segment_ids = np.array([[0, 0, 1, 1]], "int32")
    layer.build(token_ids.shape)
    rng = np.random.default_rng(0)
    for variable in layer.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32"))
    w = {v.path.split("/", 1)[1]: v.numpy() for v in layer.weights}
    summed = (
        w["token_embedding/embeddings"][token_ids[0]]
        + w["segment_embedding/embeddings"][segment_ids[0]]
        + w["position_embedding/embeddings"][:4]
    )
    mean = summed.mean(-1, keepdims=True)
    std = np.sqrt(summed.var(-1, keepdims=True) + 1e-12)
    expected = (summed - mean) / std * w["layer_norm/gamma"] + w["layer_norm/beta"]
    ours = keras.ops.convert_to_numpy(layer(token_ids, segment_ids))  # inference: no dropout
    np.testing.assert_allclose(ours[0], expected, atol=1e-5)


def test_positions_table_has_max_sequence_length_rows():
    layer = BertEmbeddings(vocabulary_size=20, hidden_dim=6)
    layer.build((1, 4))
    assert tuple(layer.position_embedding.position_embeddings.shape) == (512, 6)
    assert layer.layer_norm.epsilon == 1e-12


def test_config_round_trip():
    layer = BertEmbeddings(
        vocabulary_size=20, hidden_dim=6, max_sequence_length=16, num_segments=3, dropout=0.0
    )
    config = layer.get_config()
    assert BertEmbeddings.from_config(config).get_config() == config


def _layer_normed(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + 1e-12) * gamma + beta


def test_training_position_window_places_each_sequence_at_a_random_offset():
    layer = BertEmbeddings(vocabulary_size=20, hidden_dim=6, max_sequence_length=16, dropout=0.0)
    token_ids = np.tile(np.array([[3, 7, 7, 1]], "int32"), (64, 1))
    segment_ids = np.zeros_like(token_ids)
    layer.build(token_ids.shape)
    layer.training_position_window = 10
    w = {v.path.split("/", 1)[1]: v.numpy() for v in layer.weights}
    table = w["position_embedding/embeddings"]

    def at(offset):  # The reference: positions offset..offset+3, in NumPy.
        summed = w["token_embedding/embeddings"][token_ids[0]] + table[offset : offset + 4]
        summed += w["segment_embedding/embeddings"][0]
        return _layer_normed(summed, w["layer_norm/gamma"], w["layer_norm/beta"])

    trained = keras.ops.convert_to_numpy(layer(token_ids, segment_ids, training=True))
    offsets = []
    for row in trained:
        matches = [o for o in range(7) if np.allclose(row, at(o), atol=1e-5)]
        assert len(matches) == 1, "each sequence lies inside the first 10 positions"
        offsets.append(matches[0])
    assert len(set(offsets)) > 3, "the offsets vary between sequences"
    # Inference, and a sequence as long as the window, start at 0.
    inferred = keras.ops.convert_to_numpy(layer(token_ids, segment_ids))
    np.testing.assert_allclose(inferred, np.broadcast_to(at(0), inferred.shape), atol=1e-5)
    layer.training_position_window = 4
    full = keras.ops.convert_to_numpy(layer(token_ids, segment_ids, training=True))
    np.testing.assert_allclose(full, inferred, atol=1e-6)
