"""A pre-training run sized by wall time (`train_budget_minutes`).

The processor under a run changes from one machine to the next (a Zen 3
with AVX2 and a Zen 5 with AVX512-BF16 were seen ~4x apart), so a
step-based recipe's wall time does too. A budgeted run instead runs the
recipe's schedule on a clock, as Cramming (Geiping & Goldstein 2022) and
Izsak et al. (2021) tie theirs to elapsed time: at every update the run
stands at the recipe step `train_steps × progress`, where `progress` is the
share of the budget's training time spent so far; it takes that step's
learning rate and phase, and stops at the deadline with the learning rate
at 0, on any machine, even one that slows down or speeds up on the way
(another process, a laptop on battery): the schedule is never fixed from a
few timed updates, and nothing is measured before the first update. A fast
machine makes more updates than `train_steps`, a slow one fewer. With
`budget_stops_at_train_steps`, `progress` is the share of the recipe's
updates made when that is larger, and the run also stops at `train_steps`:
a machine fast enough for the whole recipe runs it update for update, as a
step-based run does, and finishes early.

The budget runs from the command's start (`python -m keras_bert.pretrain`;
a library call of `run_pretraining`: from that call) to the last update:
the imports, the one-time backend choice, model building and every phase's
start-up (tracing or compiling, filling the input pipeline) are inside it,
so the command ends on time however long they took on this machine; the
held-out evaluation (after the last update, at every phase's length), the
export and the fill-mask report are not (docs/pretraining.md#a-time-budget). The
progress and the budget spent are saved with every checkpoint
(`TrainingState`), so a resumed run continues the same schedule over what
is left of the budget.
"""

import keras

from keras_bert.errors import ConfigError

# The learning rate is set again once it has moved this share of the peak
# (under JAX a change costs a sync of the training state, see below): ~200 changes in
# a run, each far below the step-to-step noise of Adam.
LEARNING_RATE_RESOLUTION = 0.005


class BudgetClock(keras.callbacks.Callback):
    """Drives a budgeted run: the learning rate, the phase ends and the
    stop, from the time spent.

    The clock starts at the run's first update (`start`); the training
    time available runs from there to `deadline`. A resumed run starts at
    the `progress` its checkpoint recorded and spreads what is left of the
    schedule over what is left of the budget. With
    `stops_at_train_steps`, progress is never behind the updates made
    (`updates / train_steps`).

    Args:
        schedule: callable recipe step -> learning rate (the recipe's
            `WarmupLinearDecay` over `train_steps`).
        train_steps: int. The recipe's length in updates.
        phase_ends: list of int. The recipe step at which each phase ends
            (the last is `train_steps`).
        state: `TrainingState`: `budget_progress` and
            `budget_seconds_spent` are read at the start, written at every
            batch (so checkpoints carry them).
        budget_seconds: float. The whole budget.
        started: float. The `clock` reading the budget counts from.
        clock: callable returning seconds.
        gradient_accumulation_steps: int. Batches per update.
        stops_at_train_steps: bool. Progress is also the share of
            `train_steps` made, when larger (`budget_stops_at_train_steps`).
        run_started: float or None. The `clock` reading at
            `run_pretraining`'s start, if later than `started` (the
            command's imports and backend choice came first); None: `started`.
    """

    def __init__(
        self,
        schedule,
        train_steps,
        phase_ends,
        state,
        budget_seconds,
        started,
        clock,
        gradient_accumulation_steps=1,
        *,
        stops_at_train_steps,
        run_started=None,
    ):
        super().__init__()
        self.schedule = schedule
        self.train_steps = train_steps
        self.phase_ends = phase_ends
        self.state = state
        self.clock = clock
        self.started = started
        self.start_progress = state.budget_progress
        self.spent_before = state.budget_seconds_spent
        self.deadline = started + budget_seconds - self.spent_before
        self.accumulation = gradient_accumulation_steps
        self.stops_at_train_steps = stops_at_train_steps
        self.batches = state.micro_step
        self.start = None  # The clock at this run's first update.
        self._learning_rate = None
        # What did not train, for `describe_end`: the command's part before
        # `run_pretraining`, this run's start-up (until its first update
        # ended) and each phase switch, `{(phase before, phase after):
        # seconds}` from the last update of one to the end of the next one's
        # first.
        self.run_started = started if run_started is None else run_started
        self.before_run_seconds = self.run_started - started
        self.start_up_seconds = None
        self.switch_seconds = {}
        self._last_update = None  # (phase, clock) of the last update ended.

    def progress(self):
        """The share of the recipe's schedule reached, in [0, 1]."""
        made = 0.0
        if self.stops_at_train_steps:
            made = self.batches // self.accumulation / self.train_steps
        if self.start is None:
            return max(self.start_progress, made)
        available = max(self.deadline - self.start, 1e-9)
        share = (self.clock() - self.start) / available
        return min(1.0, max(self.start_progress + (1.0 - self.start_progress) * share, made))

    def recipe_step(self):
        return self.progress() * self.train_steps

    def seconds_left(self):
        return max(0.0, self.deadline - self.clock())

    def phase_over(self, phase_index):
        """Whether the schedule has passed phase `phase_index`'s end."""
        return self.recipe_step() >= self.phase_ends[phase_index]

    def on_train_batch_begin(self, batch, logs=None):
        if self.start is None:
            self.start = self.clock()
        rate = float(keras.ops.convert_to_numpy(self.schedule(int(self.recipe_step()))))
        peak = max(self.schedule.peak_learning_rate, 1e-12)
        if self._learning_rate is None or abs(rate - self._learning_rate) >= (
            LEARNING_RATE_RESOLUTION * peak
        ):
            # Under JAX, `Callback.model` first writes `fit`'s training
            # state back into the variables (`jax_state_sync`), so the next
            # update reads this rate.
            self.model.optimizer.learning_rate.assign(rate)
            self._learning_rate = rate

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1
        if self.batches % self.accumulation == 0:
            now = self.clock()
            if self._last_update is None:
                self.start_up_seconds = now - self.run_started
            elif self._last_update[0] != self.state.phase:
                switch = (self._last_update[0], self.state.phase)
                self.switch_seconds[switch] = now - self._last_update[1]
            self._last_update = (self.state.phase, now)
        if self.batches == self.accumulation and self.start_progress == 0:
            self._refuse_a_budget_spent_by_start_up()
        progress = self.progress()
        self.state.budget_progress = progress
        self.state.budget_seconds_spent = self.spent_before + self.clock() - self.started
        if progress * self.train_steps >= self.phase_ends[self.state.phase]:
            self.model.stop_training = True

    def _refuse_a_budget_spent_by_start_up(self):
        """A new run whose first update ends past the deadline would train
        nothing and export it: refused, with what start-up cost."""
        if self.clock() < self.deadline:
            return
        budget = self.deadline - self.started
        raise ConfigError(
            f"train_budget_minutes={budget / 60:g} is spent before training begins: "
            "the imports and backend choice, building the model, starting the input "
            f"pipeline and the first update (tracing it) took "
            f"{clock_time(self.clock() - self.started)} on this machine, "
            "and no checkpoint was saved. Give a budget well above that, or null for a "
            "step-based run."
        )

    @property
    def learning_rate(self):
        return self._learning_rate or 0.0


def describe_plan(config, resumed_state=None):
    """The line a budgeted run prints at its start."""
    phases = ", ".join(
        f"{n:,} recipe steps at {p.seq_len}" + (" tokens" if i == 0 else "")
        for i, (n, p) in enumerate(zip(config.phase_steps(), config.phases))
    )
    line = (
        f"Time budget {config.train_budget_minutes:g} min: the recipe's "
        f"{config.train_steps:,}-step schedule ({phases}; warmup "
        f"{config.optimizer.warmup_steps:,}) run on the clock, its learning rate and "
        "phase set by the share of the budget spent"
        + (
            " (or of its updates made, if larger), until either ends"
            if config.budget_stops_at_train_steps
            else ", until its end, however many updates that makes"
        )
    )
    if resumed_state is not None:
        line += (
            f"; resumed at {resumed_state.budget_progress:.1%} of it with "
            f"{clock_time(config.train_budget_minutes * 60 - resumed_state.budget_seconds_spent)}"
            " of the budget left"
        )
    return line + "."


def describe_end(
    config,
    step,
    elapsed_seconds,
    start_up_seconds=None,
    switch_seconds=None,
    *,
    before_run_seconds=0.0,
):
    """The line a budgeted run prints after its last update: the budget
    used and, where this run measured them, the seconds of it that did not
    train (`BudgetClock.before_run_seconds`, `.start_up_seconds` and
    `.switch_seconds`)."""
    budget = config.train_budget_minutes * 60
    left = budget - elapsed_seconds
    line = (
        f"Time budget {config.train_budget_minutes:g} min: {step:,} updates, the "
        f"last {clock_time(elapsed_seconds)} into the budget, "
        + (f"{clock_time(left)} inside it." if left >= 0 else f"{clock_time(-left)} over it.")
    )
    spent = []
    if before_run_seconds >= 0.5:
        spent.append(
            f"{clock_time(before_run_seconds)} before the run started (the imports and the "
            "backend choice, measured once per machine)"
        )
    if start_up_seconds is not None:
        spent.append(
            f"{clock_time(start_up_seconds)} until this run's first update ended (building "
            "the model, filling the input pipeline, compiling)"
        )
    for (before, after), seconds in sorted((switch_seconds or {}).items()):
        spent.append(
            f"{clock_time(seconds)} from phase {before}'s last update to phase {after}'s first"
        )
    return line + (f" Of it, {'; '.join(spent)}." if spent else "")


def clock_time(seconds):
    """Seconds as minutes and seconds (`M min SS s`), or `S s` under a
    minute."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    return f"{seconds // 60} min {seconds % 60:02d} s"
