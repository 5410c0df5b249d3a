"""A BERT checkpoint in the original layout, whatever file it came from.

Every reader turns its format into a `BertCheckpoint` (original variable
names, original shapes, float32 numpy arrays) and every writer starts from
one, so the name and shape checks below are written once for all formats.
"""

import dataclasses

import numpy as np

from keras_bert.conversion import bert_name_map
from keras_bert.errors import CheckpointError
from keras_bert.models import BertBackbone, BertPretrainer

# Parts a source may lack. Each is all-or-nothing: a part that is wholly
# absent is initialised (and reported), a half-present one is an error.
# Hugging Face's `BertForMaskedLM`, for one, has no pooler.
OPTIONAL_PARTS = {
    "pooler": "bert/pooler/",
    "masked-LM head": "cls/predictions/",
    "next-sentence head": "cls/seq_relationship/",
}
HEAD_PARTS = ("masked-LM head", "next-sentence head")
# The `BertBackbone` arguments a checkpoint determines.
CONFIG_KEYS = (
    "vocabulary_size",
    "num_layers",
    "num_heads",
    "hidden_dim",
    "intermediate_dim",
    "dropout",
    "attention_dropout",
    "max_sequence_length",
    "num_segments",
    "hidden_activation",
    "layer_norm_epsilon",
)
_MAX_LISTED = 8


def _listing(items):
    items = sorted(items)
    shown = ", ".join(items[:_MAX_LISTED])
    more = len(items) - _MAX_LISTED
    return shown + (f" and {more} more" if more > 0 else "")


def weight_mismatches(expected, weights, missing, name, against):
    """Phrases for what of `weights` (name -> array) does not match
    `expected` (name -> `WeightMapping`): the `missing` names, those not
    expected, those of another shape than `against` (`"config"`,
    `"model"`) gives; each name shown as `name(n)`."""
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing: " + _listing(name(n) for n in missing))
    unexpected = set(weights) - set(expected)
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected: " + _listing(name(n) for n in unexpected))
    misshaped = [
        f"{name(n)} {tuple(np.shape(weights[n]))} vs {expected[n].original_shape}"
        for n in sorted(set(weights) & set(expected))
        if tuple(np.shape(weights[n])) != expected[n].original_shape
    ]
    if misshaped:
        problems.append(
            f"{len(misshaped)} mis-shaped (checkpoint vs {against}): " + _listing(misshaped)
        )
    return problems


def non_finite_weights(source, weights, name):
    """Refuses `weights` with a NaN or inf, naming them as `name(n)`."""
    non_finite = [name(n) for n in weights if not np.all(np.isfinite(weights[n]))]
    if non_finite:
        raise CheckpointError(
            f"{source}: {len(non_finite)} variable(s) hold NaN or "
            f"inf (corrupt checkpoint?): {_listing(non_finite)}."
        )


@dataclasses.dataclass
class BertCheckpoint:
    """BERT weights under their original names, with config and vocabulary.

    Args:
        config: dict. `BertBackbone` constructor arguments (`CONFIG_KEYS`).
        weights: dict. Original variable name (`bert/...`, `cls/...`) ->
            float32 numpy array in the original layout (dense kernels
            (in, out)).
        vocabulary: list of str or None. WordPiece tokens in id order.
        source: str. Where it came from, for messages ("Hugging Face
            folder /path").
        source_names: dict. Original name -> the name in the source file,
            so errors speak the source's language.
        notes: list of str. Report lines from the reader (ignored buffers,
            optimizer slots, dtype casts).

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertBackbone
    >>> backbone = BertBackbone(vocabulary_size=100, num_layers=2, num_heads=2,
    ...                         hidden_dim=8, intermediate_dim=32)
    >>> checkpoint = BertCheckpoint.from_model(backbone)
    >>> checkpoint.weights["bert/embeddings/word_embeddings"].shape
    (100, 8)
    >>> model = checkpoint.to_model()  # A fresh `BertBackbone`, same weights.
    >>> all(np.array_equal(a, b)
    ...     for a, b in zip(model.get_weights(), backbone.get_weights()))
    True
    """

    config: dict
    weights: dict
    vocabulary: list = None
    source: str = ""
    source_names: dict = dataclasses.field(default_factory=dict)
    notes: list = dataclasses.field(default_factory=list)

    @classmethod
    def from_model(cls, model, source=""):
        """Reads a `BertBackbone` or `BertPretrainer` (with its vocabulary)."""
        if isinstance(model, BertPretrainer):
            backbone, mappings = (
                model.backbone,
                bert_name_map.pretrainer_weight_map(model),
            )
        elif isinstance(model, BertBackbone):
            backbone, mappings = model, bert_name_map.backbone_weight_map(model)
        else:
            raise CheckpointError(
                f"{source or 'model'}: expected a keras_bert BertBackbone or "
                f"BertPretrainer. Received: {type(model).__name__}"
            )
        unholdable = [
            description
            for description, present in (
                ("pre-LayerNorm blocks (normalize_first=True)", backbone.normalize_first),
                ("no linear biases (use_bias=False)", not backbone.use_bias),
                ("gated feed-forward blocks (gated_feedforward=True)", backbone.gated_feedforward),
            )
            if present
        ]
        if unholdable:
            raise CheckpointError(
                f"{source or 'model'}: a BertBackbone with {' and '.join(unholdable)}; "
                "Google's and Hugging Face's BERT formats hold BERT's post-LN, biased, "
                "ungated blocks only, so it cannot be converted (it fine-tunes and "
                "exports as it is)."
            )
        return cls(
            config={key: getattr(backbone, key) for key in CONFIG_KEYS},
            weights={m.name: m.from_keras() for m in mappings},
            vocabulary=backbone.vocabulary,
            source=source,
        )

    def has_heads(self):
        """True when the weights hold either pre-training head."""
        return any(name.startswith("cls/") for name in self.weights)

    def part_status(self, heads=None):
        """{part: "carried" | "initialised" | "dropped"} for `to_model`."""
        pretrainer = self.has_heads() if heads is None else heads
        status = {}
        for part, prefix in OPTIONAL_PARTS.items():
            present = any(name.startswith(prefix) for name in self.weights)
            if part in HEAD_PARTS and not pretrainer:
                if present:
                    status[part] = "dropped"
            else:
                status[part] = "carried" if present else "initialised"
        return status

    def to_model(self, heads=None):
        """Builds and fills a `BertBackbone` or `BertPretrainer`.

        Args:
            heads: None (a `BertPretrainer` when the checkpoint has a head),
                True (always a `BertPretrainer`; absent heads initialised),
                or False (a `BertBackbone`; heads in the checkpoint dropped).

        Raises:
            CheckpointError: listing every missing, unexpected, mis-shaped
                or non-finite variable at once.
        """
        pretrainer = self.has_heads() if heads is None else heads
        try:
            backbone = BertBackbone(**self.config)
        except ValueError as error:
            raise CheckpointError(f"{self.source}: bad config: {error}") from None
        if pretrainer:
            model = BertPretrainer(backbone)
            mappings = bert_name_map.pretrainer_weight_map(model)
        else:
            model = backbone
            mappings = bert_name_map.backbone_weight_map(model)
        weights = self.weights
        if heads is False:
            weights = {k: v for k, v in weights.items() if not k.startswith("cls/")}
        self._check(mappings, weights)
        for mapping in mappings:
            if mapping.name in weights:
                mapping.variable.assign(mapping.to_keras(weights[mapping.name]))
        backbone.vocabulary = self.vocabulary
        return model

    def _check(self, mappings, weights):
        expected = {m.name: m for m in mappings}
        missing = set(expected) - set(weights)
        for prefix in OPTIONAL_PARTS.values():
            part = {name for name in expected if name.startswith(prefix)}
            if part <= missing:
                missing -= part  # Wholly absent: initialised, not an error.

        def name(n):
            return self.source_names.get(n, n)

        problems = weight_mismatches(expected, weights, missing, name, "config")
        if problems:
            raise CheckpointError(
                f"{self.source}: checkpoint does not match a BERT with "
                f"{self.describe()}: " + "; ".join(problems) + "."
            )
        non_finite_weights(self.source, weights, name)
        if self.vocabulary is not None and (len(self.vocabulary) > self.config["vocabulary_size"]):
            raise CheckpointError(
                f"{self.source}: the vocabulary has {len(self.vocabulary)} "
                f"tokens but the model only {self.config['vocabulary_size']} "
                "embeddings (wrong vocab.txt?)."
            )

    def describe(self):
        """One-line config summary, e.g. `L=6 H=384 A=12 ...`."""
        c = self.config
        return (
            f"L={c['num_layers']} H={c['hidden_dim']} A={c['num_heads']} "
            f"I={c['intermediate_dim']} V={c['vocabulary_size']} "
            f"positions={c['max_sequence_length']} "
            f"segments={c['num_segments']} "
            f"activation={c['hidden_activation']} "
            f"eps={c['layer_norm_epsilon']:g} dropout={c['dropout']:g}"
        )
