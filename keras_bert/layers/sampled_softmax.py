"""A sampled softmax for training a masked LM (Jean et al. 2015).

Shape legend: N prediction slots, S drawn tokens, H hidden size, V
vocabulary size.
"""

import math

from keras import ops

# A logit that leaves a candidate out of the softmax (exp underflows to 0
# in float32) without the NaN that -inf gives a row's gradient.
_LEFT_OUT = -1e9


def sampled_softmax_logits(hidden, embeddings, bias, targets, real, drawn):
    """Logits over a candidate set instead of the whole vocabulary.

    At BERT-Tiny the V-way output projection and its softmax are most of a
    training step's arithmetic (V = 30,522 against H = 128). The sampled
    softmax (https://arxiv.org/abs/1412.2007) scores each prediction
    against every distinct real target of the batch (tokens drawn from the
    data, so the frequent ones, which hold most of the probability mass,
    are nearly always there) plus the `drawn` tokens, drawn uniformly from
    the vocabulary, whose logits get `log(V / S)` added so that they stand
    for the part of the vocabulary that was not drawn (an importance-
    sampled estimate of the softmax's denominator). A drawn token that is
    also a target, and a target's repeats, are left out (-1e9), so each
    token counts once. Keras has no sampled softmax for every backend
    (`tf.nn.sampled_softmax_loss` is TensorFlow's alone), hence this.

    Args:
        hidden: (N, H) the masked-LM head's transformed encodings.
        embeddings: (V, H) the tied decoder (token embeddings).
        bias: (V,) the decoder's output bias.
        targets: int (N,) each slot's original token.
        real: bool (N,) the slots that hold a prediction (weight > 0).
        drawn: int (S,) tokens drawn uniformly from [0, V).

    Returns:
        float32 (N, 1 + N + S): column 0 is each slot's own target, so the
        label of every slot is 0; then the N slots' targets and the S
        drawn tokens.
    """
    vocabulary_size = ops.shape(embeddings)[0]
    slots = ops.shape(targets)[0]
    candidates = ops.concatenate([targets, drawn])  # (N + S,)
    decoder = ops.cast(ops.take(embeddings, candidates, axis=0), hidden.dtype)  # (N + S, H)
    logits = ops.cast(ops.matmul(hidden, ops.transpose(decoder)), "float32")  # (N, N + S)
    logits = logits + ops.cast(ops.take(bias, candidates), "float32")
    own = ops.take_along_axis(logits, ops.expand_dims(ops.arange(slots), -1), axis=1)  # (N, 1)

    same = ops.equal(ops.expand_dims(targets, 1), ops.expand_dims(targets, 0))  # (N, N)
    order = ops.arange(slots)
    earlier = ops.less(ops.expand_dims(order, 1), ops.expand_dims(order, 0))  # (N, N): i < j
    repeat = ops.any(same & earlier & ops.expand_dims(real, 1), axis=0)  # (N,): a later copy
    keep_targets = ops.expand_dims(real & ~repeat, 0) & ~same  # (N, N); own id is column 0
    hit = ops.any(
        ops.equal(ops.expand_dims(drawn, 0), ops.expand_dims(targets, 1))
        & ops.expand_dims(real, 1),
        axis=0,
    )  # (S,)
    correction = math.log(vocabulary_size / ops.shape(drawn)[0])
    target_logits = ops.where(keep_targets, logits[:, :slots], _LEFT_OUT)
    drawn_logits = ops.where(ops.expand_dims(~hit, 0), logits[:, slots:] + correction, _LEFT_OUT)
    return ops.concatenate([own, target_logits, drawn_logits], axis=1)
