"""keras-hub's masked-LM head, with a sampled softmax for training.

Shape legend: B batch, P masked positions per sequence, N = B·P prediction
slots, S drawn tokens, H hidden size, V vocabulary size.
"""

import math

import keras
from keras import ops
from keras_hub.layers import MaskedLMHead

# A logit that leaves a candidate out of the softmax (exp underflows to 0
# in float32) without the NaN that -inf gives a row's gradient.
_LEFT_OUT = -1e9


@keras.saving.register_keras_serializable(package="keras_bert")
class SampledMaskedLMHead(MaskedLMHead):
    """`keras_hub.layers.MaskedLMHead` that can train on a sampled softmax.

    At BERT-Tiny the V-way output projection and its softmax are most of a
    training step's arithmetic (V = 30,522 against H = 128). The sampled
    softmax (Jean et al. 2015, https://arxiv.org/abs/1412.2007) scores each
    prediction against a candidate set instead: every distinct real target
    of the batch (tokens drawn from the data, so the frequent ones, which
    hold most of the probability mass, are nearly always there) plus
    `sampled_candidates` tokens drawn uniformly from the vocabulary, whose
    logits get `log(V / S)` added so that they stand for the part of the
    vocabulary that was not drawn (an importance-sampled estimate of the
    softmax's denominator). A drawn token that is also a target, and a
    target's repeats, are left out, so each token counts once. Keras has
    no sampled softmax for all backends (`tf.nn.sampled_softmax_loss` is
    TensorFlow's alone), hence this layer.

    Only training uses it: `sampled_logits` is what `BertPretrainer` calls
    in a training step when it is given the targets; `call` (evaluation,
    fill-mask, export) is the parent's full V-way softmax, with the same
    variables.

    Args:
        sampled_candidates: int or None. S, the uniformly drawn tokens per
            training step; None: no sampled softmax (the parent exactly).
        seed: int or None. Seeds the draws.
        **kwargs: `MaskedLMHead`'s arguments.
    """

    def __init__(self, sampled_candidates=None, seed=None, **kwargs):
        if sampled_candidates is not None and sampled_candidates < 1:
            raise ValueError(
                "`sampled_candidates` must be None or >= 1. "
                f"Received: sampled_candidates={sampled_candidates}"
            )
        super().__init__(**kwargs)
        self.sampled_candidates = sampled_candidates
        self.seed = seed
        if sampled_candidates:
            self.seed_generator = keras.random.SeedGenerator(seed)

    def sampled_logits(self, inputs, mask_positions, target_ids, target_weights):
        """Logits (B, P, 1 + N + S), float32: column 0 is each slot's own
        target, then the N slots' targets and the S drawn tokens, each
        left out (-1e9) where it would count a token twice. The label of
        every slot is 0."""
        vocabulary_size = self.token_embedding.input_dim
        x = ops.take_along_axis(inputs, ops.expand_dims(mask_positions, -1), axis=1)  # (B, P, H)
        x = self._intermediate_layer_norm(self._intermediate_dense(x))
        batch, predictions = ops.shape(target_ids)[0], ops.shape(target_ids)[1]
        hidden = ops.reshape(x, (-1, ops.shape(x)[-1]))  # (N, H)
        targets = ops.reshape(ops.cast(target_ids, "int32"), (-1,))  # (N,)
        real = ops.reshape(target_weights, (-1,)) > 0  # (N,)
        drawn = keras.random.randint(
            (self.sampled_candidates,), 0, vocabulary_size, dtype="int32", seed=self.seed_generator
        )  # (S,)
        candidates = ops.concatenate([targets, drawn])  # (N + S,)
        embeddings = ops.cast(
            ops.take(self.token_embedding.embeddings, candidates, axis=0), self.compute_dtype
        )  # (N + S, H)
        logits = ops.matmul(hidden, ops.transpose(embeddings))  # (N, N + S)
        logits = ops.cast(logits, "float32") + ops.cast(ops.take(self._bias, candidates), "float32")
        slots = ops.shape(targets)[0]
        own = ops.take_along_axis(logits, ops.expand_dims(ops.arange(slots), -1), axis=1)  # (N, 1)

        same = ops.equal(ops.expand_dims(targets, 1), ops.expand_dims(targets, 0))  # (N, N)
        earlier = ops.less(
            ops.expand_dims(ops.arange(slots), 1), ops.expand_dims(ops.arange(slots), 0)
        )
        repeat = ops.any(same & earlier & ops.expand_dims(real, 1), axis=0)  # (N,): a later copy
        keep_targets = ops.expand_dims(real & ~repeat, 0) & ~same  # (N, N); own id is column 0
        hit = ops.any(
            ops.equal(ops.expand_dims(drawn, 0), ops.expand_dims(targets, 1))
            & ops.expand_dims(real, 1),
            axis=0,
        )  # (S,)
        correction = math.log(vocabulary_size / self.sampled_candidates)
        target_logits = ops.where(keep_targets, logits[:, :slots], _LEFT_OUT)
        drawn_logits = ops.where(
            ops.expand_dims(~hit, 0), logits[:, slots:] + correction, _LEFT_OUT
        )
        out = ops.concatenate([own, target_logits, drawn_logits], axis=1)  # (N, 1 + N + S)
        return ops.reshape(out, (batch, predictions, -1))

    def get_config(self):
        config = super().get_config()
        config.update(sampled_candidates=self.sampled_candidates, seed=self.seed)
        return config
