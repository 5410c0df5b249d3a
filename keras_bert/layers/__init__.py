"""Reusable BERT building blocks (keras and keras.ops only)."""

from keras_bert.layers.bert_embeddings import BertEmbeddings
from keras_bert.layers.bert_encoder_block import BertEncoderBlock
from keras_bert.layers.sampled_masked_lm_head import SampledMaskedLMHead

__all__ = ["BertEmbeddings", "BertEncoderBlock", "SampledMaskedLMHead"]
