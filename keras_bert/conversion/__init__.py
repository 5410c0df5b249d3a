"""Checkpoint import and export: Google BERT, Hugging Face, keras-hub.

`convert(src, dst)` (also `python -m keras_bert.convert --input SRC --output DST`) reads any
supported checkpoint into a `BertCheckpoint` (original variable names, see
`bert_name_map`) and writes a keras_bert `.keras` or a Hugging Face folder. A fine-tuned
model travels between a keras_bert fine-tuning run folder and transformers' task classes
one layer up, in `keras_bert.finetuning.transformers_runs`, with the heads of `task_head`;
the command's `keras_bert.convert.convert` takes both kinds of source.
"""

from keras_bert.conversion.bert_checkpoint import BertCheckpoint
from keras_bert.conversion.converter import convert, read_checkpoint
from keras_bert.conversion.google_checkpoint import read_google_checkpoint
from keras_bert.conversion.hugging_face import (
    read_hugging_face,
    write_hugging_face,
)
from keras_bert.conversion.keras_hub_checkpoint import read_keras_hub
from keras_bert.errors import CheckpointError

__all__ = [
    "BertCheckpoint",
    "CheckpointError",
    "convert",
    "read_checkpoint",
    "read_google_checkpoint",
    "read_hugging_face",
    "read_keras_hub",
    "write_hugging_face",
]
