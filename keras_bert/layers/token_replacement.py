"""ELECTRA's corruption step: the generator's samples put in at the masked
positions, and the discriminator's labels.

Shape legend: B batch, T sequence length, P masked positions, V vocabulary.
"""

import keras
from keras import ops

# Tokens per block of the two-level draw (`TokenReplacement._sample`).
_BLOCK = 128


@keras.saving.register_keras_serializable(package="keras_bert")
class TokenReplacement(keras.layers.Layer):
    """Samples a token for each masked position from the generator's
    distribution and writes it into the sequence (Clark et al. 2020, §2,
    https://arxiv.org/abs/2003.10555).

    A position is labelled replaced only where the sample differs from the
    original token: a generator that guesses right leaves the sequence as
    it was there, and the discriminator is told so, as in the paper. The
    sample is discrete, so no gradient flows from the discriminator into
    the generator. Training draws from a
    `SeedGenerator` (new samples every step); inference from the fixed
    `seed`, so a model scores the same inputs the same way every time
    (held-out evaluation, a reloaded `.keras`).

    Args:
        seed: int or None. Seeds the training draws and fixes the
            inference ones (None: 0 at inference).
        temperature: float > 0. Draws from softmax(logits / temperature):
            above 1 a flatter distribution than the generator's (rarer,
            less plausible replacements), 1 the paper's. Defaults to 1.0.

    Call arguments:
        token_ids: int (B, T), the masked-LM input (80/10/10 applied).
        mask_positions: int (B, P), indices into T of the chosen tokens.
        masked_lm_ids: int (B, P), the original tokens there.
        masked_lm_weights: float (B, P), 1 for a real prediction, 0 for a
            padded slot (whose position is not replaced).
        generator_logits: float (B, P, V).

    Returns:
        `(corrupted_ids, replaced)`: int32 (B, T), the original sequence
        with the samples at the chosen positions; float32 (B, T), 1 where
        the token differs from the original.
    """

    def __init__(self, seed=None, temperature=1.0, **kwargs):
        if not temperature > 0:
            raise ValueError(f"`temperature` must be > 0. Received: temperature={temperature}")
        super().__init__(**kwargs)
        # Saved with a checkpoint's seed states: a resumed run draws what the
        # uninterrupted one would.
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.seed = seed
        self.temperature = temperature

    def call(
        self,
        token_ids,
        mask_positions,
        masked_lm_ids,
        masked_lm_weights,
        generator_logits,
        training=None,
    ):
        token_ids = ops.cast(token_ids, "int32")
        samples = self._sample(generator_logits, training)  # (B, P)
        # (B, P, T): slot p of sequence b chooses position t (real slots only).
        chosen = ops.one_hot(ops.cast(mask_positions, "int32"), ops.shape(token_ids)[1])
        chosen = chosen * ops.expand_dims(ops.cast(masked_lm_weights, chosen.dtype), -1)
        at_chosen = ops.max(chosen, axis=1) > 0  # (B, T)

        def scatter(values):  # (B, P) -> (B, T) at the chosen positions.
            # A max, not a sum: ids are >= 0, and a position named twice (as
            # in torch's shape inference, which calls with ones) stays an id.
            spread = chosen * ops.expand_dims(ops.cast(values, chosen.dtype), -1)
            return ops.cast(ops.round(ops.max(spread, axis=1)), "int32")

        original = ops.where(at_chosen, scatter(masked_lm_ids), token_ids)  # (B, T)
        corrupted = ops.where(at_chosen, scatter(samples), token_ids)  # (B, T)
        replaced = ops.cast(ops.not_equal(corrupted, original), "float32")
        return corrupted, replaced

    def _sample(self, logits, training):
        """One token per slot from softmax(`logits` / `temperature`)
        (B, P, V), by inverse
        transform in two levels: a block of `_BLOCK` tokens by the blocks'
        cumulative probability, then a token inside it.

        Exact, and one pass over the V logits: `keras.random.categorical`
        draws Gumbel noise (a random number and two logarithms per entry),
        and a cumulative sum over all V entries is a slow scan on a CPU; at
        V = 30,522 either made the draw a large share of an ELECTRA step
        (BENCHMARKS.md#pre-training-on-your-own-text).
        """
        shape = ops.shape(logits)
        vocabulary = shape[-1]
        blocks = -(-vocabulary // _BLOCK)
        logits = ops.reshape(
            ops.cast(logits, "float32") / self.temperature, (-1, vocabulary)
        )  # (N, V)
        # Unnormalised weights (the draw is scaled by their total below);
        # the padding's weight is 0.
        logits = ops.pad(
            logits - ops.max(logits, axis=-1, keepdims=True),
            [[0, 0], [0, blocks * _BLOCK - vocabulary]],
            constant_values=-1e9,
        )
        weights = ops.reshape(ops.exp(logits), (-1, blocks, _BLOCK))  # (N, blocks, _BLOCK)
        block_mass = ops.sum(weights, axis=-1)  # (N, blocks)
        block_end = ops.cumsum(block_mass, axis=-1)  # (N, blocks)
        # Scaled by the total, so rounding cannot leave the draw past the end.
        draw = (
            keras.random.uniform(
                ops.shape(block_mass)[:1],
                seed=self.seed_generator if training else (self.seed or 0),
            )
            * block_end[:, -1]
        )  # (N,)
        block = ops.minimum(
            ops.sum(ops.cast(block_end < draw[:, None], "int32"), axis=-1), blocks - 1
        )  # (N,)
        inside = ops.take_along_axis(weights, block[:, None, None], axis=1)[:, 0]  # (N, _BLOCK)
        before = ops.take_along_axis(block_end - block_mass, block[:, None], axis=1)  # (N, 1)
        offset = ops.sum(
            ops.cast(before + ops.cumsum(inside, axis=-1) < draw[:, None], "int32"), -1
        )
        token = ops.minimum(block * _BLOCK + ops.minimum(offset, _BLOCK - 1), vocabulary - 1)
        return ops.reshape(token, shape[:-1])  # (B, P)

    def compute_output_spec(self, token_ids, *args):
        return (
            keras.KerasTensor(token_ids.shape, dtype="int32"),
            keras.KerasTensor(token_ids.shape, dtype="float32"),
        )

    def get_config(self):
        return {**super().get_config(), "seed": self.seed, "temperature": self.temperature}
