"""Does pre-training on a task's own unlabeled text pay off? Dev score against
the number of labels, pre-trained against random init, several seeds.

The one command (pre-trains on the task's training text with the labels
removed, then draws the curve; dev and test text are never read for
pre-training):

    KERAS_BACKEND=jax python -m bench.data_efficiency curve \
        --task sst2 --out runs/curve_sst2 \
        [--pretrained out-of-domain=runs/pretrain_budget/backbone.keras]

Its steps, each also a sub-command, so that the training can run where
TensorFlow cannot (the device image has JAX and PyTorch only):

    text      OUT/text/part-NN.txt: the training split, one document per line
              (SST-2: a sentence; CoNLL-2003: an article), labels removed
    pretrain  python -m keras_bert.pretrain --config own_text
              --set data.train_files=OUT/text/*.txt --model_dir OUT/pretrain
              (`--objectives masked_lm electra`: one run each, at the
              recipe's train_budget_minutes, OUT/pretrain_electra the second)
    dump      OUT/TASK.npz: train and dev packed by our fine-tuning pipeline
    run       fine-tune every init at every label budget, learning rate and
              seed (Keras only); OUT/results.json (every run, appended as it
              ends: a rerun skips what is done), OUT/table.md, OUT/curve.png

Protocol, the same for every init: `--budgets` training examples (SST-2)
or sentences (CoNLL-2003) drawn with the seed (both inits see the same
subset for a seed), batch 32, AdamW with the fine-tuning defaults (decay
0.01 without LayerNorm and biases, 10% warmup, linear decay, clip 1.0),
dropout 0.1 in encoder and head, 3 epochs or `--min_updates` updates if
that is more (250 labels are 8 batches), random batches padded to their
longest row (rounded up to 32). The learning rate is picked on dev from
`--learning_rates` for each init and budget by the mean over the seeds, as
the paper picks its fine-tuning rate; the table reports that rate's mean
± std. Scores: SST-2 dev accuracy (872), CoNLL-2003 `valid` entity F1
(seqeval/conlleval). Needs matplotlib for the plot (requirements-bench.txt).
Never run by the test suite.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from bench.common import DATA, ROOT, VOCAB, markdown_table, write_text
from keras_bert.pretraining.objective_registry import DEFAULT_OBJECTIVE, OBJECTIVES

BUDGETS = {"sst2": [250, 1000, 4000, 67349], "conll2003": [250, 1000, 14041]}
SEQ_LEN = {"sst2": 64, "conll2003": 128}
METRIC = {"sst2": "accuracy", "conll2003": "entity F1"}
BATCH = 32
LENGTH_MULTIPLE = 32  # few distinct batch shapes: one compilation each


def in_domain(objective):
    """The name of the init pre-training with `objective` gives (`curve
    --objectives`): `in-domain` for the default objective's, as the table
    has always named it; `in-domain ELECTRA` for `electra`'s."""
    return "in-domain" if objective == DEFAULT_OBJECTIVE else f"in-domain {objective.upper()}"


# === Pre-training on the task's text (bench.common.write_text) ===


def pretrain(text_pattern, out, config, overrides, objective=DEFAULT_OBJECTIVE):
    """Runs the pre-training command with `objective`; returns the
    backbone's path. Every objective gets the recipe's
    `train_budget_minutes`: compared at equal pre-training wall time."""
    model_dir = os.path.join(
        out, "pretrain" if objective == DEFAULT_OBJECTIVE else f"pretrain_{objective}"
    )
    command = [
        sys.executable,
        "-m",
        "keras_bert.pretrain",
        "--config",
        config,
        "--set",
        f"data.train_files={text_pattern}",
        "--model_dir",
        model_dir,
        "--set",
        f"objective={objective}",
    ]
    command += [a for o in overrides for a in ("--set", o)]
    print("pretrain:", " ".join(command), flush=True)
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT)
    print(f"pretrain: {(time.perf_counter() - start) / 60:.1f} min wall", flush=True)
    return os.path.join(model_dir, "backbone.keras")


# === Arrays for any backend ===


def _padded(rows, seq_len, dtype, fill=0):
    array = np.full((len(rows), seq_len), fill, dtype)
    for i, row in enumerate(rows):
        array[i, : len(row)] = row
    return array


def dump(task, data_dir, vocab, path):
    """Train and dev of `task`, packed by our fine-tuning readers, as arrays."""
    import pipelines
    import pipelines.tasks as tasks

    tokenizer = pipelines.BertTokenizer(vocab)
    seq_len, arrays = SEQ_LEN[task], {}
    if task == "sst2":
        glue = tasks.glue_data_dir("sst2", os.path.join(data_dir, "glue"))
        for split in ("train", "dev"):
            examples = tasks.read_glue("sst2", os.path.join(glue, f"{split}.tsv"))
            features = tasks.classification_features(examples, tokenizer, seq_len)
            arrays[f"{split}_token_ids"] = _padded(features["token_ids"], seq_len, "int32")
            arrays[f"{split}_labels"] = np.array([int(e.label) for e in examples], "int32")
    else:
        folder = os.path.join(data_dir, "conll2003")
        train = tasks.read_conll(os.path.join(folder, "train.txt"))
        dev = tasks.read_conll(os.path.join(folder, "valid.txt"))
        label_names = tasks.tag_names(train)
        for split, sentences in (("train", train), ("dev", dev)):
            features, labels, starts = tasks.tagging_features(
                sentences, tokenizer, seq_len, label_names
            )
            arrays[f"{split}_token_ids"] = _padded(features["token_ids"], seq_len, "int32")
            arrays[f"{split}_labels"] = _padded(labels, seq_len, "int32", tasks.IGNORED_LABEL)
        arrays["dev_word_starts"] = np.array(json.dumps(starts))
        arrays["dev_gold_tags"] = np.array(json.dumps([s.tags for s in dev]))
        arrays["label_names"] = np.array(json.dumps(label_names))
    arrays["task"] = np.array(task)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    np.savez_compressed(path, **arrays)
    print(f"dump: {path} ({os.path.getsize(path) / 2**20:.1f} MiB)", flush=True)
    return path


# === Fine-tuning ===


def batch_inputs(token_ids):
    """Model inputs of rows cut to their batch's padded length."""
    length = int((token_ids != 0).sum(axis=1).max())
    length = min(token_ids.shape[1], -(-length // LENGTH_MULTIPLE) * LENGTH_MULTIPLE)
    token_ids = token_ids[:, :length]
    return {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": token_ids != 0,
    }, length


def make_batches(token_ids, labels, seed):
    """A `keras.utils.PyDataset` of random batches, reshuffled every epoch."""
    import keras

    class RandomBatches(keras.utils.PyDataset):
        def __init__(self):
            super().__init__()
            self.rng = np.random.default_rng(seed)
            self.on_epoch_end()

        def __len__(self):
            return len(labels) // BATCH

        def __getitem__(self, index):
            rows = self.order[index * BATCH : (index + 1) * BATCH]
            inputs, length = batch_inputs(token_ids[rows])
            return inputs, labels[rows][:, :length] if labels.ndim == 2 else labels[rows]

        def on_epoch_end(self):
            self.order = self.rng.permutation(len(labels))

    return RandomBatches()


def load_backbones(pretrained):
    """`{name: (config, weights)}` of the `--pretrained` backbones."""
    import keras

    import keras_bert.models  # noqa: F401  (registers the classes to load)

    loaded = {}
    for name, path in pretrained.items():
        model = keras.saving.load_model(path, compile=False)
        backbone = getattr(model, "backbone", model)
        loaded[name] = (backbone.get_config(), backbone.get_weights())
    return loaded


def score(task, model, data):
    """The official dev metric of `model`."""
    from keras_bert.finetuning import metrics

    # One padded shape for every dev batch: one compilation.
    token_ids, outputs = data["dev_token_ids"], []
    rows = -(-len(token_ids) // 256) * 256
    token_ids = np.pad(token_ids, [(0, rows - len(token_ids)), (0, 0)])
    for start in range(0, rows, 256):
        batch = token_ids[start : start + 256]
        inputs = {
            "token_ids": batch,
            "segment_ids": np.zeros_like(batch),
            "padding_mask": batch != 0,
        }
        outputs.append(np.asarray(model.predict_on_batch(inputs)).argmax(-1))
    outputs = np.concatenate(outputs)[: len(data["dev_token_ids"])]
    if task == "sst2":
        return metrics.accuracy(data["dev_labels"].tolist(), outputs.tolist())
    label_names = json.loads(str(data["label_names"]))
    predicted = [
        [label_names[row[p]] if p >= 0 else "O" for p in starts]
        for row, starts in zip(outputs, json.loads(str(data["dev_word_starts"])))
    ]
    return metrics.entity_scores(json.loads(str(data["dev_gold_tags"])), predicted)["f1"]


def finetune(task, data, backbone_config, weights, budget, learning_rate, seed, min_updates):
    """Dev score of one fine-tuning run."""
    import keras

    from keras_bert.models import BertBackbone, BertClassifier, BertTokenClassifier
    from keras_bert.optimization import OptimizerConfig, create_optimizer

    keras.utils.set_random_seed(seed)
    backbone = BertBackbone.from_config({**backbone_config, "dropout": 0.1})
    if weights is not None:
        backbone.set_weights(weights)
    if task == "sst2":
        model = BertClassifier(backbone, num_classes=2, dropout=0.1)
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    else:
        label_names = json.loads(str(data["label_names"]))
        model = BertTokenClassifier(
            backbone, num_labels=len(label_names), dropout=0.1, label_names=label_names
        )
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1)
    labels = data["train_labels"]
    rows = np.random.default_rng(seed).permutation(len(labels))[:budget]
    batches = make_batches(data["train_token_ids"][rows], labels[rows], seed)
    epochs = max(3, math.ceil(min_updates / len(batches)))
    steps = epochs * len(batches)
    config = OptimizerConfig(learning_rate=learning_rate, warmup_steps=int(round(0.1 * steps)))
    model.compile(optimizer=create_optimizer(config, steps), loss=loss)
    model.fit(batches, epochs=epochs, verbose=0)
    return score(task, model, data), steps


def run_key(init, budget, learning_rate, seed):
    return f"{init}|{budget}|{learning_rate:g}|{seed}"


def run(args, pretrained):
    """Fine-tunes every init x budget x rate x seed; returns the records."""
    import keras

    data = dict(np.load(args.data))
    task = str(data["task"])
    results_path = os.path.join(args.out, "results.json")
    records = {}
    if os.path.exists(results_path):
        with open(results_path) as f:
            records = {
                run_key(r["init"], r["budget"], r["learning_rate"], r["seed"]): r
                for r in json.load(f)["runs"]
            }
    backbones = load_backbones(pretrained)
    reference_config = next(iter(backbones.values()))[0] if backbones else None
    if reference_config is None:
        from keras_bert.model_configs import load_model_config

        reference_config = load_model_config(args.random_model)
    inits = {**{name: w for name, (_, w) in backbones.items()}, "random": None}
    print(
        f"run: {task} on {keras.backend.backend()} ({describe_device()}), inits {list(inits)}",
        flush=True,
    )
    budgets = args.budgets or BUDGETS[task]
    for budget in budgets:
        for init, weights in inits.items():
            config = backbones[init][0] if init in backbones else reference_config
            for learning_rate in args.learning_rates:
                for seed in range(args.seeds):
                    key = run_key(init, budget, learning_rate, seed)
                    if key in records:
                        continue
                    start = time.perf_counter()
                    value, steps = finetune(
                        task, data, config, weights, budget, learning_rate, seed, args.min_updates
                    )
                    records[key] = {
                        "init": init,
                        "budget": budget,
                        "learning_rate": learning_rate,
                        "seed": seed,
                        "score": value,
                        "updates": steps,
                        "seconds": round(time.perf_counter() - start, 1),
                    }
                    print("run", json.dumps(records[key]), flush=True)
                    write_json(
                        results_path,
                        {
                            "task": task,
                            "metric": METRIC[task],
                            "device": describe_device(),
                            "backend": keras.backend.backend(),
                            "pretrained": pretrained,
                            "protocol": protocol(args),
                            "runs": list(records.values()),
                        },
                    )
    return task, list(records.values())


def describe_device():
    import keras

    if keras.backend.backend() == "jax":
        import jax

        return ", ".join(sorted({d.device_kind for d in jax.devices()}))
    if keras.backend.backend() == "torch":
        import torch

        return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    import tensorflow as tf

    return "gpu" if tf.config.list_physical_devices("GPU") else "cpu"


def protocol(args):
    return {
        "learning_rates": args.learning_rates,
        "seeds": args.seeds,
        "min_updates": args.min_updates,
        "batch_size": BATCH,
        "epochs": "max(3, min_updates / batches)",
        "dropout": 0.1,
    }


def write_json(path, value):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(value, f, indent=1)
    os.replace(path + ".tmp", path)


# === Report ===


def summarize(records):
    """`{(init, budget): (best rate, mean, std, scores)}`, the rate picked by
    its mean over seeds."""
    by_point = {}
    for r in records:
        by_point.setdefault((r["init"], r["budget"]), {}).setdefault(r["learning_rate"], []).append(
            r["score"]
        )
    summary = {}
    for point, by_rate in by_point.items():
        rate, scores = max(by_rate.items(), key=lambda item: statistics.mean(item[1]))
        summary[point] = (
            rate,
            statistics.mean(scores),
            statistics.stdev(scores) if len(scores) > 1 else 0.0,
            scores,
        )
    return summary


def report(task, records, out, title):
    summary = summarize(records)
    seen = list(dict.fromkeys(init for init, _ in summary))
    pretrained = [init for init in seen if init != "random"]
    inits = pretrained + ["random"] * ("random" in seen)
    budgets = sorted({budget for _, budget in summary})
    scale = 100
    rows = []
    for init in inits:
        cells = []
        for budget in budgets:
            if (init, budget) in summary:
                rate, mean, std, scores = summary[(init, budget)]
                cells.append(
                    f"{scale * mean:.1f} ± {scale * std:.1f} (lr {rate:g}, {len(scores)} seeds)"
                )
            else:
                cells.append("-")
        rows.append([init] + cells)
    if "random" in inits:
        for init in pretrained:
            cells = []
            for budget in budgets:
                if (init, budget) in summary and ("random", budget) in summary:
                    gap = summary[(init, budget)][1] - summary[("random", budget)][1]
                    cells.append(f"{scale * gap:+.1f}")
                else:
                    cells.append("-")
            rows.append([f"{init} − random"] + cells)
    table = markdown_table(["init"] + [f"{b:,} labels" for b in budgets], rows)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(f"{title}: dev {METRIC[task]} (%), mean ± std over seeds\n\n{table}\n")
    print(table, flush=True)
    plot(task, summary, inits, os.path.join(out, "curve.png"), title)


def plot(task, summary, inits, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    for init in inits:
        points = sorted((b, s) for (i, b), s in summary.items() if i == init)
        budgets = [b for b, _ in points]
        means = np.array([100 * s[1] for _, s in points])
        stds = np.array([100 * s[2] for _, s in points])
        axes.errorbar(budgets, means, yerr=stds, marker="o", capsize=3, label=init)
    axes.set_xscale("log")
    budgets = sorted({budget for _, budget in summary})
    axes.set_xticks(budgets, [f"{b:,}" for b in budgets])
    axes.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    axes.set_xlabel(
        "labelled training examples" if task == "sst2" else "labelled training sentences"
    )
    axes.set_ylabel(f"dev {METRIC[task]} (%)")
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"plot: {path}", flush=True)


# === Command line ===


def parse_pretrained(values):
    pretrained = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not os.path.isfile(path):
            sys.exit(f"--pretrained {value!r}: expected NAME=PATH to a .keras file")
        pretrained[name] = os.path.abspath(path)
    return pretrained


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.data_efficiency", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    sub = {name: commands.add_parser(name) for name in ("curve", "text", "dump", "run")}
    for name in ("curve", "text", "dump"):
        sub[name].add_argument("--task", required=True, choices=sorted(BUDGETS))
        sub[name].add_argument("--data_dir", default=DATA, help="../shared/data")
    for name in ("curve", "text", "run"):
        sub[name].add_argument("--out", required=True)
    sub["dump"].add_argument("--out", required=True, help="the .npz to write")
    sub["dump"].add_argument("--vocab", default=VOCAB)
    sub["curve"].add_argument("--pretrain_config", default="own_text")
    sub["curve"].add_argument("--pretrain_set", action="append", default=[], metavar="KEY=VALUE")
    sub["curve"].add_argument(
        "--objectives",
        nargs="+",
        choices=sorted(OBJECTIVES),
        default=[DEFAULT_OBJECTIVE],
        help="pre-train on the task's text with each, one after another, at the "
        "recipe's train_budget_minutes (equal wall time)",
    )
    sub["run"].add_argument("--data", required=True, help="a dump's .npz")
    for name in ("curve", "run"):
        sub[name].add_argument(
            "--pretrained",
            action="append",
            default=[],
            metavar="NAME=PATH",
            help="a backbone to compare (curve: replaces the "
            "in-domain pre-training when named in-domain)",
        )
        sub[name].add_argument("--budgets", type=int, nargs="+")
        sub[name].add_argument("--learning_rates", type=float, nargs="+", default=[3e-4, 1e-3])
        sub[name].add_argument("--seeds", type=int, default=3)
        sub[name].add_argument("--min_updates", type=int, default=300)
        sub[name].add_argument(
            "--random_model",
            default="bert_tiny",
            help="random init's size when no backbone is given",
        )
        sub[name].add_argument("--title", default="")
    args = parser.parse_args()
    if getattr(args, "data_dir", None) and not os.path.isdir(args.data_dir):
        sys.exit(f"shared data not found at {args.data_dir}: nothing measured")

    if args.command == "text":
        write_text(args.task, args.data_dir, args.out)
    elif args.command == "dump":
        dump(args.task, args.data_dir, args.vocab, args.out)
    else:
        pretrained = parse_pretrained(args.pretrained)
        if args.command == "curve":
            if "in-domain" not in pretrained:
                pattern = write_text(args.task, args.data_dir, args.out)
                pretrained = {
                    in_domain(objective): pretrain(
                        pattern, args.out, args.pretrain_config, args.pretrain_set, objective
                    )
                    for objective in args.objectives
                } | pretrained
            args.data = dump(
                args.task, args.data_dir, VOCAB, os.path.join(args.out, f"{args.task}.npz")
            )
        task, records = run(args, pretrained)
        report(task, records, args.out, args.title or f"{task}: pre-trained vs random init")


if __name__ == "__main__":
    main()
