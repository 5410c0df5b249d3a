"""`train_budget_minutes`: the plan fixed from a measured speed, its
config keys, its console lines, and a resumed run that keeps it. Nothing
here times anything: speeds and clocks are given."""

import os
import signal

import keras
import pytest
import yaml

from keras_bert.pretraining import CheckpointManager, ConfigError, run_pretraining, time_budget
from keras_bert.pretraining import pretraining as pretraining_module
from keras_bert.pretraining.config import check_rerun_config, load_pretraining_config, write_config
from keras_bert.pretraining.pretraining import plan_phases, split_corpus
from keras_bert.pretraining.time_budget import (
    batch_divisor,
    describe_end,
    describe_plan,
    fix_plan,
    measure_phases,
    scale_steps,
)
from keras_bert.pretraining.training_distribution import TrainingDistribution
from tests.pretraining.conftest import tiny_config
from tests.pretraining.test_runner import SignalAt

# The default recipe's phases (1,750 at 32 tokens, 650 at 128) and batches.
RECIPE = [1750, 650]
BATCHES = [128, 32]


def test_plan_keeps_the_recipes_proportions_inside_the_budget():
    plan = fix_plan(
        budget_seconds=450,
        elapsed_seconds=30,
        seconds_per_update=[0.75, 0.70],
        startup_seconds=[6.0, 4.0],
        recipe_steps=RECIPE,
        warmup_steps=400,
        batch_sizes=BATCHES,
    )
    # 410 s left; a recipe update takes (1750 * 0.75 + 650 * 0.70) / 2400 s.
    assert plan == {
        "phase_steps": [405, 151],  # 556 updates, 1750:650 rounded
        "warmup_steps": 93,  # 400 * 556 / 2400
        "seconds_per_update": [0.75, 0.7],
        "batch_sizes": BATCHES,
    }


def test_plan_subtracts_held_out_evaluation():
    plan = fix_plan(
        450, 30, [0.75, 0.70], [6.0, 4.0], RECIPE, 400, BATCHES, evaluation_seconds=41.0
    )
    assert sum(plan["phase_steps"]) == 501  # (410 - 41) s at 0.7365 s


def test_a_fast_machine_runs_the_recipe_as_tuned():
    plan = fix_plan(450, 20, [0.15, 0.16], [3.0, 3.0], RECIPE, 400, BATCHES)
    assert plan["phase_steps"] == RECIPE and plan["warmup_steps"] == 400


def test_budget_too_small_for_one_update_per_phase_is_refused():
    with pytest.raises(ConfigError, match=r"leaves 0 s for updates after 40 s of start-up"):
        fix_plan(30, 30, [0.75, 0.70], [6.0, 4.0], RECIPE, 400, BATCHES)


@pytest.mark.parametrize(
    "recipe, total, expected",
    [
        ([1750, 650], 2, [1, 1]),
        ([1750, 650], 3, [2, 1]),
        ([10, 1, 1], 3, [1, 1, 1]),
        ([10, 1, 1], 24, [20, 2, 2]),
        ([6, 3], 9, [6, 3]),
    ],
)
def test_scale_steps(recipe, total, expected):
    assert scale_steps(recipe, total) == expected


@pytest.mark.parametrize(
    "updates, batches, replicas, divisor",
    [
        (1511, BATCHES, 1, 1),  # more than half the recipe fits: as written
        (1200, BATCHES, 1, 1),
        (700, BATCHES, 1, 2),
        (268, BATCHES, 1, 4),
        (20, BATCHES, 1, 4),  # at most a quarter
        (268, [128, 6], 1, 2),  # 6 halves once
        (268, BATCHES, 16, 2),  # 32 over 16 replicas halves once
        (268, [128, 8], 8, 1),
    ],
)
def test_batch_divisor(updates, batches, replicas, divisor):
    assert batch_divisor(updates, sum(RECIPE), batches, replicas) == divisor


def test_plan_at_a_smaller_batch_when_few_updates_fit(monkeypatch):
    batches_measured = []

    def measured(config, distribution, corpus_split, batch_sizes, clock):
        # The 4x slower machine's speeds, in seconds per update.
        batches_measured.append(batch_sizes)
        return ([1.12, 1.12] if batch_sizes == BATCHES else [0.5, 0.5]), [10.0, 10.0]

    monkeypatch.setattr(time_budget, "measure_phases", measured)
    config, _ = time_budget.plan_budget(
        budgeted(eval_steps=0), TrainingDistribution("default"), 0.0, lambda: 60.0
    )
    # 450 - 60 - 20 s left: 330 updates at the recipe's batches, fewer than
    # half its 2,400 even at half the batches; 740 at a quarter of them.
    assert batches_measured == [BATCHES, [32, 8]]
    assert config.budget_plan == {
        "phase_steps": [540, 200],
        "warmup_steps": 123,
        "seconds_per_update": [0.5, 0.5],
        "batch_sizes": [32, 8],
    }
    assert [p.config.batch_size for p in plan_phases(config)] == [32, 8]
    assert config.phases[0].batch_size == 128


def budgeted(plan=None, **overrides):
    values = {"train_budget_minutes": 7.5, "budget_plan": plan, **overrides}
    return load_pretraining_config("default", values)


def test_plan_sets_phase_steps_total_and_warmup():
    config = budgeted(
        {
            "phase_steps": [405, 151],
            "warmup_steps": 93,
            "seconds_per_update": [0.75, 0.7],
            "batch_sizes": BATCHES,
        }
    )
    assert config.phase_steps() == [405, 151] and config.total_steps() == 556
    assert config.warmup_steps() == 93
    assert config.recipe_steps() == RECIPE and config.train_steps == 2400


def test_default_and_own_text_are_budgeted():
    assert load_pretraining_config("default").train_budget_minutes == 7.5
    assert load_pretraining_config("own_text").train_budget_minutes == 30
    assert load_pretraining_config("budget").train_budget_minutes is None


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"train_budget_minutes": 0}, r"`train_budget_minutes` must be > 0 \(null: step-based\)"),
        ({"train_budget_minutes": "soon"}, "`train_budget_minutes` must be of type float"),
        (
            {"train_budget_minutes": None, "budget_plan": {"phase_steps": [1, 1]}},
            "`budget_plan` is the plan a budgeted run recorded",
        ),
        ({"budget_plan": {"phase_steps": [1, 1]}}, "`budget_plan` holds exactly phase_steps"),
        (
            {
                "budget_plan": {
                    "phase_steps": [2000, 401],
                    "warmup_steps": 1,
                    "seconds_per_update": [1.0, 1.0],
                    "batch_sizes": BATCHES,
                }
            },
            r"at most train_steps=2400 in all. Received: \[2000, 401\]",
        ),
        (
            {
                "budget_plan": {
                    "phase_steps": [10],
                    "warmup_steps": 1,
                    "seconds_per_update": [1.0, 1.0],
                    "batch_sizes": BATCHES,
                }
            },
            "`budget_plan.phase_steps` needs one count >= 1 per phase",
        ),
        (
            {
                "budget_plan": {
                    "phase_steps": [10, 5],
                    "warmup_steps": 1,
                    "seconds_per_update": [1.0, 0],
                    "batch_sizes": BATCHES,
                }
            },
            "`budget_plan.seconds_per_update` needs one number > 0 per phase",
        ),
        (
            {
                "budget_plan": {
                    "phase_steps": [10, 5],
                    "warmup_steps": 16,
                    "seconds_per_update": [1.0, 1.0],
                    "batch_sizes": BATCHES,
                }
            },
            r"`budget_plan.warmup_steps` must be in \[0, sum of phase_steps\]",
        ),
        ({"strategy": "multi_worker"}, "A multi-worker run cannot measure its time budget"),
    ],
)
def test_bad_budget_values_are_refused(overrides, message):
    with pytest.raises(ConfigError, match=message):
        budgeted(**{"budget_plan": None, **overrides})


def test_longer_train_steps_is_refused_for_a_budgeted_run(tmp_path):
    path = str(tmp_path / "config.yaml")
    write_config(budgeted(), path)
    with pytest.raises(ConfigError, match="extends a step-based run"):
        check_rerun_config(budgeted(train_steps=3000), path, allow_longer_train_steps=True)


def test_plan_line_and_end_line():
    config = budgeted(
        {
            "phase_steps": [405, 151],
            "warmup_steps": 93,
            "seconds_per_update": [0.75, 0.7],
            "batch_sizes": BATCHES,
        }
    )
    assert describe_plan(config) == (
        "Time budget 7.5 min: 556 updates fit here: 405 at 32 tokens, 151 at 128 "
        "(warmup 93; 0.75, 0.70 s per update measured), about 6 min 49 s of updates."
    )
    assert describe_plan(config, recorded_in="runs/x/config.yaml").startswith(
        "Time budget 7.5 min: the plan recorded in runs/x/config.yaml, 556 updates: 405 at"
    )
    assert describe_end(config, 556, 441.4) == (
        "Time budget 7.5 min: reached step 556 of 556 7 min 21 s after this run's start, "
        "9 s inside the budget."
    )
    assert describe_end(config, 556, 460).endswith("10 s over.")
    capped = budgeted(
        {
            "phase_steps": RECIPE,
            "warmup_steps": 400,
            "seconds_per_update": [0.15, 0.16],
            "batch_sizes": BATCHES,
        }
    )
    assert describe_plan(capped).startswith(
        "Time budget 7.5 min: 2,400 updates, all that train_steps allows, fit here: 1,750 at"
    )


class TickingClock:
    """A clock that advances one second per reading."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 1.0
        return self.now


@pytest.mark.backend_independent
def test_measure_phases_times_the_updates_after_the_warm_ones(tmp_path, tiny_corpus):
    config = tiny_config(tmp_path, tiny_corpus, train_budget_minutes=1.0)
    from keras_bert.pretraining import create_distribution

    speeds, startup = measure_phases(
        config, create_distribution("auto"), split_corpus(config.data), [4, 2], TickingClock()
    )
    # One reading at the start of each phase, one per update: 1 s each.
    assert speeds == [1.0, 1.0] and startup == [0.0, 0.0]


def measured(config, distribution, corpus_split, batch_sizes, clock):
    """Seconds per update at 32 and 64 tokens: 1 and 2 at the tiny
    recipe's batches (4, 2), 0.8 and 1.6 at half of them; no start-up."""
    return ([1.0, 2.0] if batch_sizes == [4, 2] else [0.8, 1.6]), [0.0, 0.0]


@pytest.mark.backend_independent
def test_resumed_run_keeps_the_recorded_plan(tmp_path, tiny_corpus, monkeypatch, capsys):
    monkeypatch.setattr(time_budget, "measure_phases", measured)
    frozen = lambda: 0.0  # noqa: E731 - the budget's clock, stopped.
    splits = []
    monkeypatch.setattr(
        pretraining_module, "split_corpus", lambda data: splits.append(data) or split_corpus(data)
    )
    # The recipe: 6 + 3 updates, warmup 2. At its batches an update takes
    # 4/3 s: 6 s of budget fit 4 updates, fewer than half of 9, so the
    # batches halve; there an update takes 16/15 s: 5 fit, 3 + 2, warmup 1.
    config = tiny_config(tmp_path, tiny_corpus, train_budget_minutes=0.1, eval_steps=0)
    keras.utils.set_random_seed(7)
    first = run_pretraining(config, verbose=0, callbacks=[SignalAt(1)], clock=frozen)
    assert first["preempted"] and first["state"].step == 2
    assert len(splits) == 1  # the plan's measurements and the run share one split
    recorded = yaml.safe_load(open(os.path.join(config.model_dir, "config.yaml")))
    plan = {
        "phase_steps": [3, 2],
        "warmup_steps": 1,
        "seconds_per_update": [0.8, 1.6],
        "batch_sizes": [2, 1],
    }
    assert recorded["budget_plan"] == plan and recorded["train_steps"] == 9
    assert recorded["phases"][0]["batch_size"] == 4  # the recipe stays as written
    out = capsys.readouterr().out
    assert (
        "Time budget 0.1 min: 5 updates fit here at global batch 2, 1 (the recipe's 4, 2 ÷ 2: "
        "at those, fewer than half its updates fit): 3 at 32 tokens, 2 at 64 (warmup 1; "
        "0.80, 1.60 s per update measured), about 6 s of updates." in out
    )
    assert "max_predictions=5, global batch 2, steps 0..3" in out

    def measured_again(*args):
        raise AssertionError("a resumed run measured again")

    monkeypatch.setattr(time_budget, "measure_phases", measured_again)
    keras.utils.set_random_seed(7)
    second = run_pretraining(config, verbose=0, clock=frozen)
    assert second["state"].step == 5 and second["state"].finished
    assert len(splits) == 2
    assert second["pretraining"].config.budget_plan == plan
    schedule = second["pretraining"].schedule
    assert (schedule.warmup_steps, schedule.total_steps) == (1, 5)
    out = capsys.readouterr().out
    assert "the plan recorded in " in out
    assert "max_predictions=10, global batch 1, steps 3..5" in out
    assert "reached step 5 of 5 0 s after this run's start, 6 s inside the budget." in out
    latest = CheckpointManager(os.path.join(config.model_dir, "checkpoints")).latest()
    assert latest.endswith("ckpt-00000005")
    assert yaml.safe_load(open(os.path.join(config.model_dir, "config.yaml"))) == recorded


@pytest.mark.backend_independent
def test_budgeted_rerun_of_a_step_based_folder_is_refused(tmp_path, tiny_corpus, monkeypatch):
    config = tiny_config(tmp_path, tiny_corpus, eval_steps=0)
    run_pretraining(config, verbose=0, callbacks=[SignalAt(1, signal.SIGTERM)])
    monkeypatch.setattr(
        time_budget, "measure_phases", lambda *args: pytest.fail("measured a resumed run")
    )
    budgeted_config = tiny_config(tmp_path, tiny_corpus, eval_steps=0, train_budget_minutes=1.0)
    with pytest.raises(ConfigError, match=r"train_budget_minutes: None -> 1.0"):
        run_pretraining(budgeted_config, verbose=0)
