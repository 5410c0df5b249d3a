"""Does pre-training transfer? Pre-train from arrays, then fine-tune SST-2
from the result and from random init, side by side, several seeds.

Two steps, so that the training can run where TensorFlow cannot (the GPU
image of `device`, see /work/.library/device/README.md, has JAX and PyTorch
only, and 64 MiB travel):

    # 1. here (TensorFlow): the batches of our pipeline, as compact arrays
    KERAS_BACKEND=jax PYTHONPATH=. .venv/bin/python bench/transfer.py dump \
        --config budget --unique_batches 1600 --out .devdata/budget.npz
    # 2. anywhere with keras + keras-hub + a backend
    KERAS_BACKEND=jax PYTHONPATH=. python bench/transfer.py run \
        --data .devdata/budget.npz --seeds 3 [--model_overrides '{...}']

`dump` writes, for every phase of the config, up to `--unique_batches`
training batches (a phase longer than that cycles through them: its masks
repeat, as with the original's static masking) and `eval_steps` held-out
batches, the recipe (model, optimizer, phase steps), and SST-2 train/dev
tokenized by the fine-tuning pipeline with the same vocabulary.

`run` trains `BertPretrainer` with the recipe's optimizer and schedule,
printing held-out MLM accuracy per phase, then fine-tunes `BertClassifier`
on SST-2 from the pre-trained backbone and from a random one, with the
fine-tuning defaults (AdamW, 10% warmup, batch 32, dropout 0.1 in the
encoder and head for both, `--dropout`), for each seed, and prints mean and std of dev accuracy.
Never run by the test suite.
"""

import argparse
import importlib
import json
import os
import statistics
import sys
import time
import types

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "..", "shared", "data")


def dump(args):
    from learning_curve import compact_batches   # bench/, beside this script

    from keras_bert.finetuning.batch_prediction import take_limit
    from keras_bert.model_configs import load_model_config
    from keras_bert.pretraining import build_pretraining, load_pretraining_config
    import pipelines
    import pipelines.tasks as tasks

    config = load_pretraining_config(args.config, args.set)
    pretraining = build_pretraining(config)
    arrays = {}
    for phase in pretraining.phases:
        sets = {"train": (phase.dataset(), min(phase.steps, args.unique_batches)),
                "eval": (pretraining.eval_dataset(phase.index), config.eval_steps)}
        for split, (dataset, count) in sets.items():
            arrays.update({f"p{phase.index}_{split}_{field}": value for field, value
                           in compact_batches(dataset, count).items()})
    model = load_model_config(config.model)
    model.update(config.model_overrides)
    recipe = {"model": model, "optimizer": config.to_dict()["optimizer"],
              "phases": [{"steps": p.steps, "batch_size": p.config.batch_size,
                          "seq_len": p.config.seq_len} for p in pretraining.phases],
              "next_sentence_rate": config.data.next_sentence_rate,
              "seed": config.data.seed, "config": args.config, "set": args.set}

    tokenizer = pipelines.BertTokenizer(config.data.vocab_file,
                                        lower_case=config.data.lower_case)
    glue = tasks.glue_data_dir("sst2", os.path.join(args.data, "glue"))
    for split, name in (("train", "train.tsv"), ("dev", "dev.tsv")):
        examples = tasks.read_glue("sst2", os.path.join(glue, name))
        if split == "train":
            examples = take_limit(examples, args.sst2_train_limit, 0)
        features = tasks.classification_features(examples, tokenizer, args.sst2_seq_len)
        token_ids = np.zeros((len(examples), args.sst2_seq_len), "uint16")
        segment_ids = np.zeros((len(examples), args.sst2_seq_len), "uint8")
        for row, (tokens, segments) in enumerate(zip(features["token_ids"],
                                                     features["segment_ids"])):
            token_ids[row, :len(tokens)] = tokens
            segment_ids[row, :len(segments)] = segments
        arrays[f"sst2_{split}_token_ids"] = token_ids
        arrays[f"sst2_{split}_segment_ids"] = segment_ids
        arrays[f"sst2_{split}_labels"] = np.array(
            [int(e.label) for e in examples], "uint8")
    arrays["recipe"] = np.array(json.dumps(recipe))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    np.savez_compressed(args.out, **arrays)
    print(f"{args.out}: {os.path.getsize(args.out) / 2**20:.1f} MiB")


def training_modules():
    """`keras_bert.pretraining`'s optimizer, objective and config modules, without the
    package `__init__`, which imports the TensorFlow pipeline: they need
    only Keras, and the GPU image has no TensorFlow. Call before the first
    `import keras_bert` (whose `__init__` imports from the package)."""
    if "keras_bert.pretraining" not in sys.modules:
        package = types.ModuleType("keras_bert.pretraining")
        package.__path__ = [os.path.join(ROOT, "keras_bert", "training")]
        sys.modules["keras_bert.pretraining"] = package
    return tuple(importlib.import_module(f"keras_bert.pretraining.{name}") for name in
                 ("optimizers", "pretraining_objective", "pretraining_config"))


def pretrain_inputs(data, phase, split):
    """`(x, y, sample_weight)` for `fit` from a phase's dumped arrays."""
    from learning_curve import FIELDS, keras_inputs   # bench/, beside this script

    return keras_inputs({field: data[f"p{phase}_{split}_{field}"].astype("int32")
                         for field in FIELDS})


def sst2_inputs(data, split):
    """`(features, labels)` of a dumped SST-2 split."""
    token_ids = data[f"sst2_{split}_token_ids"].astype("int32")
    return ({"token_ids": token_ids,
             "segment_ids": data[f"sst2_{split}_segment_ids"].astype("int32"),
             "padding_mask": (token_ids != 0).astype("int32")},
            data[f"sst2_{split}_labels"].astype("int32"))


def take(arrays, rows):
    return {key: value[rows] for key, value in arrays.items()}


def pretrain(data, recipe, model_overrides, log_every):
    optimizers, objective, configs = training_modules()
    import keras

    from keras_bert.models import BertBackbone, BertPretrainer

    keras.utils.set_random_seed(recipe["seed"])
    backbone = BertBackbone(**{**recipe["model"], **model_overrides})
    model = BertPretrainer(backbone)
    total = sum(phase["steps"] for phase in recipe["phases"])
    config = configs.OptimizerConfig(**recipe["optimizer"])
    objective.compile_pretrainer(
        model, optimizers.create_optimizer(config, total),
        next_sentence_prediction=recipe["next_sentence_rate"] > 0)
    start, curve = time.perf_counter(), []
    for index, phase in enumerate(recipe["phases"]):
        x, y, w = pretrain_inputs(data, index, "train")
        ex, ey, ew = pretrain_inputs(data, index, "eval")
        unique, batch = len(y["nsp"]) // phase["batch_size"], phase["batch_size"]
        done = 0
        while done < phase["steps"]:
            steps = min(log_every, phase["steps"] - done)
            rows = (np.arange(done, done + steps)[:, None] % unique * batch
                    + np.arange(batch)).reshape(-1)
            model.fit(take(x, rows), take(y, rows), sample_weight=take(w, rows),
                      batch_size=batch, epochs=1, shuffle=False, verbose=0)
            done += steps
            held_out = model.evaluate(ex, ey, sample_weight=ew, batch_size=batch,
                                      return_dict=True, verbose=0)
            curve.append({"phase": index, "seq_len": phase["seq_len"],
                          "step": sum(p["steps"] for p in recipe["phases"][:index]) + done,
                          "mlm_accuracy": held_out["mlm_accuracy"],
                          "mlm_loss": held_out["mlm_loss"],
                          "seconds": time.perf_counter() - start})
            print("pretrain", json.dumps(curve[-1]), flush=True)
    return backbone, curve


def finetune_sst2(data, backbone_config, weights, seed, learning_rate, args):
    """Dev accuracy of one SST-2 fine-tune (the fine-tuning defaults)."""
    optimizers, _, configs = training_modules()
    import keras

    from keras_bert.models import BertBackbone, BertClassifier

    keras.utils.set_random_seed(seed)
    backbone = BertBackbone.from_config({**backbone_config, "dropout": args.dropout})
    if weights is not None:
        backbone.set_weights(weights)
    model = BertClassifier(backbone, num_classes=2, dropout=args.dropout)
    x, y = sst2_inputs(data, "train")
    order = np.random.default_rng(seed).permutation(len(y))[:args.train_limit]
    steps = args.epochs * -(-len(order) // 32)
    # The optimizer defaults are the fine-tuning recipe's (AdamW, decay 0.01
    # without LayerNorm and biases, ε 1e-6, clip 1.0); warmup 10%.
    config = configs.OptimizerConfig(learning_rate=learning_rate,
                                     warmup_steps=int(round(0.1 * steps)))
    model.compile(optimizer=optimizers.create_optimizer(config, steps),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["sparse_categorical_accuracy"])
    model.fit(take(x, order), y[order], batch_size=32, epochs=args.epochs,
              shuffle=True, verbose=0)
    dev, labels = sst2_inputs(data, "dev")
    logits = model.predict(dev, batch_size=256, verbose=0)
    return float(np.mean(logits.argmax(-1) == labels))


def run(args):
    data = dict(np.load(args.data))
    recipe = json.loads(str(data["recipe"]))
    overrides = json.loads(args.model_overrides)
    for phase, steps in zip(recipe["phases"], args.phase_steps or []):
        phase["steps"] = steps
    if args.optimizer:
        recipe["optimizer"].update(json.loads(args.optimizer))
    print("recipe", json.dumps(recipe), "overrides", overrides, flush=True)
    backbone, curve = pretrain(data, recipe, overrides, args.log_every)
    config, weights = backbone.get_config(), backbone.get_weights()
    scores = {}
    for learning_rate in args.finetune_lr:
        for seed in range(args.seeds):
            for init, start in (("pre-trained", weights), ("random", None)):
                began = time.perf_counter()
                score = finetune_sst2(data, config, start, seed, learning_rate, args)
                scores.setdefault(f"{init} lr {learning_rate:g}", []).append(score)
                print(f"sst2 {init} lr {learning_rate:g} seed {seed}: {score:.4f} "
                      f"({time.perf_counter() - began:.0f} s)", flush=True)
    summary = {name: (statistics.mean(v), statistics.stdev(v) if len(v) > 1 else 0.0, v)
               for name, v in scores.items()}
    for name, (mean, std, values) in summary.items():
        print(f"| {name} | {mean:.2%} ± {std:.2%} | {[round(v, 4) for v in values]} |")
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump({"recipe": recipe, "overrides": overrides, "curve": curve,
                       "sst2": summary, "protocol": vars(args)}, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    dumper = commands.add_parser("dump")
    dumper.add_argument("--config", default="budget")
    dumper.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    dumper.add_argument("--unique_batches", type=int, default=1600)
    dumper.add_argument("--data", default=DATA, help="../shared/data")
    dumper.add_argument("--sst2_seq_len", type=int, default=64)
    dumper.add_argument("--sst2_train_limit", type=int, default=None)
    dumper.add_argument("--out", required=True)
    runner = commands.add_parser("run")
    runner.add_argument("--data", required=True)
    runner.add_argument("--model_overrides", default="{}", help="JSON, e.g. bert_mini sizes")
    runner.add_argument("--optimizer", help="JSON changes to the recipe's optimizer")
    runner.add_argument("--phase_steps", type=int, nargs="*")
    runner.add_argument("--log_every", type=int, default=500)
    runner.add_argument("--seeds", type=int, default=3)
    runner.add_argument("--train_limit", type=int, default=20000)
    runner.add_argument("--epochs", type=int, default=1)
    runner.add_argument("--finetune_lr", type=float, nargs="+", default=[1e-4])
    runner.add_argument("--dropout", type=float, default=0.1,
                        help="fine-tuning dropout, encoder and head")
    runner.add_argument("--out")
    args = parser.parse_args()
    sys.path.insert(0, ROOT)
    dump(args) if args.command == "dump" else run(args)


if __name__ == "__main__":
    main()
