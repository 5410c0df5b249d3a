"""One shared check that every keras_bert layer and model must pass.

Mirrors keras-hub's `TestCase.run_layer_test` / `run_backbone_test`: config
round trip, symbolic and eager calls, one `fit` step, `mixed_bfloat16`
forward and backward, and `.keras` save/load reproducing outputs exactly.
The backend comes from `KERAS_BACKEND`; nothing here branches on it.
"""

import keras
import numpy as np
from keras import ops


def _numpy(tree):
    return keras.tree.map_structure(lambda x: np.asarray(ops.convert_to_numpy(x), "float32"), tree)


class _SumOutputs(keras.losses.Loss):
    def call(self, y_true, y_pred):
        return ops.mean(ops.square(ops.cast(y_pred, "float32")))


def run_model_test(build_model, inputs, tmp_path):
    """Checks a functional keras_bert model built by `build_model(dtype)`.

    Args:
        build_model: callable taking a dtype policy name, returning a model.
        inputs: dict of numpy arrays, a small batch.
        tmp_path: a pytest temporary directory.
    """
    model = build_model("float32")

    # Config round trip.
    config = model.get_config()
    rebuilt = model.__class__.from_config(config)
    assert rebuilt.get_config() == config
    assert rebuilt.count_params() == model.count_params()

    # Symbolic call: the functional graph accepts KerasTensors.
    symbolic = model(
        {
            k: keras.Input(shape=v.shape[1:], dtype=v.dtype, batch_size=v.shape[0])
            for k, v in inputs.items()
        }
    )
    eager = model(inputs, training=False)
    for sym, real in zip(keras.tree.flatten(symbolic), keras.tree.flatten(eager)):
        assert tuple(sym.shape) == tuple(real.shape)

    # Dropout is off at inference: two calls agree exactly.
    again = model(inputs, training=False)
    for a, b in zip(keras.tree.flatten(_numpy(eager)), keras.tree.flatten(_numpy(again))):
        np.testing.assert_array_equal(a, b)

    # `.keras` save and load reproduce outputs exactly.
    path = str(tmp_path / "model.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.__class__ is model.__class__
    for a, b in zip(
        keras.tree.flatten(_numpy(eager)),
        keras.tree.flatten(_numpy(restored(inputs, training=False))),
    ):
        np.testing.assert_array_equal(a, b)

    # One `fit` step moves the weights.
    outputs = keras.tree.map_structure(np.asarray, _numpy(eager))
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.tree.map_structure(lambda _: _SumOutputs(), outputs),
    )
    before = [np.array(w) for w in model.trainable_weights]
    model.fit(inputs, outputs, epochs=1, batch_size=len(next(iter(inputs.values()))), verbose=0)
    after = [np.array(w) for w in model.trainable_weights]
    assert any(not np.array_equal(b, a) for b, a in zip(before, after))

    # mixed_bfloat16: forward and backward with finite results, float32
    # variables.
    mixed = build_model("mixed_bfloat16")
    assert all(w.dtype == "float32" for w in mixed.weights)
    mixed_out = mixed(inputs, training=True)
    assert all(np.isfinite(x).all() for x in keras.tree.flatten(_numpy(mixed_out)))
    mixed.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.tree.map_structure(lambda _: _SumOutputs(), outputs),
    )
    history = mixed.fit(
        inputs, outputs, epochs=1, batch_size=len(next(iter(inputs.values()))), verbose=0
    )
    assert np.isfinite(history.history["loss"][-1])
    return model
