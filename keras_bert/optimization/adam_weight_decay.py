"""The original BERT optimizer: Adam without bias correction, decay in the update."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class AdamWeightDecay(keras.optimizers.Optimizer):
    """google-research/bert's `AdamWeightDecayOptimizer`, transcribed.

    The optimizer BERT was pre-trained and fine-tuned with
    (`optimization.py` of https://github.com/google-research/bert; paper
    §A.2). For every variable `p` with gradient `g`, at learning rate `lr`:

        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g ** 2
        update = m / (sqrt(v) + epsilon)
        update += weight_decay_rate * p     # unless p is excluded
        p -= lr * update

    It differs from `keras.optimizers.AdamW` in two ways that change
    results: there is no bias correction (AdamW scales each step by
    `sqrt(1 - beta_2**t) / (1 - beta_1**t)`, so the original's steps are
    3.2x larger at t=1, 6.5x at t=10 and 1.26x at t=1000), and the decay
    enters the update after the Adam step is formed, where AdamW first
    shrinks `p` by `lr * weight_decay`. Use it to reproduce the original
    recipe; `AdamW` is the safer default on small fine-tuning sets
    (Zhang et al. 2021, https://arxiv.org/abs/2006.05987).

    Variables whose name contains one of `exclude_from_weight_decay` (the
    original excluded `LayerNorm` and `bias`; here the leaf names `gamma`,
    `beta` and `bias`) are not decayed, through Keras'
    `exclude_from_weight_decay(var_names=...)`, which may also be called
    after construction. Names given either way are part of `get_config()`,
    so a saved and reloaded model keeps decaying the same variables;
    exclusions given as `var_list` (variable objects) are not saved.

    Args:
        learning_rate: float or `LearningRateSchedule`. Defaults to 0.001.
        weight_decay_rate: float. Decoupled decay added to the update, the
            original's argument name. Defaults to 0.0.
        beta_1: float. First-moment decay. Defaults to 0.9.
        beta_2: float. Second-moment decay. Defaults to 0.999.
        epsilon: float. Added to `sqrt(v)`. Defaults to 1e-6 (the
            original's).
        exclude_from_weight_decay: list of str or None. Substrings of
            variable names not to decay. Defaults to None (decay all).
        **kwargs: the base optimizer's arguments (`global_clipnorm`,
            `gradient_accumulation_steps`, `clipnorm`, `name`, ...).
            `weight_decay` is refused: Keras would apply it before the
            step, which is AdamW's decay, not this one.

    Example:
    >>> optimizer = AdamWeightDecay(
    ...     learning_rate=1e-4, weight_decay_rate=0.01,
    ...     exclude_from_weight_decay=["gamma", "beta", "bias"],
    ...     global_clipnorm=1.0)
    >>> optimizer.get_config()["exclude_from_weight_decay"]
    ['gamma', 'beta', 'bias']
    """

    def __init__(
        self,
        learning_rate=0.001,
        weight_decay_rate=0.0,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        exclude_from_weight_decay=None,
        **kwargs,
    ):
        if kwargs.get("weight_decay") is not None:
            raise ValueError(
                "AdamWeightDecay takes `weight_decay_rate` (decay inside the "
                "update), not `weight_decay` (Keras' decay before the step). "
                f"Received: weight_decay={kwargs['weight_decay']}"
            )
        kwargs.pop("weight_decay", None)
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.weight_decay_rate = weight_decay_rate
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self._excluded_names = []
        if exclude_from_weight_decay:
            self.exclude_from_weight_decay(var_names=exclude_from_weight_decay)

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Keras' exclusion mechanism; also remembers `var_names` for
        `get_config()`."""
        super().exclude_from_weight_decay(var_list=var_list, var_names=var_names)
        self._excluded_names = list(var_names or [])

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._momentums, self._velocities = self.add_optimizer_variables(
            var_list, ["momentum", "velocity"]
        )

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        self.assign(m, self.beta_1 * m + (1.0 - self.beta_1) * gradient)
        self.assign(v, self.beta_2 * v + (1.0 - self.beta_2) * ops.square(gradient))
        # No bias correction: the original divides the raw moments.
        update = m / (ops.sqrt(v) + self.epsilon)
        # `_use_weight_decay` is decided per variable in Python, so an
        # excluded variable's graph has no decay term at all.
        if self.weight_decay_rate and self._use_weight_decay(variable):
            update = update + self.weight_decay_rate * variable
        self.assign_sub(variable, lr * update)

    def get_config(self):
        config = super().get_config()
        # Always None here (refused above); leaving it out keeps the
        # config a set of this constructor's arguments.
        del config["weight_decay"]
        config.update(
            {
                "weight_decay_rate": self.weight_decay_rate,
                "beta_1": self.beta_1,
                "beta_2": self.beta_2,
                "epsilon": self.epsilon,
                "exclude_from_weight_decay": list(self._excluded_names),
            }
        )
        return config
