"""`train_budget_minutes`: the recipe's schedule run on a clock, its
config keys, its console lines, and a resumed run that continues it.
Nothing here times anything: the clocks are counters."""

import json
import os
import shutil
import signal

import keras
import numpy as np
import pytest
import yaml

from keras_bert.errors import ConfigError
from keras_bert.optimization.warmup_linear_decay import WarmupLinearDecay
from keras_bert.pretraining import CheckpointManager, ConfigError, run_pretraining
from keras_bert.pretraining.config import load_pretraining_config
from keras_bert.pretraining.recorded_config import check_rerun_config
from keras_bert.pretraining.time_budget import (
    BudgetClock,
    describe_end,
    describe_plan,
)
from keras_bert.runs.checkpoints import TrainingState
from keras_bert.runs.run_record import write_run_config
from tests.pretraining.conftest import tiny_config


class ManualClock:
    """A clock that reads `now`, moved by hand."""

    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


class FakeOptimizer:
    def __init__(self):
        self.learning_rate = keras.Variable(0.0, dtype="float32")


class FakeModel:
    """What `BudgetClock` touches: the optimizer's rate, `stop_training`."""

    def __init__(self):
        self.optimizer = FakeOptimizer()
        self.stop_training = False


def budget_clock(state, clock, budget_seconds=100.0, started=0.0, stops_at_train_steps=False):
    # The default recipe's shape, in small: 30 + 10 recipe steps, warmup 8.
    schedule = WarmupLinearDecay(1e-3, warmup_steps=8, total_steps=40)
    budget = BudgetClock(
        schedule,
        40,
        [30, 40],
        state,
        budget_seconds,
        started,
        clock,
        stops_at_train_steps=stops_at_train_steps,
    )
    budget.set_model(FakeModel())
    return budget


def learning_rate(budget):
    return float(keras.ops.convert_to_numpy(budget.model.optimizer.learning_rate))


@pytest.mark.backend_independent
def test_the_rate_and_the_phase_follow_the_share_of_the_budget_spent():
    clock, state = ManualClock(10.0), TrainingState()
    # Started at 10 s, first update at 20 s: 90 s of the 100 s budget left
    # for updates, mapped onto the recipe's 40 steps.
    budget = budget_clock(state, clock, started=10.0)
    clock.now = 20.0
    budget.on_train_batch_begin(0)
    assert budget.start == 20.0 and learning_rate(budget) == 0.0
    clock.now = 38.0  # 18 of 90 s: recipe step 8, the warmup's peak.
    budget.on_train_batch_begin(1)
    assert budget.recipe_step() == pytest.approx(8.0)
    assert learning_rate(budget) == pytest.approx(1e-3)
    budget.on_train_batch_end(1)
    assert state.budget_progress == pytest.approx(0.2)
    assert state.budget_seconds_spent == pytest.approx(28.0)
    assert not budget.model.stop_training
    clock.now = 20.0 + 90 * 0.75  # recipe step 30: phase 0 is over.
    budget.on_train_batch_begin(2)
    # Halfway down the decay from step 8 to 40: 10/32 of the peak.
    assert learning_rate(budget) == pytest.approx(1e-3 * 10 / 32, rel=1e-5)
    budget.on_train_batch_end(2)
    assert budget.model.stop_training and budget.phase_over(0) and not budget.phase_over(1)
    assert budget.seconds_left() == pytest.approx(22.5)
    clock.now = 200.0  # Past the deadline: the schedule's end, rate 0.
    assert budget.progress() == 1.0 and budget.phase_over(1) and budget.seconds_left() == 0.0


@pytest.mark.backend_independent
@pytest.mark.parametrize("stops_at_train_steps", [False, True])
def test_updates_faster_than_the_recipe(stops_at_train_steps):
    # 100 updates in the first 20 s of a 100 s budget, 2.5x the recipe's 40.
    clock, state = ManualClock(), TrainingState()
    budget = budget_clock(state, clock, stops_at_train_steps=stops_at_train_steps)
    for update in range(100):
        clock.now = update * 0.2
        budget.on_train_batch_begin(update)
        budget.on_train_batch_end(update)
    if stops_at_train_steps:
        # The updates made lead: the recipe ran update for update and is over.
        assert budget.progress() == 1.0 and budget.phase_over(1) and learning_rate(budget) == 0.0
        assert budget.model.stop_training
    else:
        # The clock leads alone: a fifth of the schedule, in the warmup's decay.
        assert budget.progress() == pytest.approx(0.198)
        assert budget.recipe_step() == pytest.approx(7.92)
        assert not budget.phase_over(0) and not budget.model.stop_training
        assert learning_rate(budget) == pytest.approx(1e-3 * 7 / 8)


@pytest.mark.backend_independent
def test_the_rate_is_set_again_only_when_it_has_moved():
    clock, state = ManualClock(), TrainingState()
    schedule = WarmupLinearDecay(1e-3, warmup_steps=400, total_steps=2400)
    budget = BudgetClock(
        schedule, 2400, [1750, 2400], state, 100.0, 0.0, clock, stops_at_train_steps=False
    )
    budget.set_model(FakeModel())
    assigned = []
    budget.model.optimizer.learning_rate.assign = assigned.append
    for now in np.arange(0.0, 100.0, 0.01):  # 10,000 updates
        clock.now = float(now)
        budget.on_train_batch_begin(0)
    # Up to the peak and back to 0 in steps of 0.5% of it.
    assert 300 <= len(assigned) <= 410
    assert max(assigned) == pytest.approx(1e-3, rel=0.006) and assigned[-1] < 1e-5


@pytest.mark.backend_independent
def test_a_resumed_clock_spreads_the_rest_of_the_schedule_over_the_rest_of_the_budget():
    state = TrainingState(budget_progress=0.5, budget_seconds_spent=60.0)
    clock = ManualClock(1000.0)
    budget = budget_clock(state, clock, budget_seconds=100.0, started=1000.0)
    clock.now = 1010.0  # 10 s of start-up; 30 s left for half the schedule.
    budget.on_train_batch_begin(0)
    clock.now = 1025.0
    assert budget.progress() == pytest.approx(0.75)
    budget.on_train_batch_end(0)
    assert state.budget_seconds_spent == pytest.approx(85.0)
    assert budget.seconds_left() == pytest.approx(15.0)


@pytest.mark.backend_independent
def test_the_clock_measures_what_did_not_train():
    # Two batches an update: only an update's end counts.
    clock, state = ManualClock(5.0), TrainingState()
    schedule = WarmupLinearDecay(1e-3, warmup_steps=8, total_steps=40)
    # The command started at 2 s, `run_pretraining` at 5 s.
    budget = BudgetClock(
        schedule,
        40,
        [30, 40],
        state,
        100.0,
        2.0,
        clock,
        2,
        stops_at_train_steps=False,
        run_started=5.0,
    )
    budget.set_model(FakeModel())
    for now, phase in ((30.0, 0), (32.5, 0), (33.0, 0), (34.0, 0), (47.0, 1), (48.0, 1)):
        clock.now = now
        state.phase = phase
        budget.on_train_batch_begin(0)
        budget.on_train_batch_end(0)
    # The first update ended at 32.5 s (the run started at 5 s); phase 0's
    # last at 34 s, phase 1's first at 48 s. The budget counts from 2 s.
    assert budget.before_run_seconds == pytest.approx(3.0)
    assert budget.start_up_seconds == pytest.approx(27.5)
    assert state.budget_seconds_spent == pytest.approx(46.0)
    assert budget.seconds_left() == pytest.approx(54.0)
    assert budget.switch_seconds == {(0, 1): pytest.approx(14.0)}


@pytest.mark.backend_independent
def test_a_budget_spent_by_start_up_is_refused_at_the_first_update():
    # Issue 49, item 11: a budget too short to train was refused only after
    # a whole measurement (before #46), then trained one update at rate 0
    # and exported it.
    clock, state = ManualClock(), TrainingState()
    budget = budget_clock(state, clock, budget_seconds=1.2)
    clock.now = 14.6  # Tracing the first update.
    budget.on_train_batch_begin(0)
    clock.now = 15.0
    with pytest.raises(ConfigError) as error:
        budget.on_train_batch_end(0)
    assert str(error.value).startswith(
        "train_budget_minutes=0.02 is spent before training begins: the imports and "
        "backend choice, building the model, starting the input pipeline and the first "
        "update (tracing it) took 15 s"
    )
    # Inside the budget, or a resumed run (whose start-up is not a new run's): trains on.
    for state, deadline_passed in (
        (TrainingState(), False),
        (TrainingState(budget_progress=0.5), True),
    ):
        clock = ManualClock()
        budget = budget_clock(state, clock, budget_seconds=20.0)
        clock.now = 25.0 if deadline_passed else 15.0
        budget.on_train_batch_begin(0)
        budget.on_train_batch_end(0)


class Tick(keras.callbacks.Callback):
    """Moves a `ManualClock` one second per batch; sends `signum` at
    batch `stop_at` of the run."""

    def __init__(self, clock, stop_at=None, signum=signal.SIGTERM):
        super().__init__()
        self.clock = clock
        self.stop_at = stop_at
        self.signum = signum
        self.batches = 0

    def on_train_batch_begin(self, batch, logs=None):
        self.clock.now += 1.0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1
        if self.batches == self.stop_at:
            os.kill(os.getpid(), self.signum)


def budgeted_tiny(tmp_path, tiny_corpus, **extra):
    # 6 s of budget for the tiny recipe's 6 + 3 steps, at a second per
    # update: too slow for the recipe, so the clock leads. Phase 0 until
    # 2/3 of it, 4 updates, then 2 at 64 tokens.
    return tiny_config(
        tmp_path, tiny_corpus, **{"train_budget_minutes": 0.1, "eval_steps": 0, **extra}
    )


def saved_state(config):
    latest = CheckpointManager(os.path.join(config.model_dir, "checkpoints")).latest()
    return json.load(open(os.path.join(latest, "state.json")))


# The learning rate reaches the step by another path on each backend.
def test_a_budgeted_run_ends_its_phases_and_itself_on_the_clock(tmp_path, tiny_corpus, capsys):
    config = budgeted_tiny(tmp_path, tiny_corpus, eval_steps=1)
    clock = ManualClock()
    result = run_pretraining(config, verbose=0, callbacks=[Tick(clock)], clock=clock)
    assert result["state"].finished and result["state"].step == 6
    assert saved_state(config)["budget_progress"] == 1.0
    out = capsys.readouterr().out
    assert (
        "Time budget 0.1 min: the recipe's 9-step schedule (6 recipe steps at 32 tokens, "
        "3 recipe steps at 64; warmup 2) run on the clock" in out
    )
    assert "global batch 4, recipe steps 0..6 of 9 on the clock" in out
    assert "global batch 2, recipe steps 6..9 of 9 on the clock" in out
    assert (
        "Time budget 0.1 min: 6 updates, the last 6 s into the budget, 0 s inside it. Of it, "
        "1 s until this run's first update ended (building the model, filling the input "
        "pipeline, compiling); 1 s from phase 0's last update to phase 1's first." in out
    )
    # The last update began 5 s into the 6: recipe step 7.5, so 7 of 9.
    rate = result["pretraining"].model.optimizer.learning_rate
    assert float(keras.ops.convert_to_numpy(rate)) == pytest.approx(
        config.optimizer.learning_rate * 2 / 7, rel=1e-5
    )
    recorded = yaml.safe_load(open(os.path.join(config.model_dir, "config.yaml")))
    assert recorded["train_budget_minutes"] == 0.1 and "budget_plan" not in recorded
    # Held-out evaluation waits for the budget's end: after the last
    # update, at every phase's length.
    assert set(result["eval"]) == {0, 1}
    end = out.index("Time budget 0.1 min: 6 updates")
    assert "Held-out" not in out[:end]
    assert "Held-out at seq_len=32 (step 6)" in out[end:]
    assert "Held-out at seq_len=64 (step 6)" in out[end:]


# The learning rate reaches the step by another path on each backend.
def test_a_resumed_budgeted_run_continues_the_same_schedule(tmp_path, tiny_corpus, capsys):
    config = budgeted_tiny(tmp_path, tiny_corpus)
    clock = ManualClock()
    first = run_pretraining(config, verbose=0, callbacks=[Tick(clock, stop_at=2)], clock=clock)
    assert first["preempted"]
    # The signal is seen at the next batch's end: saved after update 3,
    # 3 s into the budget, half of it.
    state = saved_state(config)
    assert state["step"] == 3 and state["budget_seconds_spent"] == 3.0
    assert state["budget_progress"] == pytest.approx(0.5)
    clock = ManualClock(500.0)  # another process, another clock
    second = run_pretraining(config, verbose=0, callbacks=[Tick(clock)], clock=clock)
    # As uninterrupted: phase 0 ends after update 4, the run after 6.
    assert second["state"].finished and second["state"].step == 6
    out = capsys.readouterr().out
    assert "resumed at 50.0% of it with 3 s of the budget left." in out


def test_a_fast_machine_trains_on_to_the_deadline(tmp_path, tiny_corpus, capsys):
    # A quarter second per update: 24 updates fit in the 6 s budget, where
    # the recipe has 9; phase 0 until 2/3 of the time.
    config = budgeted_tiny(tmp_path, tiny_corpus)
    clock = ManualClock()
    result = run_pretraining(config, verbose=0, callbacks=[Fast(clock)], clock=clock)
    state = result["state"]
    assert state.finished and 20 <= state.step <= 24
    assert saved_state(config)["budget_progress"] == 1.0
    out = capsys.readouterr().out
    assert ", until its end, however many updates that makes." in out
    assert f"Time budget 0.1 min: {state.step} updates, the last 6 s into the budget" in out
    # The last update began in the recipe's last step, 8 of 9: 1/7 of the
    # peak on the decay from step 2.
    rate = result["pretraining"].model.optimizer.learning_rate
    assert float(keras.ops.convert_to_numpy(rate)) == pytest.approx(
        config.optimizer.learning_rate / 7, rel=1e-5
    )


class Fast(Tick):
    """A quarter second per update."""

    def on_train_batch_begin(self, batch, logs=None):
        self.clock.now += 0.25


@pytest.mark.backend_independent  # Seconds and updates; the rate's path: the tests above.
def test_the_commands_start_up_is_spent_from_the_budget(tmp_path, tiny_corpus, capsys):
    # `python -m keras_bert.pretrain` passes its own start: its imports and
    # backend choice took 3 s of the 6 before `run_pretraining` was called,
    # so half the updates fit and the command ends on time.
    config = budgeted_tiny(tmp_path, tiny_corpus)
    clock = ManualClock(3.0)
    result = run_pretraining(
        config, verbose=0, callbacks=[Fast(clock)], clock=clock, budget_started=0.0
    )
    state = result["state"]
    assert state.finished and 8 <= state.step <= 12
    assert saved_state(config)["budget_seconds_spent"] == pytest.approx(6.0, abs=0.25)
    out = capsys.readouterr().out
    assert f"Time budget 0.1 min: {state.step} updates, the last 6 s into the budget" in out
    assert "Of it, 3 s before the run started (the imports and the backend choice" in out


@pytest.mark.backend_independent
def test_a_budget_spent_before_the_last_phase_skips_it(tmp_path, tiny_corpus):
    config = budgeted_tiny(tmp_path, tiny_corpus)
    clock = ManualClock()

    class Slow(Tick):
        def on_train_batch_begin(self, batch, logs=None):
            # The second update spends the whole budget.
            self.clock.now += 20.0 if self.batches else 1.0

    result = run_pretraining(config, verbose=0, callbacks=[Slow(clock)], clock=clock)
    assert result["state"].finished and result["state"].step == 2


# The learning rate reaches the step by another path on each backend.
def test_a_budget_spent_by_the_first_update_saves_nothing_and_a_fast_machine_runs_the_recipe(
    full_run, tmp_path, tiny_corpus
):
    config = budgeted_tiny(tmp_path, tiny_corpus)
    clock = ManualClock()

    class Slow(Tick):
        def on_train_batch_begin(self, batch, logs=None):
            self.clock.now += 20.0

    with pytest.raises(ConfigError, match="train_budget_minutes=0.1 is spent before training"):
        run_pretraining(config, verbose=0, callbacks=[Slow(clock)], clock=clock)
    # Issue 67 item 11: the first run left its config.yaml and an empty
    # checkpoints/, and a rerun with a longer budget was a changed config.
    assert not os.path.exists(config.model_dir)
    config.train_budget_minutes = 5.0
    # That rerun on a machine fast enough for the recipe (no time passes:
    # its updates lead) trains as the step-based run does: `full_run`,
    # `tiny_config` from seed 7 (its evaluation touches no weights).
    config.budget_stops_at_train_steps = True
    keras.utils.set_random_seed(7)
    budgeted = run_pretraining(config, verbose=0, clock=ManualClock())
    assert budgeted["state"].finished and budgeted["state"].step == 9
    stepped = full_run[1]
    for a, b in zip(
        stepped["pretraining"].model.get_weights(), budgeted["pretraining"].model.get_weights()
    ):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6)


@pytest.mark.backend_independent
def test_plan_line_and_end_line():
    config = load_pretraining_config("default")
    assert describe_plan(config) == (
        "Time budget 8.75 min: the recipe's 3,000-step schedule (1,800 recipe steps at "
        "32 tokens, 1,200 recipe steps at 128; warmup 500) run on the clock, its learning "
        "rate and phase set by the share of the budget spent, until its end, however many "
        "updates that makes."
    )
    assert describe_plan(load_pretraining_config("own_text")).endswith(
        "set by the share of the budget spent (or of its updates made, if larger), until "
        "either ends."
    )
    resumed = TrainingState(budget_progress=0.25, budget_seconds_spent=100.0)
    assert describe_plan(config, resumed).endswith(
        "; resumed at 25.0% of it with 7 min 05 s of the budget left."
    )
    assert describe_end(config, 1556, 516.4) == (
        "Time budget 8.75 min: 1,556 updates, the last 8 min 36 s into the budget, 9 s inside it."
    )
    assert describe_end(config, 1556, 535).endswith("10 s over it.")
    assert describe_end(config, 1556, 524.8, 27.4, {(0, 1): 14.0}).endswith(
        "0 s inside it. Of it, 27 s until this run's first update ended (building the model, "
        "filling the input pipeline, compiling); 14 s from phase 0's last update to phase 1's "
        "first."
    )
    assert describe_end(config, 1556, 524.8, 7.2, before_run_seconds=38.6).endswith(
        "Of it, 39 s before the run started (the imports and the backend choice, measured "
        "once per machine); 7 s until this run's first update ended (building the model, "
        "filling the input pipeline, compiling)."
    )


@pytest.mark.backend_independent
def test_default_and_own_text_are_budgeted():
    assert load_pretraining_config("default").train_budget_minutes == 8.75
    assert load_pretraining_config("own_text").train_budget_minutes == 30
    assert load_pretraining_config("budget").train_budget_minutes is None
    # The default trains to its deadline on a fast machine; own_text's
    # 4,000 updates are measured for a small corpus seen many times over.
    assert not load_pretraining_config("default").budget_stops_at_train_steps
    assert load_pretraining_config("own_text").budget_stops_at_train_steps


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"train_budget_minutes": 0}, r"`train_budget_minutes` must be > 0 \(null: step-based\)"),
        ({"train_budget_minutes": "soon"}, "`train_budget_minutes` must be of type float"),
        ({"strategy": "multi_worker"}, "A multi-worker run cannot follow one clock"),
    ],
)
def test_bad_budget_values_are_refused(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_pretraining_config("default", {"train_budget_minutes": 7.5, **overrides})


@pytest.mark.backend_independent
def test_longer_train_steps_is_refused_for_a_budgeted_run(tmp_path):
    path = str(tmp_path / "config.yaml")
    write_run_config(path, load_pretraining_config("default").to_dict())
    with pytest.raises(ConfigError, match="extends a step-based run"):
        check_rerun_config(
            load_pretraining_config("default", {"train_steps": 4000}),
            path,
            allow_longer_train_steps=True,
        )


@pytest.mark.backend_independent
def test_a_run_of_the_older_step_plan_is_refused(tmp_path):
    path = tmp_path / "config.yaml"
    config = load_pretraining_config("default")
    write_run_config(str(path), config.to_dict())
    recorded = yaml.safe_load(path.read_text())
    recorded["budget_plan"] = {"phase_steps": [405, 151], "warmup_steps": 93}
    path.write_text(yaml.safe_dump(recorded))
    with pytest.raises(ConfigError, match="older keras_bert.*Use a new model_dir"):
        check_rerun_config(config, str(path))


@pytest.mark.backend_independent
def test_a_run_recorded_before_budget_stops_at_train_steps_resumes_as_it_ran(tmp_path):
    # Such a run stopped at train_steps: the key's default.
    path = tmp_path / "config.yaml"
    config = load_pretraining_config("default", {"budget_stops_at_train_steps": True})
    write_run_config(str(path), config.to_dict())
    recorded = yaml.safe_load(path.read_text())
    del recorded["budget_stops_at_train_steps"]
    path.write_text(yaml.safe_dump(recorded))
    check_rerun_config(config, str(path))
    with pytest.raises(ConfigError, match="changes budget_stops_at_train_steps: True -> False"):
        check_rerun_config(load_pretraining_config("default"), str(path))


@pytest.mark.backend_independent
def test_budgeted_rerun_of_a_step_based_folder_is_refused(full_run, tmp_path, tiny_corpus):
    shutil.copytree(full_run[0].model_dir, tmp_path / "run")  # A step-based run's folder.
    with pytest.raises(ConfigError, match=r"train_budget_minutes: None -> 0.1"):
        run_pretraining(budgeted_tiny(tmp_path, tiny_corpus), verbose=0)


def test_a_rate_set_between_steps_is_the_next_steps_rate():
    # What `BudgetClock` relies on: under JAX `fit` holds the optimizer's
    # variables outside the model until a window ends, and a callback's
    # `self.model` writes them back, so a rate assigned there reaches the
    # very next update.
    model = keras.Sequential(
        [keras.Input((2,)), keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")

    class Rates(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.model.optimizer.learning_rate.assign([0.0, 0.5, 0.0, 0.0][batch])

    x, y = np.ones((4, 2), "float32"), np.full((4, 1), 10.0, "float32")
    model.fit(x, y, batch_size=1, epochs=1, callbacks=[Rates()], verbose=0, shuffle=False)
    # Update 1 alone moves the weights: 0.5 x the gradient 2 x (0 - 10) x 1.
    kernel = keras.ops.convert_to_numpy(model.layers[0].kernel)
    np.testing.assert_allclose(kernel, [[10.0], [10.0]])
