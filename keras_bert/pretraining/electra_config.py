"""`electra:` in a pre-training recipe: `ElectraObjective`'s own section.

Standard library only: the config reads it before the backend is chosen.
"""

import dataclasses


@dataclasses.dataclass
class ElectraConfig:
    """`objective: electra`'s knobs (`ElectraPretrainer`, `ElectraObjective`).

    Args:
        generator_size: float in (0, 1]. The generator's width as a share of
            the backbone's; the paper's best is 1/4 to 1/3.
        discriminator_weight: float. The discriminator loss's weight against
            the generator's masked-LM loss (50 in the paper).
        sampling_temperature: float > 0. The generator's samples are drawn
            from its softmax at this temperature: above 1, rarer
            replacements than its own guesses. 1 in the paper; 2 here,
            where at 1 the discriminator of a CPU budget learns nothing
            (BENCHMARKS.md#pre-training-on-your-own-text).

    Example:
    >>> ElectraConfig(generator_size=0.5).discriminator_weight
    50.0
    """

    generator_size: float = 0.25
    discriminator_weight: float = 50.0
    sampling_temperature: float = 2.0
