"""Limits and defaults every pipeline shares, in a module that imports
nothing, so that the configs check them before TensorFlow loads and each
number stands in one place (the fine-tuning config, the readers, the
post-processing and the export read them here)."""

# `[CLS] A [SEP] B [SEP]` with one piece in each segment: the shortest
# sequence length pre-training, fine-tuning and export accept (one rule).
MIN_SEQ_LEN = 5

# SQuAD, as google-research/bert's run_squad.py sets it: the context cut
# into windows `SQUAD_DOC_STRIDE` pieces apart after a question of at most
# `SQUAD_MAX_QUERY_LENGTH` pieces; of each window the `SQUAD_N_BEST_SIZE`
# best starts and ends, spans of at most `SQUAD_MAX_ANSWER_LENGTH` pieces.
SQUAD_DOC_STRIDE = 128
SQUAD_MAX_QUERY_LENGTH = 64
SQUAD_N_BEST_SIZE = 20
SQUAD_MAX_ANSWER_LENGTH = 30

# Fill-mask (a pre-training run's model and its export): candidates per
# `[MASK]`, and the `[MASK]`s an exported request answers.
FILL_MASK_TOP_K = 5
FILL_MASK_MAX_MASKS = 20
