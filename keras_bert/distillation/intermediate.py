"""Intermediate losses: the student's hidden states and attention
distributions learn the teacher's, layer by layer (TinyBERT, Jiao et al.
2020, https://arxiv.org/abs/1909.10351).

Shape legend: B batch, T sequence length, H the student's hidden size,
H' the teacher's, N attention heads (the same in both), L the student's
blocks, L' the teacher's.

The teacher runs beside the student on every batch, on the student's own
inputs: the two must share a vocabulary. Its logits still come from the
transfer set's shards; only its hidden states and attention are computed
here.
"""

import keras
from keras import ops

from keras_bert.errors import FinetuneError


def default_layer_map(student_layers, teacher_layers):
    """TinyBERT's uniform map: student block m (1-based) learns teacher
    block m * L' / L, rounded down (at least 1)."""
    return [max(1, m * teacher_layers // student_layers) for m in range(1, student_layers + 1)]


def check_intermediate(config, student, student_tokenizer, teacher, teacher_tokenizer, length):
    """The layer map for `config` (`IntermediateConfig`): its own, or the
    default when it is empty. What the teacher cannot share with the
    student is refused with one line each: the tokenization (the teacher
    runs on the student's inputs), the sequence length, the number of
    heads (for attention), a map of the wrong length or naming a block the
    teacher lacks.

    Args:
        student, teacher: `BertBackbone`s.
        student_tokenizer, teacher_tokenizer: `BertTokenizer`s.
        length: int. The student's `data.max_seq_length`.
    """
    section = "distillation.intermediate"
    if (student_tokenizer.vocabulary, student_tokenizer.lower_case) != (
        teacher_tokenizer.vocabulary,
        teacher_tokenizer.lower_case,
    ):
        raise FinetuneError(
            f"{section}: the teacher runs on the student's token ids, so the two need one "
            f"vocabulary and casing; the student's has {student_tokenizer.vocab_size} tokens "
            f"(lower_case={student_tokenizer.lower_case}), the teacher's "
            f"{teacher_tokenizer.vocab_size} (lower_case={teacher_tokenizer.lower_case})"
        )
    if length > teacher.max_sequence_length:
        raise FinetuneError(
            f"data.max_seq_length={length} exceeds the teacher's max_sequence_length="
            f"{teacher.max_sequence_length}, which {section} runs on the student's inputs"
        )
    if config.attention_weight and student.num_heads != teacher.num_heads:
        raise FinetuneError(
            f"{section}.attention_weight={config.attention_weight}: compares head by head, but "
            f"the student has {student.num_heads} heads and the teacher {teacher.num_heads}; "
            "set it to 0 (hidden_weight needs no equal heads)"
        )
    if not config.layer_map:
        return default_layer_map(student.num_layers, teacher.num_layers)
    if len(config.layer_map) != student.num_layers or not all(
        isinstance(t, int) and 1 <= t <= teacher.num_layers for t in config.layer_map
    ):
        raise FinetuneError(
            f"{section}.layer_map={config.layer_map}: needs one teacher block (1 to "
            f"{teacher.num_layers}) for each of the student's {student.num_layers} blocks"
        )
    return list(config.layer_map)


def encoder_states(backbone, inputs, training=False):
    """`(hidden, attention)` of a `BertBackbone`: its L + 1 hidden states
    (B, T, H), the embeddings' output then each block's, and its L blocks'
    attention probabilities (B, N, T, T).

    A loop over the backbone's own layers, as its functional graph runs
    them: that graph has no output for the attention probabilities."""
    padding_mask = inputs["padding_mask"]
    x = backbone.embeddings(inputs["token_ids"], inputs["segment_ids"], training=training)
    hidden, attention = [x], []
    for block in backbone.encoder_blocks:
        x, probabilities = block(
            x, padding_mask=padding_mask, training=training, return_attention_scores=True
        )
        hidden.append(x)
        attention.append(probabilities)
    return hidden, attention


def hidden_state_loss(student, teacher, projections, padding_mask):
    """The mean over layer pairs of the squared difference between each
    projected student state and its teacher state, averaged over the
    teacher's H' features and the real tokens.

    Args:
        student, teacher: lists of (B, T, H) and (B, T, H') states, paired.
        projections: one callable (B, T, H) -> (B, T, H') a pair.
        padding_mask: (B, T), 1 for real tokens.
    """
    weights = ops.cast(padding_mask, "float32")
    tokens = ops.maximum(ops.sum(weights), 1.0)
    losses = [
        ops.sum(keras.losses.mean_squared_error(t, project(s)) * weights) / tokens
        for s, t, project in zip(student, teacher, projections)
    ]
    return ops.mean(ops.stack(losses))


def attention_loss(student, teacher, padding_mask):
    """The mean over layer pairs of KL(teacher || student) between the
    attention distributions of each head and real query token.

    Args:
        student, teacher: lists of (B, N, T, T) probabilities, paired.
        padding_mask: (B, T), 1 for real tokens; a padded query's row is
            left out (a padded key has probability 0 on both sides).
    """
    rows = ops.cast(padding_mask, "float32")[:, None, :]  # (B, 1, T)
    count = ops.maximum(ops.sum(rows) * student[0].shape[1], 1.0)
    losses = [
        ops.sum(keras.losses.kl_divergence(t, s) * rows) / count  # KL: (B, N, T)
        for s, t in zip(student, teacher)
    ]
    return ops.mean(ops.stack(losses))


class IntermediateDistiller(keras.Model):
    """The model `fit` trains when intermediate losses are on: the student
    task model, whose outputs it returns, plus `hidden_weight` times
    `hidden_state_loss` and `attention_weight` times `attention_loss`
    against the frozen teacher backbone, added as the model's losses.

    Written by hand because `keras.distillation.FeatureDistillation`
    compares two layers' outputs as they are: it has no learned projection
    between hidden sizes, no padding mask and no attention probabilities,
    and reaches no layer nested inside a task model's backbone.

    The student runs twice on a batch: whole, for the outputs the compiled
    loss compares with the teacher's logits, and block by block for its
    states (`encoder_states`). The second pass costs a tiny student little
    beside the teacher's.

    Args:
        student: the student task model (its `backbone` a `BertBackbone`).
        teacher_backbone: the teacher's `BertBackbone`; frozen here.
        layer_map: list of int. The teacher block (1-based) for each
            student block; the embeddings' outputs are paired too.
        hidden_weight, attention_weight: float >= 0.

    Only `student` is saved: the wrapper, its projections and the teacher
    exist for training.
    """

    def __init__(self, student, teacher_backbone, layer_map, hidden_weight, attention_weight):
        super().__init__()
        self.student = student
        self.teacher_backbone = teacher_backbone
        self.teacher_backbone.trainable = False
        self.layer_map = list(layer_map)
        self.hidden_weight = hidden_weight
        self.attention_weight = attention_weight
        self.projections = []
        for i in range(len(layer_map) + 1):
            projection = keras.layers.Dense(teacher_backbone.hidden_dim, name=f"projection_{i}")
            # Built here: `fit` traces the training step after building the
            # model at inference, where these layers are not called.
            projection.build((None, None, student.backbone.hidden_dim))
            self.projections.append(projection)
        # Every layer is built: a resumed run loads its checkpoint into
        # this model before any call would build it.
        self.built = True

    def call(self, inputs, training=None):
        outputs = self.student(inputs, training=training)
        if training:
            self.add_loss(self.intermediate_loss(inputs, training=True))
        return outputs

    def intermediate_loss(self, inputs, training=False):
        """`hidden_weight * hidden + attention_weight * attention` for a
        batch of `inputs`."""
        student_hidden, student_attention = encoder_states(
            self.student.backbone, inputs, training=training
        )
        teacher_hidden, teacher_attention = encoder_states(self.teacher_backbone, inputs)
        pairs = [0] + self.layer_map  # The embeddings' output, then each block's.
        padding_mask = inputs["padding_mask"]
        loss = 0.0
        if self.hidden_weight:
            teacher_states = [ops.stop_gradient(teacher_hidden[t]) for t in pairs]
            loss += self.hidden_weight * hidden_state_loss(
                student_hidden, teacher_states, self.projections, padding_mask
            )
        if self.attention_weight:
            teacher_probabilities = [
                ops.stop_gradient(teacher_attention[t - 1]) for t in self.layer_map
            ]
            loss += self.attention_weight * attention_loss(
                student_attention, teacher_probabilities, padding_mask
            )
        return loss
