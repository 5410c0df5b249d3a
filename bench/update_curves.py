"""Learning per update: held-out masked-LM accuracy against optimizer
updates for pre-training levers, on batches dumped once.

    python -m bench.update_curves dump --out runs/update_curves [--config default]
        [--steps 1750] [--set key=value ...]
    KERAS_BACKEND=jax python -m bench.update_curves run --out runs/update_curves
        [--levers LEVER ...]

`dump` (TensorFlow) writes the config's first phase as `--steps` training
batches and its held-out batches (`bench.learning_curve.dump_batches`),
plus `recipe.json`: the model's arguments, the optimizer, the schedule's
length, the sampled softmax and the unigram output bias that
`build_pretraining` would set. `run` needs only Keras and keras-hub (no
TensorFlow, so it runs on a GPU machine's JAX): for each lever of `LEVERS`
it trains a `BertPretrainer` step-based on the same batches from the same
seed, evaluates the held-out batches every `--eval_every` updates with the
full softmax, and writes `<out>/curves.json`.

Updates are what this counts, not seconds: which lever learns more per
update does not depend on the machine, and `bench.train` or a budgeted run
gives each lever's cost per update on the machine that matters. Levers of
the data (the masking) are dumps of their own (`dump --set`). Never run by
the test suite.
"""

import argparse
import json
import os

import numpy as np

from bench.common import ROOT, markdown_table
from bench.learning_curve import dump_batches, held_out_curve, load_batches

# name -> changes to the dumped recipe. "bias": the masked LM's initial
# output bias ("zeros" or "unigram"); "candidates": sampled-softmax draws
# (None: the full softmax); "model": `BertBackbone` overrides; the rest
# replace `optimizer` keys.
LEVERS = {
    "full": {"candidates": None, "bias": "zeros"},
    "full_unigram": {"candidates": None, "bias": "unigram"},
    "sampled_2048": {"candidates": 2048, "bias": "zeros"},
    "sampled_2048_unigram": {"candidates": 2048, "bias": "unigram"},
    "sampled_1024_unigram": {"candidates": 1024, "bias": "unigram"},
    "sampled_4096_unigram": {"candidates": 4096, "bias": "unigram"},
    "full_pre_ln": {"candidates": None, "bias": "zeros", "model": {"normalize_first": True}},
    "full_lr_1e-3": {"candidates": None, "bias": "zeros", "learning_rate": 1e-3},
    "full_warmup_100": {"candidates": None, "bias": "zeros", "warmup_steps": 100},
    "full_no_clipping": {"candidates": None, "bias": "zeros", "global_clipnorm": None},
}


def dump(args):
    from keras_bert.model_configs import load_model_config
    from keras_bert.pretraining import load_pretraining_config
    from keras_bert.pretraining.run_setup import split_corpus, unigram_log_prior

    # The batches carry every target: the lever picks the softmax.
    config = load_pretraining_config(args.config, args.set + ["sampled_softmax_candidates=null"])
    os.makedirs(args.out, exist_ok=True)
    dump_batches(config, args.steps, os.path.join(args.out, "batches.npz"))
    model = dict(load_model_config(config.model), **config.model_overrides)
    train_files, _ = split_corpus(config.data)
    prior = unigram_log_prior(config, train_files)
    np.save(os.path.join(args.out, "unigram_log_prior.npy"), prior)
    recipe = {
        "model": model,
        "optimizer": config.to_dict()["optimizer"],
        "train_steps": config.train_steps,
        "seed": config.data.seed,
        "dumped_with": args.set,
    }
    with open(os.path.join(args.out, "recipe.json"), "w") as f:
        json.dump(recipe, f, indent=1)


def train(recipe, name, out, steps, eval_every):
    """[(update, held-out mlm accuracy, mlm loss, seconds)] of one lever."""
    import keras

    from keras_bert.models import BertBackbone, BertPretrainer
    from keras_bert.optimization.optimizer_config import OptimizerConfig
    from keras_bert.optimization.optimizers import create_optimizer

    keras.utils.set_random_seed(recipe["seed"])
    settings = dict(LEVERS[name])
    candidates, bias = settings.pop("candidates"), settings.pop("bias")
    backbone = BertBackbone(**dict(recipe["model"], **settings.pop("model", {})))
    model = BertPretrainer(backbone, sampled_softmax_candidates=candidates)
    if bias == "unigram":
        model.masked_lm_output_bias.assign(np.load(os.path.join(out, "unigram_log_prior.npy")))
    optimizer = create_optimizer(
        OptimizerConfig(**dict(recipe["optimizer"], **settings)), recipe["train_steps"]
    )
    # `masked_lm_objective.masked_lm_compile_args` without the next-sentence
    # task, spelled out: `keras_bert.pretraining` imports TensorFlow.
    mlm_loss = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="mean_with_sample_weight"
    )
    model.compile(
        optimizer=optimizer,
        loss={"mlm": mlm_loss, "nsp": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
        loss_weights={"mlm": 1.0, "nsp": 0.0},
        weighted_metrics={"mlm": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]},
        jit_compile=True,
        steps_per_execution=50,
    )
    return held_out_curve(
        model,
        os.path.join(out, "batches.npz"),
        steps,
        eval_every,
        name,
        targets_as_inputs=candidates is not None,
    )


def run(args):
    with open(os.path.join(args.out, "recipe.json")) as f:
        recipe = json.load(f)
    train_arrays, batch_size = load_batches(os.path.join(args.out, "batches.npz"), "train")
    steps = len(train_arrays["nsp_labels"]) // batch_size
    path = os.path.join(args.out, "curves.json")
    curves = {}
    if os.path.exists(path):
        with open(path) as f:
            curves = json.load(f)
    for name in args.levers or LEVERS:
        curves[name] = train(recipe, name, args.out, steps, args.eval_every)
        with open(path, "w") as f:  # After each lever: a cut-off run keeps what it measured.
            json.dump(curves, f, indent=1)
    names = list(curves)
    print(
        markdown_table(
            ["update"] + names,
            [
                [rows[0][0]] + [f"{accuracy:.2%}" for _, accuracy, _, _ in rows]
                for rows in zip(*(curves[n] for n in names))
            ],
        )
    )


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.update_curves", description=__doc__.split("\n")[0]
    )
    parser.add_argument("command", choices=("dump", "run"))
    parser.add_argument("--levers", nargs="+", choices=list(LEVERS), default=[], help="run: which")
    parser.add_argument("--out", default=os.path.join(ROOT, "runs", "update_curves"))
    parser.add_argument("--config", default="default", help="dump: the pre-training config")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--steps", type=int, default=1750, help="dump: training batches")
    parser.add_argument("--eval_every", type=int, default=250, help="run: updates per evaluation")
    args = parser.parse_args()
    if args.command == "dump":
        dump(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
