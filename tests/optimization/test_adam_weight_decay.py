"""`AdamWeightDecay` against a numpy transcription of google-research/bert's
`AdamWeightDecayOptimizer` (optimization.py), clipping included."""

import keras
import numpy as np
import pytest

import keras_bert  # noqa: F401  (registers the optimizer for load_model)
from keras_bert.optimization import AdamWeightDecay, WarmupLinearDecay

PEAK, WARMUP, TOTAL = 0.1, 2, 8
B1, B2, EPS, WD, CLIP = 0.9, 0.999, 1e-6, 0.1, 1.0
EXCLUDE = ["gamma", "beta", "bias"]


def original_lr(u):
    """create_optimizer's rate at update u: warmup overrides polynomial_decay."""
    if u < WARMUP:
        return PEAK * u / WARMUP
    return PEAK * (1 - min(u, TOTAL) / TOTAL)


def original_updates(params, gradient_steps, decayed):
    """Transcription of optimization.py: clip_by_global_norm, then per
    variable m, v, update = m / (sqrt(v) + eps) (+ wd * p), p -= lr * update."""
    params = [p.astype("float64") for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for u, grads in enumerate(gradient_steps):
        norm = np.sqrt(sum(np.sum(np.square(g)) for g in grads))
        grads = [g * CLIP / max(norm, CLIP) for g in grads]
        for i, g in enumerate(grads):
            m[i] = B1 * m[i] + (1 - B1) * g
            v[i] = B2 * v[i] + (1 - B2) * g * g
            update = m[i] / (np.sqrt(v[i]) + EPS)
            if decayed[i]:
                update = update + WD * params[i]
            params[i] = params[i] - original_lr(u) * update
    return params


def make_variables(rng):
    # A decayed kernel and two excluded LayerNorm/bias-like variables.
    return [
        keras.Variable(rng.normal(size=(3, 4)).astype("float32"), name="kernel"),
        keras.Variable(rng.normal(size=(4,)).astype("float32") + 1, name="gamma"),
        keras.Variable(rng.normal(size=(4,)).astype("float32"), name="bias"),
    ]


def gradients(rng, steps):
    # Scaled so that some steps exceed the clip norm and some do not.
    return [
        [(rng.normal(size=s) * scale).astype("float32") for s in ((3, 4), (4,), (4,))]
        for scale in np.linspace(0.1, 1.5, steps)
    ]


def make_optimizer(**kwargs):
    accumulation = kwargs.get("gradient_accumulation_steps") or 1
    return AdamWeightDecay(
        learning_rate=WarmupLinearDecay(
            PEAK, WARMUP, TOTAL, decay_start="step_0", gradient_accumulation_steps=accumulation
        ),
        weight_decay_rate=WD,
        beta_1=B1,
        beta_2=B2,
        epsilon=EPS,
        exclude_from_weight_decay=EXCLUDE,
        global_clipnorm=CLIP,
        **kwargs,
    )


def apply(optimizer, grads, variables):
    tensors = [keras.ops.convert_to_tensor(g) for g in grads]
    optimizer.apply_gradients(zip(tensors, variables))


def values(variables):
    return [keras.ops.convert_to_numpy(v) for v in variables]


def test_matches_the_original_update_over_several_steps():
    rng = np.random.default_rng(0)
    variables = make_variables(rng)
    initial = values(variables)
    steps = gradients(rng, 7)
    optimizer = make_optimizer()
    for grads in steps:
        apply(optimizer, grads, variables)
    expected = original_updates(initial, steps, decayed=[True, False, False])
    for got, want in zip(values(variables), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # The test can tell the two updates apart: Keras' bias-corrected AdamW
    # on the same inputs ends elsewhere.
    adamw_variables = make_variables(np.random.default_rng(0))
    adamw = keras.optimizers.AdamW(
        learning_rate=WarmupLinearDecay(PEAK, WARMUP, TOTAL, decay_start="step_0"),
        weight_decay=WD,
        epsilon=EPS,
        global_clipnorm=CLIP,
    )
    adamw.exclude_from_weight_decay(var_names=EXCLUDE)
    for grads in steps:
        apply(adamw, grads, adamw_variables)
    assert np.abs(values(adamw_variables)[0] - expected[0]).max() > 1e-2


def test_exclusions_name_the_variables_left_undecayed():
    variables = make_variables(np.random.default_rng(0))
    optimizer = make_optimizer()
    optimizer.build(variables)
    assert [optimizer._use_weight_decay(v) for v in variables] == [True, False, False]
    # Given after construction, the Keras way, they are kept in the config.
    later = AdamWeightDecay(weight_decay_rate=WD)
    later.exclude_from_weight_decay(var_names=["bias"])
    assert later.get_config()["exclude_from_weight_decay"] == ["bias"]


def test_gradient_accumulation_applies_the_mean_once_per_k_micro_batches():
    rng = np.random.default_rng(1)
    variables = make_variables(rng)
    initial = values(variables)
    micro = gradients(rng, 10)
    optimizer = make_optimizer(gradient_accumulation_steps=2)
    for grads in micro:
        apply(optimizer, grads, variables)
    assert int(optimizer.iterations) == 5
    means = [[(a + b) / 2 for a, b in zip(micro[i], micro[i + 1])] for i in range(0, 10, 2)]
    expected = original_updates(initial, means, decayed=[True, False, False])
    for got, want in zip(values(variables), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_keras_weight_decay_is_refused():
    with pytest.raises(ValueError, match="weight_decay_rate.*weight_decay=0.01"):
        AdamWeightDecay(weight_decay=0.01)


def test_compiled_model_saves_and_loads(tmp_path):
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((5,)),
            keras.layers.Dense(4, name="dense"),
            keras.layers.LayerNormalization(name="layer_norm"),
            keras.layers.Dense(1, name="out"),
        ]
    )
    model.compile(optimizer=make_optimizer(), loss="mse")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(8, 5)), rng.normal(size=(8, 1))
    model.train_on_batch(x, y)
    model.train_on_batch(x, y)
    path = str(tmp_path / "model.keras")
    model.save(path)
    restored = keras.saving.load_model(path)

    optimizer = restored.optimizer
    assert isinstance(optimizer, AdamWeightDecay)
    assert optimizer.get_config() == model.optimizer.get_config()
    assert optimizer.get_config()["exclude_from_weight_decay"] == EXCLUDE
    assert isinstance(optimizer._learning_rate, WarmupLinearDecay)
    assert optimizer._learning_rate.decay_start == "step_0"
    assert int(optimizer.iterations) == 2
    # Moments, step and weights came back: one more step agrees exactly.
    model.train_on_batch(x, y)
    restored.train_on_batch(x, y)
    for a, b in zip(model.get_weights(), restored.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    decayed = {v.path: optimizer._use_weight_decay(v) for v in restored.trainable_variables}
    assert decayed == {
        "dense/kernel": True,
        "dense/bias": False,
        "layer_norm/gamma": False,
        "layer_norm/beta": False,
        "out/kernel": True,
        "out/bias": False,
    }
