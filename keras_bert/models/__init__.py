"""Functional-API BERT models."""

from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_pretrainer import BertPretrainer

__all__ = ["BertBackbone", "BertPretrainer"]
