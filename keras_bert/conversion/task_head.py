"""A fine-tuned head of keras_bert and the transformers class that holds it.

Every keras_bert task model ends in one dense layer, `output_dense`, on
the pooled `[CLS]` vector or on every token; transformers' `modeling_bert.py`
(5.23) has one `nn.Linear` in the same place (`BertForSequenceClassification`:
`self.classifier = nn.Linear(config.hidden_size, config.num_labels)` on the
pooler output; `BertForTokenClassification`: the same on the sequence
output, `BertModel(config, add_pooling_layer=False)`;
`BertForQuestionAnswering`: `self.qa_outputs = nn.Linear(config.hidden_size,
config.num_labels)`, start logits `[..., 0]`, end `[..., 1]`, no pooler;
`BertForMultipleChoice`: `nn.Linear(config.hidden_size, 1)` on the pooler
output of the choices folded into the batch). So a head is two tensors,
`<layer>.weight` (N, H), the kernel transposed, and `<layer>.bias` (N,),
beside the encoder's `bert.*` names.
"""

import dataclasses
import json
import os

from keras_bert.conversion.bert_name_map import WeightMapping
from keras_bert.errors import CheckpointError


@dataclasses.dataclass(frozen=True)
class TaskHead:
    """One keras_bert task model class and its transformers counterpart.

    Args:
        model_class: str. The keras_bert class (`"BertClassifier"`).
        architecture: str. The transformers class (`config.json`'s
            `architectures`).
        layer: str. The transformers name of the head's `nn.Linear`.
        pooler: bool. Whether the transformers class has BERT's pooler
            (the token and span heads do not: keras_bert's backbone keeps
            an unused one, dropped on the way out, initialised on the way in).
        default_task: str or None. The fine-tuning task a transformers
            folder of this head becomes without `--task`; None where the
            head alone cannot tell (SQuAD v1.1 or v2.0).

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertBackbone, BertClassifier
    >>> backbone = BertBackbone(vocabulary_size=100, num_layers=1, num_heads=2,
    ...                         hidden_dim=8, intermediate_dim=16)
    >>> model = BertClassifier(backbone, num_classes=3)
    >>> [(m.name, m.original_shape) for m in HEADS["BertClassifier"].weight_map(model)]
    [('classifier.weight', (3, 8)), ('classifier.bias', (3,))]
    """

    model_class: str
    architecture: str
    layer: str
    pooler: bool
    default_task: str = None

    def weight_map(self, model):
        """`WeightMapping`s of `model`'s head, under transformers' names
        and shapes: the kernel (H, N) as `<layer>.weight` (N, H)."""
        dense = model.output_dense
        kernel = tuple(dense.kernel.shape)
        return [
            WeightMapping(f"{self.layer}.weight", dense.kernel, kernel[::-1], transpose=True),
            WeightMapping(f"{self.layer}.bias", dense.bias, tuple(dense.bias.shape)),
        ]


# keras_bert class name -> its head. A sentence classifier and a regressor
# are both `BertForSequenceClassification` (num_labels 1 and problem_type
# "regression" for the regressor, as transformers reads them).
HEADS = {
    head.model_class: head
    for head in (
        TaskHead(
            "BertClassifier", "BertForSequenceClassification", "classifier", True, "classification"
        ),
        TaskHead(
            "BertRegressor", "BertForSequenceClassification", "classifier", True, "regression"
        ),
        TaskHead(
            "BertTokenClassifier", "BertForTokenClassification", "classifier", False, "conll2003"
        ),
        TaskHead("BertSpanLabeler", "BertForQuestionAnswering", "qa_outputs", False),
        TaskHead("BertMultipleChoice", "BertForMultipleChoice", "classifier", True, "swag"),
    )
}
# The transformers classes a fine-tuned folder may name.
ARCHITECTURES = sorted({head.architecture for head in HEADS.values()})


def fine_tuned_architecture(folder):
    """The fine-tuned transformers class (`ARCHITECTURES`) that the folder's
    `config.json` names, or None (none, or unreadable: the backbone reader
    reports it)."""
    try:
        return architecture_named(read_config_json(folder))
    except CheckpointError:
        return None


def architecture_named(config_json):
    """The first fine-tuned class `config.json`'s `architectures` names, or None."""
    names = config_json.get("architectures")
    found = [n for n in names if n in ARCHITECTURES] if isinstance(names, list) else []
    return found[0] if found else None


def read_config_json(folder):
    """The dict of the folder's transformers `config.json`."""
    path = os.path.join(folder, "config.json")
    try:
        with open(path) as f:
            config = json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path}: {error}") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: not a JSON object")
    return config
