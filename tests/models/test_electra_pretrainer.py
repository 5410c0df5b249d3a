import keras
import numpy as np
import pytest

from keras_bert import BertBackbone, ElectraPretrainer
from keras_bert.models.electra_pretrainer import generator_shape
from tests.harness import run_model_test
from tests.models.test_bert_backbone import TINY, tiny_inputs


def electra_inputs():
    inputs = tiny_inputs()
    inputs["mask_positions"] = np.array([[1, 2, 0], [3, 0, 0]], "int32")
    inputs["masked_lm_ids"] = np.array([[5, 6, 0], [7, 0, 0]], "int32")
    inputs["masked_lm_weights"] = np.array([[1, 1, 0], [1, 0, 0]], "float32")
    return inputs


def test_model_harness(tmp_path):
    run_model_test(
        lambda dtype: ElectraPretrainer(BertBackbone(**TINY, dtype=dtype), generator_size=0.5),
        electra_inputs(),
        tmp_path,
    )


def test_outputs_and_shared_embeddings():
    backbone = BertBackbone(**TINY, dtype="mixed_bfloat16")
    model = ElectraPretrainer(backbone, generator_size=0.5)
    outputs = model(electra_inputs())
    assert keras.backend.standardize_dtype(outputs["mlm"].dtype) == "float32"
    assert tuple(outputs["mlm"].shape) == (2, 3, TINY["vocabulary_size"])
    assert tuple(outputs["rtd"].shape) == (2, 6, 2)
    # Generator and discriminator share every embedding: one (V, H) token
    # matrix, one position and one segment table in the whole model.
    shapes = [tuple(w.shape) for w in model.weights]
    assert shapes.count((TINY["vocabulary_size"], TINY["hidden_dim"])) == 1
    assert shapes.count((TINY["max_sequence_length"], TINY["hidden_dim"])) == 1
    # Labels: replaced only at real masked positions.
    replaced = keras.ops.convert_to_numpy(outputs["rtd"])[..., 1]
    allowed = np.zeros((2, 6), bool)
    allowed[0, [1, 2]] = allowed[1, 3] = True
    assert not replaced[~allowed].any()


def test_discriminator_loss_does_not_reach_the_generator():
    # The sample is discrete: the discriminator's logits carry no gradient
    # to the generator's own layers (only to the shared embeddings).
    model = ElectraPretrainer(BertBackbone(**TINY), generator_size=0.5)
    model.compile(
        optimizer=keras.optimizers.SGD(1.0),
        loss={"mlm": None, "rtd": lambda y_true, y_pred: keras.ops.mean(y_pred[..., 0])},
    )
    generator = [model.generator_projection, *model.generator_blocks]
    before = [np.array(w) for layer in generator for w in layer.weights]
    inputs = electra_inputs()
    model.fit(
        inputs,
        {"mlm": np.zeros((2, 3)), "rtd": np.zeros((2, 6))},
        batch_size=2,
        epochs=1,
        verbose=0,
    )
    after = [np.array(w) for layer in generator for w in layer.weights]
    for b, a in zip(before, after):
        np.testing.assert_array_equal(b, a)
    assert not np.array_equal(
        np.array(model.discriminator_head.kernel), np.zeros_like(model.discriminator_head.kernel)
    )


# Arithmetic on the backbone's sizes: nothing the backend computes.
@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "size, expected",
    [(0.25, (3, 192, 768)), (1 / 3, (4, 256, 1024)), (1.0, (12, 768, 3072))],
)
def test_generator_scales_width_heads_and_feed_forward(size, expected):
    base = BertBackbone(30, 1, 12, 768, 3072, max_sequence_length=8)
    assert generator_shape(base, size) == expected


def test_sampling_temperature_reaches_the_draw_and_the_config():
    model = ElectraPretrainer(BertBackbone(**TINY), generator_size=0.5, sampling_temperature=1.5)
    assert model.token_replacement.temperature == 1.5
    restored = ElectraPretrainer.from_config(model.get_config())
    assert restored.token_replacement.temperature == 1.5


def test_generator_size_out_of_range_names_it():
    with pytest.raises(ValueError, match=r"generator_size.*Received: generator_size=0"):
        ElectraPretrainer(BertBackbone(**TINY), generator_size=0)
