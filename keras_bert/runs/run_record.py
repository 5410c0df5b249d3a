"""A run's record of itself, the `config.yaml` every training command
writes into its folder before it trains: the resolved recipe, what the run
was started with, and what it trains under (`trained_under`)."""

from keras_bert.file_io import write_atomically
from keras_bert.runs.recipe import TRAINED_UNDER


def trained_under(model):
    """The Keras backend and the precision `model` computes in (a recipe's
    `precision: auto` resolved): a rerun that differs would not repeat the
    run."""
    import keras

    return {"backend": keras.backend.backend(), "precision": model.dtype_policy.name}


def write_run_config(path, tree, under=None):
    """Writes the mapping `tree` (the recipe's YAML-ready values, keys in
    their order) as YAML, whole or not at all, into an existing folder,
    with `under` (`trained_under`) as its `TRAINED_UNDER` record."""
    import yaml

    if under is not None:
        tree = {**tree, TRAINED_UNDER: dict(under)}
    text = yaml.safe_dump(tree, sort_keys=False)
    write_atomically(path, lambda f: f.write(text))
