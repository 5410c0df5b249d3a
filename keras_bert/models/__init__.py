"""Functional-API BERT models."""

from keras_bert.models.bert_backbone import BertBackbone
from keras_bert.models.bert_classifier import BertClassifier
from keras_bert.models.bert_multiple_choice import BertMultipleChoice
from keras_bert.models.bert_pretrainer import BertPretrainer
from keras_bert.models.bert_regressor import BertRegressor
from keras_bert.models.bert_span_labeler import BertSpanLabeler
from keras_bert.models.bert_token_classifier import BertTokenClassifier
from keras_bert.models.electra_pretrainer import ElectraPretrainer

__all__ = [
    "BertBackbone",
    "BertClassifier",
    "BertMultipleChoice",
    "BertPretrainer",
    "BertRegressor",
    "BertSpanLabeler",
    "BertTokenClassifier",
    "ElectraPretrainer",
]
