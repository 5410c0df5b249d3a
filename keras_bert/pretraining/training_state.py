"""Where a run is: the small JSON state saved next to each checkpoint."""

import dataclasses


@dataclasses.dataclass
class TrainingState:
    """Counters that, with the weights and optimizer, resume a run exactly.

    Attributes:
        step: int. Optimizer updates applied (the learning-rate schedule's
            step); with gradient accumulation, `micro_step // k`.
        micro_step: int. Batches consumed over all phases.
        phase: int. Index of the current phase.
        phase_micro_step: int. Batches consumed in the current phase: the
            data position. Phase datasets are seeded, so skipping this many
            batches of a freshly built one lands exactly where the run was.
        finished: bool. Every phase done and the outputs exported.
        budget_progress: float. A budgeted run's share of the recipe's
            schedule reached (`BudgetClock`); 0 in a step-based run.
        budget_seconds_spent: float. A budgeted run's time budget spent.
    """

    step: int = 0
    micro_step: int = 0
    phase: int = 0
    phase_micro_step: int = 0
    finished: bool = False
    budget_progress: float = 0.0
    budget_seconds_spent: float = 0.0

    def to_dict(self):
        return dataclasses.asdict(self)
