"""How fast a teacher labels a transfer set: its sentences in their order
against shortest first (what `distill` does a shard at a time), side by
side in one process.

    KERAS_BACKEND=jax python -m bench.distillation_labelling \
        --teacher runs/distill_sst2_t10/teacher_1000 \
        --sentences runs/distill_sst2_t10/data_1000/unlabelled.txt \
        [--count 1536] [--batch_size 64] [--rounds 3]

`--teacher`: a fine-tuning run folder (a sentence task); `--sentences`: a
sentence a line. A warm-up pass of each order first (tracing, JAX's
compilation per padded length), then `--rounds` alternating rounds; the
best round of each, in sentences a second, and their ratio. Never run by
the test suite.
"""

import argparse
import time

from keras_bert.distillation.teacher import Teacher
from keras_bert.distillation.transfer_set import text_length


def sentences_per_second(teacher, rows, batch_size):
    start = time.perf_counter()
    for _ in teacher.batch_outputs(rows, batch_size):
        pass
    return len(rows) / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.distillation_labelling", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--teacher", required=True, help="a fine-tuning run folder")
    parser.add_argument("--sentences", required=True, help="a sentence a line")
    parser.add_argument("--count", type=int, default=1536, help="the first COUNT lines")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    teacher = Teacher(args.teacher)
    with open(args.sentences, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()][: args.count]
    rows = [{"text_a": line, "text_b": None} for line in lines]
    orders = {"as given": rows, "shortest first": sorted(rows, key=text_length)}
    for order in orders.values():
        sentences_per_second(teacher, order, args.batch_size)  # Warm-up.
    best = {name: 0.0 for name in orders}
    for _ in range(args.rounds):
        for name, order in orders.items():
            best[name] = max(best[name], sentences_per_second(teacher, order, args.batch_size))
    for name, speed in best.items():
        print(f"{name}: {speed:.0f} sentences/s (best of {args.rounds})")
    ratio = best["shortest first"] / best["as given"]
    print(f"shortest first / as given: {ratio:.2f}x ({len(rows)} sentences)")


if __name__ == "__main__":
    main()
