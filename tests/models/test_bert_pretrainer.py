import keras
import numpy as np

from keras_bert import BertBackbone, BertPretrainer
from tests.harness import run_model_test
from tests.models.test_bert_backbone import TINY, tiny_inputs


def pretrainer_inputs():
    inputs = tiny_inputs()
    inputs["mask_positions"] = np.array([[1, 2, 0], [3, 0, 0]], "int32")
    return inputs


def test_model_harness(tmp_path):
    run_model_test(
        lambda dtype: BertPretrainer(BertBackbone(**TINY, dtype=dtype)),
        pretrainer_inputs(),
        tmp_path,
    )


def test_logits_are_float32_under_mixed_precision():
    model = BertPretrainer(BertBackbone(**TINY, dtype="mixed_bfloat16"))
    outputs = model(pretrainer_inputs())
    assert keras.backend.standardize_dtype(outputs["mlm"].dtype) == "float32"
    assert keras.backend.standardize_dtype(outputs["nsp"].dtype) == "float32"
    assert tuple(outputs["mlm"].shape) == (2, 3, TINY["vocabulary_size"])
    assert tuple(outputs["nsp"].shape) == (2, 2)


def test_decoder_is_tied_to_token_embeddings():
    backbone = BertBackbone(**TINY)
    model = BertPretrainer(backbone)
    embedding = backbone.token_embedding.embeddings
    before = keras.ops.convert_to_numpy(model(pretrainer_inputs())["mlm"])
    embedding.assign(embedding.numpy() * 2.0 + 1.0)
    after = keras.ops.convert_to_numpy(model(pretrainer_inputs())["mlm"])
    assert not np.allclose(before, after)
    # Exactly one (V, H) matrix in the whole model.
    shapes = [tuple(w.shape) for w in model.weights]
    assert shapes.count((TINY["vocabulary_size"], TINY["hidden_dim"])) == 1
