"""What ends a pre-training run's phases and sets its learning rate: one
interface, `RunClock`, for the two kinds of run, so that the runner has one
path.

- `StepClock`: a step-based run (`train_budget_minutes: null`). A phase is
  its updates; the schedule follows the update count; held-out data is
  evaluated inside a phase (`eval_every_steps`) and after each.
- `BudgetRunClock`: a budgeted run. A phase is over when the clock has
  passed its end (`time_budget.BudgetClock`, a Keras callback); the final
  model is evaluated once, after the last update, at every phase's length.
"""

import typing

import keras

from keras_bert.pretraining.time_budget import BudgetClock, describe_end, describe_plan

# A budgeted phase's `fit` runs until its clock stops it.
UNBOUNDED_EPOCHS = 10**9


class RunClock(typing.Protocol):
    """The runner's questions about time, answered per kind of run."""

    # Keras callbacks that `fit` runs first (the checkpoint saved at a step
    # carries their progress).
    callbacks: list
    # The console's "step n/total"; None: the run has no set length.
    total_steps: typing.Optional[int]
    # Evaluate held-out data after each phase (else once, at the end).
    evaluates_each_phase: bool

    def phase_over(self, phase) -> bool:
        """Whether `phase` (a `PretrainingPhase`) is done."""

    def phase_batches(self, phase) -> typing.Optional[int]:
        """The batches after which the checkpointer ends `phase`; None:
        the clock ends it."""

    def fit_kwargs(self, phase, step) -> dict:
        """`fit`'s length arguments for what is left of `phase`, and its
        held-out evaluation inside the phase."""

    def learning_rate(self, step) -> float:
        """The learning rate at update `step`, for the log."""

    def seconds_left(self) -> typing.Optional[float]:
        """What is left of a time budget; None without one."""

    def describe_phase(self, phase) -> str:
        """The steps `phase` spans, for its heading."""

    def describe_end(self, step) -> typing.Optional[str]:
        """The line after the last update; None: nothing to say."""


def run_clock(pretraining, state, resumed, started, run_started, clock):
    """The `RunClock` of `pretraining`'s run (a budgeted run's plan
    printed). `resumed`: a checkpoint was restored; `started`, `run_started`
    and `clock` as `run_pretraining` takes them."""
    if pretraining.config.train_budget_minutes is None:
        return StepClock(pretraining, state)
    return BudgetRunClock(pretraining, state, resumed, started, run_started, clock)


class StepClock:
    """A step-based run: the recipe's steps are the updates made."""

    callbacks = ()
    evaluates_each_phase = True

    def __init__(self, pretraining, state):
        self.pretraining = pretraining
        self.state = state
        self.total_steps = pretraining.config.train_steps

    def phase_over(self, phase):
        return self.state.phase_micro_step >= phase.micro_steps

    def phase_batches(self, phase):
        return phase.micro_steps

    def fit_kwargs(self, phase, step):
        return {
            **_window_kwargs(self.pretraining, phase, self.state),
            **self._held_out(phase, step),
        }

    def _held_out(self, phase, step):
        """Held-out evaluation at every multiple of `eval_every_steps`
        inside the phase (its end is evaluated anyway). Windows (Keras
        epochs) are `steps_per_loop` updates from `step`, so the evaluated
        windows are listed by number (`validation_freq`)."""
        config = self.pretraining.config
        every, loop = config.eval_every_steps, config.steps_per_loop
        if not every or not config.eval_steps:
            return {}
        end = phase.first_step + phase.steps
        epochs = [
            e
            for e in range(1, (end - step) // loop + 1)
            if (step + e * loop) % every == 0 and step + e * loop < end
        ]
        if not epochs:
            return {}
        return {
            "validation_data": self.pretraining.eval_dataset(phase.index),
            "validation_steps": config.eval_steps,
            "validation_freq": epochs,
        }

    def learning_rate(self, step):
        accumulation = self.pretraining.config.optimizer.gradient_accumulation_steps
        return float(keras.ops.convert_to_numpy(self.pretraining.schedule(step * accumulation)))

    def seconds_left(self):
        return None

    def describe_phase(self, phase):
        return f"steps {phase.first_step}..{phase.first_step + phase.steps}"

    def describe_end(self, step):
        return None


class BudgetRunClock:
    """A budgeted run: `time_budget.BudgetClock` ends its phases and sets
    its learning rate by the time spent."""

    total_steps = None
    evaluates_each_phase = False

    def __init__(self, pretraining, state, resumed, started, run_started, clock):
        config = pretraining.config
        print(describe_plan(config, resumed_state=state if resumed else None), flush=True)
        self.pretraining = pretraining
        self.state = state
        self.budget = BudgetClock(
            pretraining.schedule,
            config.train_steps,
            [p.first_step + p.steps for p in pretraining.phases],
            state,
            config.train_budget_minutes * 60,
            started,
            clock,
            config.optimizer.gradient_accumulation_steps,
            stops_at_train_steps=config.budget_stops_at_train_steps,
            run_started=run_started,
        )
        self.callbacks = [self.budget]

    def phase_over(self, phase):
        return self.budget.phase_over(phase.index)

    def phase_batches(self, phase):
        return None

    def fit_kwargs(self, phase, step):
        # The clock ends a budgeted phase, after more or fewer updates than
        # the recipe's.
        return {**_window_kwargs(self.pretraining, phase, self.state), "epochs": UNBOUNDED_EPOCHS}

    def learning_rate(self, step):
        return self.budget.learning_rate

    def seconds_left(self):
        return self.budget.seconds_left()

    def describe_phase(self, phase):
        end = phase.first_step + phase.steps
        return (
            f"recipe steps {phase.first_step:,}..{end:,} of "
            f"{self.pretraining.config.train_steps:,} on the clock"
        )

    def describe_end(self, step):
        budget = self.budget
        return describe_end(
            self.pretraining.config,
            step,
            self.state.budget_seconds_spent,
            budget.start_up_seconds,
            budget.switch_seconds,
            before_run_seconds=budget.before_run_seconds,
        )


def _window_kwargs(pretraining, phase, state):
    """`fit`'s `steps_per_epoch` and `epochs` for the rest of `phase`: one
    Keras epoch per `steps_per_loop` updates, the window over which
    metrics are averaged and logged."""
    config = pretraining.config
    loop = config.steps_per_loop * config.optimizer.gradient_accumulation_steps
    return phase.fit_kwargs(loop, state.phase_micro_step)
