"""Held-out learning curves: our `BertPretrainer` against Hugging Face's
`BertForPreTraining`, trained on identical batches with one recipe.

    KERAS_BACKEND=jax python -m bench.learning_curve \
        --config budget --steps 1500 --eval_every 100 --out runs/curve \
        [--set key=value ...] [--bench_python .venv-bench/bin/python]

1. Dumps `--steps` training batches of the config's first phase and
   `eval_steps` held-out batches from `pipelines.pretraining_dataset` to
   `<out>/batches.npz` (uint16 ids, uint8 flags: 13 MB for 1,500 batches of
   32 x 128), so both models see exactly the same sequences and masks.
2. Trains keras_bert on them in this process (any Keras backend) with the
   config's optimizer and schedule, evaluating the held-out batches every
   `--eval_every` updates.
3. Trains `BertForPreTraining` (torch, in the benchmark-only virtualenv of
   `--bench_python`; see bench/README.md) on the same arrays: the same sizes,
   dropout, initialiser scale, AdamW (decoupled decay, LayerNorm and biases
   excluded), global-norm clipping, warmup + linear decay, and the same loss
   (masked-LM cross-entropy averaged over the real predictions, plus the
   next-sentence cross-entropy).
4. Writes `<out>/curves.json` and prints the two curves side by side.

They must agree within noise (different initial weights and dropout draws);
a gap means the training stack changed what it computes. `--batches FILE`
reuses a dump, e.g. on a machine without TensorFlow. Never run by tests.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

from bench.common import ROOT, add_bench_python, markdown_table, run_json

FIELDS = (
    "token_ids",
    "segment_ids",
    "padding_mask",
    "mask_positions",
    "mlm_labels",
    "mlm_weights",
    "nsp_labels",
)


def compact_batches(dataset, count):
    """`count` batches of a pre-training dataset (Keras form), concatenated
    per field: (N, T) / (N, P) / (N,), uint16 ids and uint8 flags."""
    rows = {field: [] for field in FIELDS}
    for x, y, w in dataset.take(count):
        for field, value in (
            ("token_ids", x["token_ids"]),
            ("segment_ids", x["segment_ids"]),
            ("padding_mask", x["padding_mask"]),
            ("mask_positions", x["mask_positions"]),
            ("mlm_labels", y["mlm"]),
            ("mlm_weights", w["mlm"]),
            ("nsp_labels", y["nsp"]),
        ):
            rows[field].append(np.asarray(value))
    return {
        field: np.concatenate(parts).astype(
            "uint16" if field in ("token_ids", "mask_positions", "mlm_labels") else "uint8"
        )
        for field, parts in rows.items()
    }


def dump_batches(config, steps, path):
    """`steps` training batches and `config.eval_steps` held-out batches of
    phase 0, as compact arrays."""
    from keras_bert.pretraining import build_pretraining

    pretraining = build_pretraining(config)
    phase = pretraining.phases[0].config
    arrays = {}
    for name, (dataset, count) in {
        "train": (pretraining.phases[0].dataset(), steps),
        "eval": (pretraining.eval_dataset(0), config.eval_steps),
    }.items():
        arrays.update(
            {f"{name}_{field}": value for field, value in compact_batches(dataset, count).items()}
        )
    arrays["batch_size"] = np.array(phase.batch_size)
    np.savez_compressed(path, **arrays)


def load_batches(path, name):
    data = np.load(path)
    return {field: data[f"{name}_{field}"].astype("int32") for field in FIELDS}, int(
        data["batch_size"]
    )


def keras_inputs(arrays):
    x = {key: arrays[key] for key in ("token_ids", "segment_ids", "padding_mask", "mask_positions")}
    y = {"mlm": arrays["mlm_labels"], "nsp": arrays["nsp_labels"]}
    w = {
        "mlm": arrays["mlm_weights"].astype("float32"),
        "nsp": np.ones(len(arrays["nsp_labels"]), "float32"),
    }
    return x, y, w


def held_out_curve(model, batches, steps, eval_every, label, targets_as_inputs=False):
    """Trains a compiled pretrainer on the dumped training batches,
    `eval_every` updates at a time, scoring the held-out batches after
    each: [(step, held-out mlm accuracy, mlm loss, s)].
    `targets_as_inputs`: a sampled-softmax `BertPretrainer`, whose training
    step reads its targets as inputs (and every label is 0)."""
    train, batch_size = load_batches(batches, "train")
    held_out, _ = load_batches(batches, "eval")
    x, y, w = keras_inputs(train)
    ex, ey, ew = keras_inputs(held_out)
    if targets_as_inputs:
        x = dict(x, masked_lm_ids=y["mlm"], masked_lm_weights=w["mlm"])
        y = dict(y, mlm=np.zeros_like(y["mlm"]))
    curve, start = [], time.perf_counter()
    for first in range(0, steps, eval_every):
        window = slice(first * batch_size, (first + eval_every) * batch_size)
        x_window, y_window, w_window = (
            {k: v[window] for k, v in part.items()} for part in (x, y, w)
        )
        model.fit(
            x_window,
            y_window,
            sample_weight=w_window,
            batch_size=batch_size,
            epochs=1,
            shuffle=False,
            verbose=0,
        )
        metrics = model.evaluate(
            ex, ey, sample_weight=ew, batch_size=batch_size, return_dict=True, verbose=0
        )
        curve.append(
            (
                first + eval_every,
                float(metrics["mlm_accuracy"]),
                float(metrics["mlm_loss"]),
                time.perf_counter() - start,
            )
        )
        print(label, curve[-1], flush=True)
    return curve


def train_ours(config, batches, steps, eval_every):
    """Curve of keras_bert: [(step, held-out mlm accuracy, mlm loss, s)]."""
    import keras

    from keras_bert.pretraining import build_pretraining

    keras.utils.set_random_seed(config.data.seed)
    model = build_pretraining(config).model
    return held_out_curve(model, batches, steps, eval_every, "ours")


def train_hugging_face(recipe, batches, steps, eval_every):
    """The same curve for transformers' `BertForPreTraining` (torch)."""
    import torch
    from transformers import BertConfig, BertForPreTraining

    torch.manual_seed(recipe["seed"])
    model_args, optim = recipe["model"], recipe["optimizer"]
    model = BertForPreTraining(
        BertConfig(
            vocab_size=model_args["vocabulary_size"],
            hidden_size=model_args["hidden_dim"],
            num_hidden_layers=model_args["num_layers"],
            num_attention_heads=model_args["num_heads"],
            intermediate_size=model_args["intermediate_dim"],
            hidden_act={"gelu": "gelu", "gelu_approximate": "gelu_new"}[
                model_args.get("hidden_activation", "gelu")
            ],
            hidden_dropout_prob=model_args.get("dropout", 0.1),
            attention_probs_dropout_prob=model_args.get("dropout", 0.1),
            max_position_embeddings=model_args.get("max_sequence_length", 512),
            layer_norm_eps=model_args.get("layer_norm_epsilon", 1e-12),
            initializer_range=0.02,
        )
    )
    excluded = tuple(optim["exclude_from_weight_decay"])
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        leaf = name.split(".")[-1]
        is_layer_norm = "LayerNorm" in name
        (no_decay if is_layer_norm or (leaf == "bias" and "bias" in excluded) else decay).append(
            parameter
        )
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": optim["weight_decay"]},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=optim["learning_rate"],
        betas=(optim["beta_1"], optim["beta_2"]),
        eps=optim["epsilon"],
    )
    warmup, total = optim["warmup_steps"], recipe["train_steps"]
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda u: (
            u / max(warmup, 1) if u < warmup else max(0.0, (total - u) / max(total - warmup, 1))
        ),
    )
    train, batch_size = load_batches(batches, "train")
    held_out, _ = load_batches(batches, "eval")

    def losses(arrays, rows):
        t = {k: torch.from_numpy(v[rows]).long() for k, v in arrays.items()}
        bert = model.bert(
            input_ids=t["token_ids"],
            token_type_ids=t["segment_ids"],
            attention_mask=t["padding_mask"],
        )
        hidden = torch.gather(
            bert.last_hidden_state,
            1,
            t["mask_positions"][:, :, None].expand(-1, -1, bert.last_hidden_state.shape[-1]),
        )
        logits = model.cls.predictions(hidden)  # (B, P, V)
        weights = t["mlm_weights"].float()
        ce = torch.nn.functional.cross_entropy(
            logits.transpose(1, 2), t["mlm_labels"], reduction="none"
        )
        mlm = (ce * weights).sum() / weights.sum()
        nsp = torch.nn.functional.cross_entropy(
            model.cls.seq_relationship(bert.pooler_output), t["nsp_labels"]
        )
        correct = ((logits.argmax(-1) == t["mlm_labels"]).float() * weights).sum()
        return mlm, nsp, correct, weights.sum()

    curve, start = [], time.perf_counter()
    for step in range(steps):
        model.train()
        rows = slice(step * batch_size, (step + 1) * batch_size)
        mlm, nsp, _, _ = losses(train, rows)
        optimizer.zero_grad(set_to_none=True)
        (mlm + nsp).backward()
        if optim.get("global_clipnorm"):
            torch.nn.utils.clip_grad_norm_(model.parameters(), optim["global_clipnorm"])
        optimizer.step()
        schedule.step()
        if (step + 1) % eval_every == 0:
            model.eval()
            totals = np.zeros(3)
            with torch.no_grad():
                for first in range(0, len(held_out["nsp_labels"]), batch_size):
                    mlm, _, correct, count = losses(held_out, slice(first, first + batch_size))
                    totals += [float(mlm) * float(count), float(correct), float(count)]
            curve.append(
                (
                    step + 1,
                    totals[1] / totals[2],
                    totals[0] / totals[2],
                    time.perf_counter() - start,
                )
            )
            print("hugging_face", curve[-1], flush=True)
    return curve


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.learning_curve", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--config", default="budget")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--eval_every", type=int, default=100)
    parser.add_argument("--out", default=os.path.join(ROOT, "runs", "learning_curve"))
    parser.add_argument("--batches", help="reuse a batches.npz dump")
    add_bench_python(parser)
    parser.add_argument("--only", choices=("ours", "hugging_face"))
    parser.add_argument("--recipe", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.only == "hugging_face":  # the worker in the bench venv
        import torch

        torch.set_num_threads(os.cpu_count())
        with open(args.recipe) as f:
            recipe = json.load(f)
        print(json.dumps(train_hugging_face(recipe, args.batches, args.steps, args.eval_every)))
        return

    from keras_bert.model_configs import load_model_config
    from keras_bert.pretraining import load_pretraining_config

    # One phase (the config's first) whose schedule spans the curve's steps.
    config = load_pretraining_config(args.config, args.set)
    first = dict(config.to_dict()["phases"][0], steps=args.steps, fraction=None)
    config = load_pretraining_config(
        args.config, args.set + [f"train_steps={args.steps}", f"phases=[{json.dumps(first)}]"]
    )
    os.makedirs(args.out, exist_ok=True)
    batches = args.batches or os.path.join(args.out, "batches.npz")
    if not args.batches:
        dump_batches(config, args.steps, batches)
    curves = {}
    if args.only != "hugging_face":
        curves["keras_bert"] = train_ours(config, batches, args.steps, args.eval_every)
    if args.only is None and os.path.exists(args.bench_python):
        model = load_model_config(config.model)
        model.update(config.model_overrides)
        recipe = {
            "model": model,
            "optimizer": config.to_dict()["optimizer"],
            "train_steps": args.steps,
            "seed": config.data.seed,
        }
        recipe_path = os.path.join(args.out, "recipe.json")
        with open(recipe_path, "w") as f:
            json.dump(recipe, f)
        curves["hugging_face"] = run_json(
            args.bench_python,
            "bench.learning_curve",
            "--only",
            "hugging_face",
            "--recipe",
            recipe_path,
            "--batches",
            batches,
            "--steps",
            args.steps,
            "--eval_every",
            args.eval_every,
        )
    elif args.only is None:
        print(f"(no {args.bench_python}: Hugging Face curve skipped)", file=sys.stderr)
    with open(os.path.join(args.out, "curves.json"), "w") as f:
        json.dump(curves, f, indent=1)
    names = list(curves)
    print(
        "\n"
        + markdown_table(
            ["step"] + [f"{n}: held-out MLM accuracy / loss" for n in names],
            [
                [rows[0][0]] + [f"{acc:.2%} / {loss:.3f}" for _, acc, loss, _ in rows]
                for rows in zip(*(curves[n] for n in names))
            ],
        )
    )


if __name__ == "__main__":
    main()
