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
