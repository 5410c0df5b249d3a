"""The distillation recipe: the student's fine-tuning recipe plus a
`distillation:` section (the losses and the transfer set).

Defaults ← the task's fine-tuning config (`configs/finetune/`) ← `--config`
← `--set`, as `finetune` reads them; `distillation.*` keys are set the same
way (`--set distillation.temperature=2`). The student's `config.yaml`
records the whole tree, the teacher and the text files included; `predict`
and `evaluate` read it as a fine-tuning run's (they skip the section).
"""

import dataclasses
import math
import typing

from keras_bert.errors import ConfigError
from keras_bert.finetuning.config import SCHEMA as FINETUNE_SCHEMA
from keras_bert.finetuning.config import FinetuneConfig, TrainingConfig, load_finetune_config

# What the soft targets are compared with: the teacher's distribution at a
# temperature (Hinton et al. 2015), or its logits themselves (Tang et al.
# 2019; the only choice for a regression teacher, whose output is a score).
# `auto`: the first for a classifier, the second for a regression.
SOFT_LOSSES = ("auto", "kl_divergence", "mse")
# What a copy's marked words are replaced by (`TransferConfig`).
REPLACEMENTS = ("masked_lm", "teacher_neighbours", "masked_lm_and_neighbours")
# Those that read `TransferConfig.masked_lm`.
READ_A_MASKED_LM = ("masked_lm", "masked_lm_and_neighbours")
# Which words a copy may replace, and what the masked LM reads when it
# predicts one (`TransferConfig`).
REPLACED_WORDS = ("all", "content")
MASKED_LM_CONTEXTS = ("copy", "sentence")


@dataclasses.dataclass
class TransferConfig:
    """The transfer set the teacher labels (Tang et al. 2019, section 3.2).

    Every sentence (or pair) of the task's training file and of the text
    files comes once as it is and `copies` times augmented: each word is
    replaced by `[MASK]` with `mask_probability`, or with
    `replace_probability` by a word drawn from `replace_top_k`
    candidates: with `replace_by: masked_lm`, the best single-piece words
    the pre-trained `masked_lm` (a `BertPretrainer` `.keras`: `pretrain`'s
    `pretrainer.keras`) predicts there (Jiao et al. 2020); with
    `teacher_neighbours`, the word's nearest whole words in the teacher's
    token embeddings (a word the teacher's vocabulary splits by its
    pieces' mean; a word with an unknown piece is masked instead); with
    `masked_lm_and_neighbours` (TinyBERT's), the masked LM's for a word its
    vocabulary holds whole, the neighbours for the others. With
    `replace_words: content` only words of letters that are no stop word
    are replaced (TinyBERT's; `all`: any word). With `masked_lm_context:
    copy` the masked LM reads the copy with its masked and marked words
    masked, once a copy; with `sentence` (TinyBERT's released code) it reads
    the sentence with the one word masked, then the sentence whole as the
    second segment, once a sentence and word, and its copies draw from
    those candidates (no word masked: `mask_probability` 0). Then, with
    `ngram_probability`, only a random n-gram of 1 to
    `ngram_max` words is kept. Copies carry no label (augmenting can change
    it). `seed` draws the copies (none: `training.seed`): a fixed one
    keeps one augmented set, labelled once, for students of several
    seeds. The teacher's outputs are written in shards of `shard_size`
    sentences, labelled in batches of `batch_size`. Once the first shard
    is labelled, the time the rest will take at the speed measured on it
    is logged, and a labelling longer than `max_labelling_hours` stops
    there (`.inf`: no limit).
    """

    copies: int = 0
    mask_probability: float = 0.1
    replace_probability: float = 0.0
    replace_by: str = "masked_lm"
    masked_lm: typing.Optional[str] = None
    replace_top_k: int = 15
    replace_words: str = "all"
    masked_lm_context: str = "copy"
    ngram_probability: float = 0.25
    ngram_max: int = 5
    seed: typing.Optional[int] = None
    shard_size: int = 4096
    batch_size: int = 64
    max_labelling_hours: float = 4.0


@dataclasses.dataclass
class IntermediateConfig:
    """Intermediate losses (`keras_bert.distillation.intermediate`),
    added to the soft and hard losses; both off by default.

    `hidden_weight` weighs the squared difference between each student
    hidden state, through a learned projection to the teacher's width, and
    the teacher's; `attention_weight` the KL divergence between their
    attention distributions (the two need as many heads). `layer_map`
    names the teacher block (1-based) each student block learns; empty: the
    uniform map, block m of L to block m * L' / L of the teacher's L'. The
    teacher then runs beside the student on every batch, so the two must
    share a vocabulary.
    """

    hidden_weight: float = 0.0
    attention_weight: float = 0.0
    layer_map: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class DistillationConfig:
    """The losses, and where the transfer set comes from.

    `loss` compares the student's outputs with the teacher's:
    `kl_divergence` between the two distributions at `temperature`, scaled
    by its square (Hinton et al. 2015), or `mse` between the logits (the
    scores, for regression); `auto` is the first for a classifier, the
    second for a regression. `hard_label_weight` blends in the task's own
    loss on the sentences that have a label: `(1 - w) * soft + w * hard`.
    `teacher` and `text_files` are the command's `--teacher` and `--text`.
    """

    teacher: typing.Optional[str] = None
    text_files: list = dataclasses.field(default_factory=list)
    loss: str = "auto"
    temperature: float = 1.0
    hard_label_weight: float = 0.0
    transfer: TransferConfig = dataclasses.field(default_factory=TransferConfig)
    intermediate: IntermediateConfig = dataclasses.field(default_factory=IntermediateConfig)


@dataclasses.dataclass
class DistillConfig(FinetuneConfig):
    # The student's batches are grouped by length by default: a transfer
    # set is many times the labels, and padding was most of a step's work
    # (BENCHMARKS.md#task-distillation). Off for a regression teacher whose
    # scores go with length, as fine-tuning's finding says
    # (BENCHMARKS.md#findings-behind-the-defaults).
    training: TrainingConfig = dataclasses.field(
        default_factory=lambda: TrainingConfig(group_by_length=True)
    )
    distillation: DistillationConfig = dataclasses.field(default_factory=DistillationConfig)


SCHEMA = dataclasses.replace(
    FINETUNE_SCHEMA,
    choices={
        **FINETUNE_SCHEMA.choices,
        "distillation.loss": SOFT_LOSSES,
        "distillation.transfer.replace_by": REPLACEMENTS,
        "distillation.transfer.replace_words": REPLACED_WORDS,
        "distillation.transfer.masked_lm_context": MASKED_LM_CONTEXTS,
    },
    minimums={
        **FINETUNE_SCHEMA.minimums,
        "distillation.transfer.copies": 0,
        "distillation.transfer.ngram_max": 1,
        "distillation.transfer.replace_top_k": 1,
        "distillation.transfer.shard_size": 1,
        "distillation.transfer.batch_size": 1,
    },
    ranges={
        **FINETUNE_SCHEMA.ranges,
        "distillation.temperature": (lambda v: 0 < v < math.inf, "finite and > 0"),
        "distillation.hard_label_weight": (lambda v: 0 <= v <= 1, "between 0 and 1"),
        "distillation.transfer.mask_probability": (lambda v: 0 <= v <= 1, "between 0 and 1"),
        "distillation.transfer.replace_probability": (lambda v: 0 <= v <= 1, "between 0 and 1"),
        "distillation.transfer.ngram_probability": (lambda v: 0 <= v <= 1, "between 0 and 1"),
        "distillation.transfer.max_labelling_hours": (lambda v: v > 0, "> 0 (.inf: no limit)"),
        "distillation.intermediate.hidden_weight": (lambda v: 0 <= v < math.inf, "finite, >= 0"),
        "distillation.intermediate.attention_weight": (
            lambda v: 0 <= v < math.inf,
            "finite, >= 0",
        ),
    },
    unbounded=("distillation.transfer.max_labelling_hours",),
)


def load_distill_config(task, config_file=None, overrides=()):
    """`load_finetune_config` for a `DistillConfig`: the same files and
    overrides, with the `distillation:` section."""
    config = load_finetune_config(task, config_file, overrides, DistillConfig, SCHEMA)
    transfer = config.distillation.transfer
    if transfer.mask_probability + transfer.replace_probability > 1:
        raise ConfigError(
            "distillation.transfer.mask_probability + replace_probability must be <= 1 (a "
            f"word is masked, replaced or kept). Received: {transfer.mask_probability} + "
            f"{transfer.replace_probability}"
        )
    if transfer.masked_lm_context == "sentence" and transfer.mask_probability > 0:
        raise ConfigError(
            "distillation.transfer.masked_lm_context=sentence reads each sentence as it came, "
            "with no word masked: it needs distillation.transfer.mask_probability=0. "
            f"Received: mask_probability={transfer.mask_probability}"
        )
    if (
        transfer.replace_probability > 0
        and transfer.replace_by in READ_A_MASKED_LM
        and not transfer.masked_lm
    ):
        raise ConfigError(
            f"distillation.transfer.replace_by={transfer.replace_by} with replace_probability "
            "> 0 needs distillation.transfer.masked_lm: a pre-trained BertPretrainer .keras "
            "(pretrain's pretrainer.keras), or distillation.transfer.replace_by="
            "teacher_neighbours"
        )
    return config
