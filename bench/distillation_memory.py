"""Peak memory of `distill` against the transfer set's size (issue 79,
item 1): the augmented copies are made a shard at a time as the teacher
labels them, and the student reads the shards from disk, so the peak
resident memory should not grow with `distillation.transfer.copies`.

    # A teacher: any fine-tuned sentence run; here BERT-Tiny on the SST-2
    # 1,000-label cell's files (bench/distillation.py writes them), fast
    # to label with, as the memory does not depend on the teacher's size.
    python -m keras_bert.finetune --task sst2 --data_dir runs/mem/data \
        --init_checkpoint random:bert_tiny \
        --vocab ../shared/data/vocab/bert_uncased_vocab.txt \
        --model_dir runs/mem/teacher --set data.max_seq_length=64 \
        --set export.enabled=false
    KERAS_BACKEND=jax python -m bench.distillation_memory \
        --teacher runs/mem/teacher --text runs/mem/data/unlabelled.txt \
        --vocab ../shared/data/vocab/bert_uncased_vocab.txt \
        --copies 0 9 19 --out runs/mem

Each size is one `python -m keras_bert.distill` in its own process, into
its own folder, labelling the whole set and training `--epochs` of it
(a share of an epoch: the pipeline's buffers fill within it); its peak
resident set size is the kernel's (`os.wait4`). Writes
`<out>/memory.json`: a row a size (sentences, peak MiB, labelling and
whole-run seconds) and each peak over the smallest's. The seconds are
the run's, on whatever else the machine did: memory is the measure here.
Never run by the test suite.
"""

import argparse
import json
import os
import subprocess
import sys
import time


def distill(args, copies, model_dir):
    """Runs one distillation; returns `(results, peak RSS in MiB, seconds)`."""
    command = [sys.executable, "-m", "keras_bert.distill", "--teacher", args.teacher]
    command += ["--init_checkpoint", args.init_checkpoint, "--model_dir", model_dir]
    command += ["--text", args.text]
    if args.vocab:
        command += ["--vocab", args.vocab]
    for item in (
        f"distillation.transfer.copies={copies}",
        "distillation.transfer.max_labelling_hours=.inf",
        f"training.epochs={args.epochs}",
        "training.verbose=0",
        "export.enabled=false",
    ):
        command += ["--set", item]
    start = time.time()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    # Read to the end before waiting: the results are its standard output.
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(command)}: exit {os.waitstatus_to_exitcode(status)}")
    return json.loads(output), usage.ru_maxrss / 1024, time.time() - start


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.distillation_memory", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--teacher", required=True, help="a fine-tuned run folder")
    parser.add_argument("--init_checkpoint", default="random:bert_tiny", help="the student")
    parser.add_argument("--vocab", help="the student's vocabulary (a random:... student's)")
    parser.add_argument("--text", required=True, help="unlabelled text, a sentence a line")
    parser.add_argument("--copies", type=int, nargs="+", default=[0, 9, 19])
    parser.add_argument("--epochs", type=float, default=0.02)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    rows = []
    for copies in args.copies:
        results, peak_mib, seconds = distill(
            args, copies, os.path.join(args.out, f"copies_{copies}")
        )
        rows.append(
            {
                "copies": copies,
                "sentences": results["train_examples"],
                "peak_rss_mib": round(peak_mib, 1),
                "labelling_seconds": results["labelling_seconds"],
                "seconds": round(seconds, 1),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    smallest = rows[0]["peak_rss_mib"]
    for row in rows:
        row["peak_over_smallest"] = round(row["peak_rss_mib"] / smallest, 3)
    with open(os.path.join(args.out, "memory.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
