"""The step probe behind the main command's backend choice times a real
training step. Speed itself is for bench/, not for tests."""

from keras_bert.pretraining.step_probe import probe_seconds_per_step


def test_probe_times_a_real_training_step():
    seconds = probe_seconds_per_step(
        num_layers=1,
        hidden_dim=16,
        num_heads=2,
        seq_len=16,
        batch_size=2,
        warmup_steps=1,
        timed_steps=2,
    )
    assert 0 < seconds < 60
