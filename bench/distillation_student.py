"""How fast a student learns a labelled transfer set: an epoch of
`student_batches` (sentences of about one length in tokens a batch)
against the batches before it (whatever the shuffle brought, padded to the
longest), side by side in one process, the same model and loss.

    KERAS_BACKEND=jax python -m bench.distillation_student \
        --student runs/distill_sst2_t10/all_random:logits:labelled_0 \
        [--batch_size 32] [--rounds 2]

`--student`: a `distill` run folder of a sentence task (its model and its
`transfer_set/` shards). A warm-up epoch of each first (compilation per
padded length), then `--rounds` alternating rounds; the best epoch of
each in sentences a second, the share of the tokens computed that are
real, and the ratio. The model trains on (its weights move), so the
folder's `model.keras` is only read. Never run by the test suite.
"""

import argparse
import glob
import os
import time

import keras

from keras_bert.distillation.student_loss import StudentLoss
from keras_bert.finetuning.inference import load_run
from pipelines.transfer_set import student_batches


def batches_before(*args):
    """The student's batches before `bucket_by_sequence_length` (what
    `training.group_by_length=false` still gives)."""
    return student_batches(*args, group_by_length=False)


def real_share(batches):
    masks = [inputs["padding_mask"] for inputs, _ in batches.as_numpy_iterator()]
    return sum(int(m.sum()) for m in masks) / sum(m.size for m in masks)


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.distillation_student", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--student", required=True, help="a distill run folder")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    _, handler, model = load_run(args.student)
    shards = sorted(glob.glob(os.path.join(args.student, "transfer_set", "shard-*.tfrecord")))
    num_outputs = len(handler.label_names)
    length = handler.config.data.max_seq_length
    pipelines = {
        name: make(shards, num_outputs, handler.tokenizer, length, args.batch_size, 0)
        for name, make in [("before", batches_before), ("by token length", student_batches)]
    }
    sentences = sum(len(targets) for _, targets in pipelines["before"].as_numpy_iterator())
    model.compile(
        optimizer=keras.optimizers.AdamW(1e-3),
        loss=StudentLoss(soft_loss="kl_divergence", temperature=1.0),
    )
    best = dict.fromkeys(pipelines, 0.0)
    for round_ in range(args.rounds + 1):  # Round 0 warms up.
        for name, batches in pipelines.items():
            start = time.perf_counter()
            model.fit(batches, epochs=1, verbose=0)
            speed = sentences / (time.perf_counter() - start)
            best[name] = max(best[name], speed) if round_ else 0.0
    for name, speed in best.items():
        share = real_share(pipelines[name])
        print(f"{name}: {speed:.0f} sentences/s (best of {args.rounds}), {share:.2f} real tokens")
    ratio = best["by token length"] / best["before"]
    print(
        f"by token length / before: {ratio:.2f}x ({sentences} sentences, batch {args.batch_size})"
    )


if __name__ == "__main__":
    main()
