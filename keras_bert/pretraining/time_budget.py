"""A pre-training run sized by wall time (`train_budget_minutes`).

The processor under a run changes from one machine to the next (a Zen 3
with AVX2 and a Zen 5 with AVX512-BF16 were seen ~4x apart), so a
step-based recipe's wall time does too. A budgeted run instead measures
how long one update takes at each phase's shape on this machine, then
fixes, before its first update, how many updates each phase gets (at a
smaller batch when too few fit at the recipe's) and the learning-rate
schedule over them, as Cramming (Geiping & Goldstein 2022)
ties its schedule to a time budget. The plan is fixed, not adjusted on the
way: warmup and linear decay to 0 need the total up front. It is recorded
in `config.yaml` (`budget_plan`), so a resumed run follows it.

The budget runs from `run_pretraining`'s start to the last update: model
building, this measurement, every phase's start-up (tracing, compiling,
filling the input pipeline) and held-out evaluations during training are
inside it; the imports, the backend choice, the final evaluation, the
export and the fill-mask report are not (docs/pretraining.md, "A time
budget").
"""

import dataclasses
import time

import keras

from keras_bert.errors import ConfigError

# Updates run before timing starts (tracing or compiling the step and
# filling the input pipeline happen in the first), then updates timed.
WARM_UPDATES = 2
TIMED_UPDATES = 8
# A schedule shrunk below this share of the recipe's updates, at the
# recipe's batch, ends about where it started, predicting the most frequent
# tokens; smaller batches in the same time do better
# (BENCHMARKS.md#the-default-run). So the plan halves every phase's batch,
# up to MAX_BATCH_DIVISOR times over, to buy more updates.
SHARE_OF_RECIPE_UPDATES = 0.5
MAX_BATCH_DIVISOR = 4


def scale_steps(recipe_steps, total):
    """`total` updates split over the phases in `recipe_steps`'
    proportions: each phase rounded, >= 1, the last taking the rest."""
    recipe_total = sum(recipe_steps)
    steps = []
    for index, count in enumerate(recipe_steps[:-1]):
        later = len(recipe_steps) - index - 1
        share = max(1, int(round(total * count / recipe_total)))
        steps.append(min(share, total - sum(steps) - later))
    steps.append(total - sum(steps))
    return steps


def fix_plan(
    budget_seconds,
    elapsed_seconds,
    seconds_per_update,
    startup_seconds,
    recipe_steps,
    warmup_steps,
    batch_sizes,
    evaluation_seconds=0.0,
):
    """The updates per phase and the warmup that fit a time budget.

    The recipe's phases keep their proportions of updates (and so their
    shares of the time they would take on this machine); its
    `warmup_steps` shrinks with the total. The recipe's own length
    (`recipe_steps`, from `train_steps`) is the most a budget schedules:
    a faster machine runs the recipe as tuned and finishes early.

    Args:
        budget_seconds: float. The whole budget.
        elapsed_seconds: float. Spent before the plan (building, measuring).
        seconds_per_update: list of float, per phase.
        startup_seconds: list of float, per phase: what starting the phase
            costs beyond its updates (tracing or compiling, the pipeline).
        recipe_steps: list of int. The step-based recipe's updates per phase.
        warmup_steps: int. The recipe's warmup.
        batch_sizes: list of int, per phase: the global batches measured.
        evaluation_seconds: float. Held-out evaluations during training.

    Returns:
        The `budget_plan` dict: `phase_steps`, `warmup_steps`,
        `seconds_per_update`, `batch_sizes`.

    Raises:
        ConfigError: the budget leaves no time for one update per phase.
    """
    recipe_total = sum(recipe_steps)
    mean = sum(n * t for n, t in zip(recipe_steps, seconds_per_update)) / recipe_total
    available = budget_seconds - elapsed_seconds - sum(startup_seconds) - evaluation_seconds
    total = min(recipe_total, int(max(available, 0.0) // mean))
    if total < len(recipe_steps):
        raise ConfigError(
            f"The time budget ({budget_seconds / 60:g} min) leaves "
            f"{max(available, 0.0):.0f} s for updates after "
            f"{elapsed_seconds + sum(startup_seconds):.0f} s of start-up: "
            f"{total} updates at the {_seconds(seconds_per_update)} s per "
            f"update measured here, fewer than one per phase. Raise "
            "`train_budget_minutes`."
        )
    return {
        "phase_steps": scale_steps(recipe_steps, total),
        "warmup_steps": int(round(warmup_steps * total / recipe_total)),
        "seconds_per_update": [round(float(t), 4) for t in seconds_per_update],
        "batch_sizes": list(batch_sizes),
    }


def batch_divisor(updates, recipe_updates, batch_sizes, num_replicas):
    """What to divide every phase's batch by: 1 when `updates` (those
    that fit at the recipe's batches) reach `SHARE_OF_RECIPE_UPDATES` of
    `recipe_updates`; else the smallest power of two, at most
    `MAX_BATCH_DIVISOR`, that would reach it if an update's time followed
    its batch, and that leaves every batch a multiple of `num_replicas`.
    The plan then measures the smaller batches: an update's time has a
    part that does not shrink with the batch."""
    divisor = 1
    while (
        updates * divisor < SHARE_OF_RECIPE_UPDATES * recipe_updates
        and divisor < MAX_BATCH_DIVISOR
        and all(b % (2 * divisor * num_replicas) == 0 for b in batch_sizes)
    ):
        divisor *= 2
    return divisor


def evaluation_seconds(config, seconds_per_update):
    """An upper bound on the held-out evaluations inside the budget: one
    after each phase but the last, one every `eval_every_steps` at the
    recipe's length; an evaluation batch counted as an update (it is a
    forward pass, a third of one, and its first call traces)."""
    if not config.eval_steps:
        return 0.0
    count = len(config.phases) - 1
    if config.eval_every_steps:
        count += sum(config.recipe_steps()) // config.eval_every_steps
    return count * config.eval_steps * max(seconds_per_update)


class _UpdateClock(keras.callbacks.Callback):
    """The clock's reading at the end of every batch (not async-safe on
    purpose: Keras then waits for each step's results)."""

    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        self.ends = []

    def on_train_batch_end(self, batch, logs=None):
        self.ends.append(self.clock())


def measure_phases(config, distribution, corpus_split, batch_sizes, clock=time.monotonic):
    """`(seconds_per_update, startup_seconds)`, per phase at its global
    batch in `batch_sizes`, measured on a throwaway copy of the run's model
    and input pipeline (the run itself then starts from step 0 exactly as a
    step-based run would)."""
    from keras_bert.pretraining.pretraining import build_pretraining

    phases = [dataclasses.replace(p, batch_size=b) for p, b in zip(config.phases, batch_sizes)]
    probe = build_pretraining(
        dataclasses.replace(config, phases=phases), distribution, corpus_split
    )
    accumulation = config.optimizer.gradient_accumulation_steps
    per_update, startup = [], []
    for phase in probe.phases:
        timer = _UpdateClock(clock)
        start = clock()
        probe.model.fit(
            phase.dataset(),
            steps_per_epoch=(WARM_UPDATES + TIMED_UPDATES) * accumulation,
            epochs=1,
            callbacks=[timer],
            verbose=0,
            shuffle=False,
        )
        warm = timer.ends[WARM_UPDATES * accumulation - 1]
        seconds = (timer.ends[-1] - warm) / TIMED_UPDATES
        per_update.append(seconds)
        startup.append(max(0.0, warm - start - WARM_UPDATES * seconds))
    return per_update, startup


def plan_budget(config, distribution, started, clock=time.monotonic):
    """`(config, corpus_split)`: `config` with the `budget_plan` that fits
    `train_budget_minutes` from `started` (a `clock` reading), measured on
    this machine, and the `split_corpus` it was measured on, for the run
    to reuse (split once, reported once)."""
    from keras_bert.pretraining.pretraining import split_corpus

    config.validate()
    corpus_split = split_corpus(config.data)
    recipe_batches = config.recipe_batch_sizes()

    def plan_at(batch_sizes):
        seconds_per_update, startup = measure_phases(
            config, distribution, corpus_split, batch_sizes, clock
        )
        return fix_plan(
            config.train_budget_minutes * 60,
            clock() - started,
            seconds_per_update,
            startup,
            config.recipe_steps(),
            config.optimizer.warmup_steps,
            batch_sizes,
            evaluation_seconds(config, seconds_per_update),
        )

    plan = plan_at(recipe_batches)
    divisor = batch_divisor(
        sum(plan["phase_steps"]),
        sum(config.recipe_steps()),
        recipe_batches,
        distribution.num_replicas,
    )
    if divisor > 1:
        plan = plan_at([b // divisor for b in recipe_batches])
    return dataclasses.replace(config, budget_plan=plan), corpus_split


def describe_plan(config, recorded_in=None):
    """The line a budgeted run prints at its start, e.g. `Time budget 7.5
    min: 1,050 updates fit here: 766 at 32 tokens, 284 at 128 (warmup 175;
    <seconds per update, per phase> s per update measured), about <time>
    of updates.`; with `recorded_in`, the plan is that file's (a resumed
    run)."""
    plan = config.budget_plan
    steps, speeds = plan["phase_steps"], plan["seconds_per_update"]
    total = sum(steps)
    if recorded_in:
        fit = f"the plan recorded in {recorded_in}, {total:,} updates"
    elif total == sum(config.recipe_steps()):
        fit = f"{total:,} updates, all that train_steps allows, fit here"
    else:
        fit = f"{total:,} updates fit here"
    phases = ", ".join(
        f"{n:,} at {p.seq_len}" + (" tokens" if i == 0 else "")
        for i, (n, p) in enumerate(zip(steps, config.phases))
    )
    recipe_batches = config.recipe_batch_sizes()
    if plan["batch_sizes"] != recipe_batches:
        fit += (
            f" at global batch {', '.join(map(str, plan['batch_sizes']))} (the recipe's "
            f"{', '.join(map(str, recipe_batches))} ÷ {recipe_batches[0] // plan['batch_sizes'][0]}: "
            "at those, fewer than half its updates fit)"
        )
    return (
        f"Time budget {config.train_budget_minutes:g} min: {fit}: {phases} "
        f"(warmup {plan['warmup_steps']:,}; {_seconds(speeds)} s per update "
        f"measured), about {clock_time(sum(n * t for n, t in zip(steps, speeds)))} "
        "of updates."
    )


def describe_end(config, step, elapsed_seconds):
    """The line a budgeted run prints after its last update."""
    budget = config.train_budget_minutes * 60
    left = budget - elapsed_seconds
    return (
        f"Time budget {config.train_budget_minutes:g} min: reached step {step:,} of "
        f"{config.total_steps():,} {clock_time(elapsed_seconds)} after this "
        f"run's start, "
        + (f"{clock_time(left)} inside the budget." if left >= 0 else f"{clock_time(-left)} over.")
    )


def clock_time(seconds):
    """Seconds as minutes and seconds (`M min SS s`), or `S s` under a
    minute."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    return f"{seconds // 60} min {seconds % 60:02d} s"


def _seconds(values):
    return ", ".join(f"{v:.2f}" for v in values)
