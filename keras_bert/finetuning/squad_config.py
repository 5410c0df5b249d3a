"""The `squad` section of a fine-tuning recipe: how the SQuAD tasks turn
span logits into answers (`squad_postprocess`).

The task's own section, as a pre-training objective owns its own: named in
its line of `task_registry`, made on every `FinetuneConfig` and refused to
a task that does not read it. Keras-free: configs are read before the
backend is chosen.
"""

import dataclasses
import typing

from pipelines import limits


@dataclasses.dataclass
class SquadConfig:
    """Args:
    n_best_size: int. Start and end logits kept per window, as in
        google-research/bert's `run_squad.py`.
    max_answer_length: int. The longest answer, in WordPiece pieces.
    null_score_diff_threshold: float. SQuAD v2: "no answer" when its
        score beats the best span's by more than this.
    """

    n_best_size: int = limits.SQUAD_N_BEST_SIZE
    max_answer_length: int = limits.SQUAD_MAX_ANSWER_LENGTH
    null_score_diff_threshold: float = 0.0

    # What each key may hold (`config_tree.Schema.ranges`).
    config_ranges: typing.ClassVar[dict] = {
        "n_best_size": (lambda v: v >= 1, ">= 1"),
        "max_answer_length": (lambda v: v >= 1, ">= 1"),
    }
