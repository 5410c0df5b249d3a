"""Reusable BERT building blocks (keras and keras.ops only)."""

from keras_bert.layers.bert_embeddings import BertEmbeddings
from keras_bert.layers.bert_encoder_block import BertEncoderBlock
from keras_bert.layers.sampled_softmax import sampled_softmax_logits
from keras_bert.layers.token_replacement import TokenReplacement

__all__ = [
    "BertEmbeddings",
    "BertEncoderBlock",
    "TokenReplacement",
    "sampled_softmax_logits",
]
