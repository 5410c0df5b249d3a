"""What task distillation buys a BERT-Tiny student: dev score per student
init, loss and transfer set, at each label budget, against the teacher.

    KERAS_BACKEND=jax python -m bench.distillation --task {sst2,conll2003} \
        --teacher_init /tmp/q/minilm.keras --out runs/distill_sst2 \
        [--budgets 1000 all] [--seeds 0 1 2] \
        [--cells random:labels random:logits:labelled random:logits:text \
                 random:logits:text+aug4 random:logits+hidden:text \
                 random:logits:labelled+aug20+tinybert \
                 own_text=runs/own/backbone.keras:logits:text] \
        [--masked_lm runs/pretrain_default/pretrainer.keras] [--student_epochs 3] \
        [--teacher_self_train] [--earlier runs/distill_sst2_t10/results.json] [--report]

For each label budget the teacher (`--teacher_init`, fine-tuned by
`finetune`) is fine-tuned once, seed 0, lr 5e-5, 3 epochs (SST-2 with all
labels: 1), on that budget's labelled sentences: a seeded draw (seed 0)
of the training file, written with the dev file to OUT/data_BUDGET/; the
rest of the training file, labels removed, is OUT/data_BUDGET/
unlabelled.txt (SST-2: a sentence a line; CoNLL-2003: a sentence's words;
none at budget `all`). `--teacher_self_train`: that teacher (then
OUT/teacher_BUDGET_tuned) is distilled into `--teacher_init` itself on the
labelled and unlabelled sentences (`distill`, 1 epoch at lr 5e-5, seed 0,
no copies), and the students learn from that. A cell is INIT:LOSS[:TRANSFER]:

    INIT      random (random:bert_tiny, the uncased BERT vocabulary), or
              NAME=PATH (a backbone .keras)
    LOSS      labels: `finetune` on the labelled sentences (no teacher);
              logits: `distill` from the budget's teacher; logits+hidden,
              logits+attention, logits+hidden+attention: with those
              intermediate losses, each at weight 1
              (`distillation.intermediate.*`; attention needs as many
              heads in the student as in the teacher)
    TRANSFER  labelled (the labelled sentences only) or text (+ the rest
              of the training sentences, unlabelled); then +augK for K
              augmented copies of each (`distillation.transfer.copies=K`:
              words masked, n-grams kept), +augK+neighbours with words
              also replaced by the teacher's vocabulary neighbours with
              probability 0.1, Tang et al.'s rate, +augK+tinybert with
              TinyBERT's replacement at its published rates (a word
              replaced with probability 0.4 by the `--masked_lm`'s
              predictions or the teacher's neighbours; no masking, no
              n-grams), +augK+tinybert_released as TinyBERT's released
              code does it: content words only, each predicted in its
              sentence as it came (`replace_words=content`,
              `masked_lm_context=sentence`)

The copies are the cell's data, drawn with seed 0 whatever the student's
seed (`distillation.transfer.seed=0`), so that the students of all seeds
learn one labelling.
A cell's student takes up the labelled transfer set of an earlier cell of
the same budget and TRANSFER (copied into its folder; the labelling's own
check keeps it only if teacher, sentences and settings match): a set
without copies is labelled once for every init, loss and seed.

Every student: batch 32, learning rate `--learning_rate`,
`--student_epochs` epochs (of the transfer set, distilling), the
fine-tuning recipe otherwise, seeds `--seeds` fixed before the run.
OUT/results.json (each run appended as it ends, with the processor it ran
on; a rerun skips what is done, and a cell stopped mid-run resumes: its
labelling at the first shard not written, its student at its last
checkpoint; a run resumed on another processor is recorded as `A, then
B`, from OUT/processors.json, and its minutes in the table are marked
as no one processor's) and OUT/table.md (mean ± std per cell and budget, the
teacher's score in the table, the labelling + training minutes),
OUT/students.png (the same, plotted; `--earlier` adds another OUT's
students of the same task and teacher recipe, read only) and OUT/sizes.png (the learning
curve: each init, loss and way of augmenting, its student score against
its transfer set's size; both need matplotlib, requirements-bench.txt). Never run by the
test suite.
"""

import argparse
import csv
import json
import os
import re
import shutil
import statistics
import time

import numpy as np

from bench.common import DATA, VOCAB, markdown_table, processor
from keras_bert.distillation.transfer_set import MANIFEST, SHARDS, TRANSFER_SET
from keras_bert.finetuning.batch_prediction import take_limit

METRIC = {"sst2": "accuracy", "conll2003": "f1"}
SEQ_LEN = {"sst2": 64, "conll2003": 128}
DATA_SEED = 0


def budget_data(task, data_dir, budget, out):
    """OUT/data_BUDGET/ with the budget's labelled training file, the dev
    file, and unlabelled.txt (the rest of the training sentences) or None."""
    folder = os.path.join(out, f"data_{budget}")
    unlabelled = os.path.join(folder, "unlabelled.txt")
    limit = None if budget == "all" else int(budget)
    if task == "sst2" and not os.path.isdir(os.path.join(folder, "SST-2")):
        _glue_data(os.path.join(data_dir, "glue", "SST-2"), os.path.join(folder, "SST-2"), limit)
    if task == "conll2003" and not os.path.isdir(folder):
        _conll_data(os.path.join(data_dir, "conll2003"), folder, limit)
    return folder, unlabelled if os.path.exists(unlabelled) else None


def _glue_data(source, target, limit):
    with open(os.path.join(source, "train.tsv"), encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    header, rows = rows[0], rows[1:]
    chosen = set(take_limit(list(range(len(rows))), limit, DATA_SEED))
    os.makedirs(target)
    with open(os.path.join(target, "train.tsv"), "w", encoding="utf-8") as f:
        f.write("".join("\t".join(r) + "\n" for r in [header] + [rows[i] for i in sorted(chosen)]))
    _write_unlabelled(
        os.path.dirname(target), [r[0] for i, r in enumerate(rows) if i not in chosen]
    )
    shutil.copy(os.path.join(source, "dev.tsv"), os.path.join(target, "dev.tsv"))


def _conll_data(source, target, limit):
    """The drawn sentences as `word tag` lines; the rest, unlabelled, their
    words a line."""
    from pipelines.tasks.conll import read_conll

    sentences = read_conll(os.path.join(source, "train.txt"))
    chosen = set(take_limit(list(range(len(sentences))), limit, DATA_SEED))
    os.makedirs(target)
    with open(os.path.join(target, "train.txt"), "w", encoding="utf-8") as f:
        for i in sorted(chosen):
            words = sentences[i].words
            f.write("".join(f"{w} {t}\n" for w, t in zip(words, sentences[i].tags)) + "\n")
    rest = [" ".join(s.words) for i, s in enumerate(sentences) if i not in chosen]
    _write_unlabelled(target, rest)
    shutil.copy(os.path.join(source, "valid.txt"), os.path.join(target, "valid.txt"))


def _write_unlabelled(folder, sentences):
    if sentences:
        with open(os.path.join(folder, "unlabelled.txt"), "w", encoding="utf-8") as f:
            f.write("".join(s + "\n" for s in sentences))


def parse_cell(text, masked_lm=None):
    parts = text.split(":")
    init = parts[0]
    loss, *intermediate = parts[1].split("+")
    transfer = parts[2] if len(parts) > 2 else None
    source, *augmentation = (transfer or "labelled").split("+")
    if (
        loss not in ("labels", "logits")
        or (loss == "logits") != (transfer is not None)
        or not set(intermediate) <= {"hidden", "attention"}
        or (intermediate and loss != "logits")
        or source not in ("labelled", "text")
        or not re.fullmatch(
            r"(aug\d+(\+(neighbours|tinybert|tinybert_released))?)?", "+".join(augmentation)
        )
    ):
        raise SystemExit(
            f"--cells {text}: INIT:labels or INIT:logits[+hidden][+attention]:"
            "(labelled|text)[+augK[+neighbours|+tinybert|+tinybert_released]]"
        )
    tinybert = {"tinybert", "tinybert_released"} & set(augmentation)
    if tinybert and not masked_lm:
        raise SystemExit(f"--cells {text}: +{tinybert.pop()} needs --masked_lm")
    copies = int(augmentation[0][3:]) if augmentation else 0
    replacement = []
    if "neighbours" in augmentation:
        replacement = ["replace_probability=0.1", "replace_by=teacher_neighbours"]
    if tinybert:
        replacement = ["replace_probability=0.4", "mask_probability=0", "ngram_probability=0"]
        replacement += ["replace_by=masked_lm_and_neighbours", f"masked_lm={masked_lm}"]
    if "tinybert_released" in augmentation:
        replacement += ["replace_words=content", "masked_lm_context=sentence"]
    path = "random:bert_tiny" if init == "random" else init.split("=", 1)[1]
    name = init.split("=", 1)[0]
    return {
        "cell": text,
        "init": name,
        "checkpoint": path,
        "loss": loss,
        "intermediate": [f"distillation.intermediate.{i}_weight=1" for i in intermediate],
        "transfer": transfer,
        "text": source == "text",
        "transfer_overrides": [
            # The bench measures what a labelling costs, however long.
            f"distillation.transfer.{o}"
            for o in [f"copies={copies}", f"seed={DATA_SEED}", "max_labelling_hours=.inf"]
            + replacement
        ],
    }


def earlier_labelling_run(records, out, budget, cell, masked_lm):
    """The run folder of an earlier cell of `budget` whose transfer set is
    `cell`'s, labelled, or None when none is."""
    for record in records:
        if record["budget"] != budget or record["cell"] == "teacher":
            continue
        earlier = parse_cell(record["cell"], masked_lm)
        folder = run_folder(out, budget, record["cell"], record["seed"])
        if earlier["transfer"] == cell["transfer"] and os.path.isdir(
            os.path.join(folder, TRANSFER_SET)
        ):
            return folder
    return None


def shard_records(model_dir):
    """The transfer-set manifest's record of each shard in `model_dir`, by
    name: its size, hash and the seconds its labelling took."""
    path = os.path.join(model_dir, TRANSFER_SET, MANIFEST)
    return json.load(open(path))[SHARDS] if os.path.exists(path) else {}


def run_processors(out, name):
    """The processors run `name` of OUT ran on, in order: this machine's is
    added to OUT/processors.json as the run starts or resumes, so that a
    run stopped and resumed elsewhere (sessions change machines) says its
    time is no one processor's."""
    path = os.path.join(out, "processors.json")
    sessions = json.load(open(path)) if os.path.exists(path) else {}
    ran_on, here = sessions.setdefault(name, []), processor()
    if here not in ran_on:
        ran_on.append(here)
        with open(path + ".tmp", "w") as f:
            json.dump(sessions, f, indent=1)
        os.replace(path + ".tmp", path)
    return ", then ".join(ran_on)


def run_folder(out, budget, cell, seed):
    return os.path.join(out, f"{budget}_{cell.replace('/', '_')}_{seed}")


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.distillation", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--task", default="sst2", choices=sorted(METRIC))
    parser.add_argument("--data_dir", default=DATA, help="../shared/data")
    parser.add_argument("--teacher_init", required=True, help="the teacher's backbone (.keras)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--budgets", nargs="+", default=["1000", "all"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--cells",
        nargs="+",
        default=["random:labels", "random:logits:labelled", "random:logits:text"],
    )
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--student_epochs", type=int, default=3)
    parser.add_argument(
        "--masked_lm", help="+tinybert's masked LM: a pretrainer.keras (`make pretrain`'s)"
    )
    parser.add_argument(
        "--max_seq_length", type=int, help="default: 64 for sst2, 128 for conll2003"
    )
    parser.add_argument("--teacher_set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--teacher_self_train",
        action="store_true",
        help="distil the fine-tuned teacher into --teacher_init on the budget's sentences first",
    )
    parser.add_argument(
        "--earlier",
        action="append",
        default=[],
        metavar="RESULTS_JSON",
        help="another OUT's results.json, of the same task and teacher recipe: its students "
        "of --cells are reported with these (table, plots) and not run again",
    )
    parser.add_argument(
        "--report", action="store_true", help="write the table and plots of what is done; run none"
    )
    args = parser.parse_args()

    from keras_bert.distillation.runner import run_distillation
    from keras_bert.finetuning.runner import run_finetune

    os.makedirs(args.out, exist_ok=True)
    results_path = os.path.join(args.out, "results.json")
    records = json.load(open(results_path)) if os.path.exists(results_path) else []
    earlier = [r for path in args.earlier for r in json.load(open(path)) if r["cell"] != "teacher"]
    done = {(r["budget"], r["cell"], r["seed"]) for r in records + earlier}
    seq_len = args.max_seq_length or SEQ_LEN[args.task]
    common = [f"data.max_seq_length={seq_len}", "training.verbose=2"]
    common += ["export.enabled=false"]

    def record(budget, cell, seed, results, seconds, ran_on):
        records.append(
            {
                "budget": budget,
                "cell": cell,
                "seed": seed,
                "seconds": round(seconds),
                "processor": ran_on,
                **results,
            }
        )
        with open(results_path + ".tmp", "w") as f:
            json.dump(records, f, indent=1)
        os.replace(results_path + ".tmp", results_path)
        print(f"{budget} {cell} seed {seed}: {results[METRIC[args.task]]:.4f}", flush=True)

    for budget in [] if args.report else args.budgets:
        data, unlabelled = budget_data(args.task, args.data_dir, budget, args.out)
        teacher = os.path.join(args.out, f"teacher_{budget}")
        if (budget, "teacher", 0) not in done:
            ran_on = run_processors(args.out, os.path.basename(teacher))
            start = time.time()
            epochs = "1" if budget == "all" and args.task == "sst2" else "3"
            tuned = teacher + "_tuned" if args.teacher_self_train else teacher
            results = run_finetune(
                args.task,
                data,
                args.teacher_init,
                tuned,
                overrides=common
                + ["optimizer.learning_rate=5e-5", f"training.epochs={epochs}"]
                + args.teacher_set,
            )
            if args.teacher_self_train:
                before = results[METRIC[args.task]]
                print(f"{budget} teacher before self-training: {before:.4f}")
                results = run_distillation(
                    tuned,
                    args.teacher_init,
                    teacher,
                    data_dir=data,
                    text_files=[unlabelled] if unlabelled else [],
                    overrides=common
                    + ["optimizer.learning_rate=5e-5", "training.epochs=1", "training.seed=0"]
                    + ["distillation.transfer.max_labelling_hours=.inf"],
                )
                results["before_self_training"] = before
            record(budget, "teacher", 0, results, time.time() - start, ran_on)
        for text in args.cells:
            cell = parse_cell(text, args.masked_lm)
            for seed in args.seeds:
                if (budget, text, seed) in done:
                    continue
                model_dir = run_folder(args.out, budget, text, seed)
                ran_on = run_processors(args.out, os.path.basename(model_dir))
                overrides = common + [
                    f"optimizer.learning_rate={args.learning_rate}",
                    f"training.seed={seed}",
                    f"training.epochs={args.student_epochs}",
                ]
                start = time.time()
                # Random weights carry no vocabulary: the teacher's (uncased BERT's).
                vocab = VOCAB if cell["checkpoint"].startswith("random:") else None
                if cell["loss"] == "labels":
                    results = run_finetune(
                        args.task, data, cell["checkpoint"], model_dir, vocab, overrides=overrides
                    )
                else:
                    if cell["text"] and unlabelled is None:
                        continue  # Budget `all`: no unlabelled sentences.
                    labelled_by = earlier_labelling_run(
                        records, args.out, budget, cell, args.masked_lm
                    )
                    if labelled_by and not os.path.exists(model_dir):
                        shutil.copytree(
                            os.path.join(labelled_by, TRANSFER_SET),
                            os.path.join(model_dir, TRANSFER_SET),
                        )
                    results = run_distillation(
                        teacher,
                        cell["checkpoint"],
                        model_dir,
                        data_dir=data,
                        text_files=[unlabelled] if cell["text"] else [],
                        vocab=vocab,
                        overrides=overrides + cell["intermediate"] + cell["transfer_overrides"],
                    )
                    # What this cell paid (a stopped run's resumed too): a
                    # shard taken up, before a stop or now, was paid for by
                    # the run that labelled it.
                    taken_up = shard_records(labelled_by) if labelled_by else {}
                    paid = shard_records(model_dir).items()
                    results["labelling_seconds"] = round(
                        sum(r.get("seconds", 0.0) for name, r in paid if taken_up.get(name) != r), 1
                    )
                record(budget, text, seed, results, time.time() - start, ran_on)
    write_table(args, records + earlier)


def write_table(args, records):
    metric = METRIC[args.task]
    rows = []
    for cell in ["teacher"] + args.cells:
        row = [short_name(cell)]
        for budget in args.budgets:
            runs = [r for r in records if r["budget"] == budget and r["cell"] == cell]
            scores = [100 * r[metric] for r in runs]
            if not scores:
                row.append("—")
                continue
            # Labelling: what labelling the set once cost, over the runs
            # that labelled it (those that took it up paid nothing);
            # training: over every run.
            labelled = [r["labelling_seconds"] / 60 for r in runs if r.get("labelling_seconds")]
            labelling = statistics.mean(labelled) if labelled else 0
            training = statistics.mean(r["train_seconds"] / 60 for r in runs)
            spread = f" ± {statistics.stdev(scores):.2f}" if len(scores) > 1 else ""
            mixed = (
                ", a run's on two processors"
                if any(", then " in r.get("processor", "") for r in runs)
                else ""
            )
            row.append(
                f"{statistics.mean(scores):.2f}{spread} (n={len(scores)}, "
                f"{labelling:.0f} + {training:.0f} min{mixed})"
            )
        rows.append(row)
    table = markdown_table(["cell"] + [f"{b} labels" for b in args.budgets], rows)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(table + "\n")
    print(table)
    plot(args, records, os.path.join(args.out, "students.png"))
    plot_sizes(args, records, os.path.join(args.out, "sizes.png"))


def short_name(cell):
    """A cell as tables and plots show it: NAME=PATH's init as NAME."""
    init, colon, rest = cell.partition(":")
    return init.split("=", 1)[0] + colon + rest


def plot(args, records, path):
    """One panel per budget: each cell's mean score (error bar: the
    std over seeds, dots: the seeds) against the teacher's, dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = METRIC[args.task]
    figure, panels = plt.subplots(
        1, len(args.budgets), figsize=(6 * len(args.budgets), 0.5 * len(args.cells) + 1.6)
    )
    for axes, budget in zip(list(np.atleast_1d(panels)), args.budgets):
        for row, cell in enumerate(args.cells):
            scores = [
                100 * r[metric] for r in records if r["budget"] == budget and r["cell"] == cell
            ]
            if scores:
                spread = statistics.stdev(scores) if len(scores) > 1 else 0
                axes.errorbar(statistics.mean(scores), row, xerr=spread, fmt="o", capsize=3)
                axes.plot(scores, [row] * len(scores), ".", color="grey")
        teacher = [
            100 * r[metric] for r in records if r["budget"] == budget and r["cell"] == "teacher"
        ]
        if teacher:
            axes.axvline(teacher[0], linestyle="--", color="black", label="teacher")
            axes.legend(loc="best", fontsize=8)
        axes.set_yticks(range(len(args.cells)), [short_name(c) for c in args.cells], fontsize=8)
        axes.set_ylim(len(args.cells) - 0.5, -0.5)  # The first cell on top.
        axes.set_xlabel(f"dev {metric} (%)")
        axes.set_title(f"{args.task}, {budget} labels", fontsize=10)
        axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"plot: {path}", flush=True)


def plot_sizes(args, records, path):
    """The learning curve: one panel per budget, each INIT:LOSS and way of
    augmenting (`+tinybert`, ...) a curve of its mean score (the std over
    seeds as error bars) against its cells' transfer set sizes, in
    sentences, on a log scale, from the INIT:LOSS's cell without copies
    where there is one; the teacher dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = METRIC[args.task]
    figure, panels = plt.subplots(1, len(args.budgets), figsize=(6 * len(args.budgets), 4))
    for axes, budget in zip(list(np.atleast_1d(panels)), args.budgets):
        curves, unaugmented = {}, {}
        for cell in args.cells:
            runs = [r for r in records if r["budget"] == budget and r["cell"] == cell]
            if runs:
                scores = [100 * r[metric] for r in runs]
                spread = statistics.stdev(scores) if len(scores) > 1 else 0
                point = (runs[0]["train_examples"], statistics.mean(scores), spread)
                init, loss, transfer = (short_name(cell).split(":") + [""])[:3]
                if "+aug" in transfer:
                    augmenting = "".join(f"+{w}" for w in transfer.split("+")[2:])  # After augK.
                    curves.setdefault((f"{init}:{loss}", augmenting), []).append(point)
                else:
                    unaugmented[f"{init}:{loss}"] = point
        for init_and_loss, point in unaugmented.items():
            starts = [curve for curve in curves if curve[0] == init_and_loss]
            for curve in starts or [(init_and_loss, "")]:
                curves.setdefault(curve, []).append(point)
        for (init_and_loss, augmenting), points in curves.items():
            name = init_and_loss + augmenting
            sizes, means, spreads = zip(*sorted(points))
            axes.errorbar(sizes, means, yerr=spreads, marker="o", capsize=3, label=name)
        teacher = [
            100 * r[metric] for r in records if r["budget"] == budget and r["cell"] == "teacher"
        ]
        if teacher:
            axes.axhline(teacher[0], linestyle="--", color="black", label="teacher")
        axes.set_xscale("log")
        axes.set_xlabel("transfer set (sentences)")
        axes.set_ylabel(f"dev {metric} (%)")
        axes.set_title(f"{args.task}, {budget} labels", fontsize=10)
        axes.legend(loc="best", fontsize=8)
        axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"plot: {path}", flush=True)


if __name__ == "__main__":
    main()
