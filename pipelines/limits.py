"""Limits every pipeline shares, in a module that imports nothing, so that
the configs check them before TensorFlow loads."""

# `[CLS] A [SEP] B [SEP]` with one piece in each segment: the shortest
# sequence length pre-training, fine-tuning and export accept (one rule).
MIN_SEQ_LEN = 5
