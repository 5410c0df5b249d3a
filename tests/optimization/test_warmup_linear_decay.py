import keras
import numpy as np
import pytest

from keras_bert.optimization import WarmupLinearDecay


def lr(schedule, step):
    return float(keras.ops.convert_to_numpy(schedule(step)))


def test_values_at_chosen_steps():
    schedule = WarmupLinearDecay(1e-4, warmup_steps=10_000, total_steps=1_000_000)
    expected = {
        0: 0.0,
        5_000: 5e-5,
        10_000: 1e-4,
        505_000: 5e-5,
        1_000_000: 0.0,
        1_200_000: 0.0,
    }
    for step, value in expected.items():
        np.testing.assert_allclose(lr(schedule, step), value, rtol=1e-5, atol=1e-12)


def test_continuous_and_monotone_after_warmup():
    schedule = WarmupLinearDecay(1.0, warmup_steps=4, total_steps=12)
    values = [lr(schedule, s) for s in range(14)]
    np.testing.assert_allclose(values[:5], [0, 0.25, 0.5, 0.75, 1.0])
    assert all(a >= b for a, b in zip(values[4:], values[5:]))
    np.testing.assert_allclose(values[8], 0.5)


def test_no_warmup():
    schedule = WarmupLinearDecay(2.0, warmup_steps=0, total_steps=4)
    np.testing.assert_allclose([lr(schedule, s) for s in range(5)], [2, 1.5, 1, 0.5, 0])


def original(peak, warmup, total, step):
    """optimization.py create_optimizer: polynomial_decay(peak, step, total,
    end=0, power=1), replaced by peak * step / warmup while step < warmup."""
    decayed = peak * (1 - min(step, total) / total)
    return peak * step / warmup if step < warmup else decayed


def test_step_0_is_the_original_schedule():
    schedule = WarmupLinearDecay(
        1e-4, warmup_steps=10_000, total_steps=100_000, decay_start="step_0"
    )
    for step in (0, 1, 5_000, 9_999, 10_000, 10_001, 55_000, 99_999, 100_000, 120_000):
        np.testing.assert_allclose(
            lr(schedule, step), original(1e-4, 10_000, 100_000, step), rtol=1e-5, atol=1e-12
        )
    # The drop at the end of warmup: 10% warmup leaves 0.9 of the peak,
    # where "warmup_end" is at the peak.
    np.testing.assert_allclose(lr(schedule, 10_000), 0.9e-4, rtol=1e-6)


def test_step_0_without_warmup_decays_from_the_peak():
    schedule = WarmupLinearDecay(2.0, 0, 4, decay_start="step_0")
    np.testing.assert_allclose([lr(schedule, s) for s in range(5)], [2, 1.5, 1, 0.5, 0])


@pytest.mark.parametrize("decay_start", ["warmup_end", "step_0"])
def test_counts_applied_updates_under_accumulation(decay_start):
    # Keras passes the raw per-micro-batch counter; update u is applied at
    # counter k*u + k - 1.
    plain = WarmupLinearDecay(1.0, warmup_steps=4, total_steps=12, decay_start=decay_start)
    accumulated = WarmupLinearDecay(
        1.0, warmup_steps=4, total_steps=12, gradient_accumulation_steps=3, decay_start=decay_start
    )
    for update in range(12):
        np.testing.assert_allclose(lr(accumulated, 3 * update + 2), lr(plain, update))


def test_config_round_trip():
    schedule = WarmupLinearDecay(1e-4, 10, 100, gradient_accumulation_steps=2, decay_start="step_0")
    again = WarmupLinearDecay.from_config(schedule.get_config())
    assert again.get_config() == schedule.get_config()
    assert again.decay_start == "step_0"
    np.testing.assert_allclose(lr(again, 41), original(1e-4, 10, 100, 20))


def test_bad_arguments():
    with pytest.raises(ValueError, match="warmup_steps=20, total_steps=10"):
        WarmupLinearDecay(1e-4, 20, 10)
    with pytest.raises(ValueError, match="decay_start='original'"):
        WarmupLinearDecay(1e-4, 2, 10, decay_start="original")
