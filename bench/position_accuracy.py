"""Held-out masked-LM accuracy of a pre-training run's pretrainer by where
the mask falls: is the last phase's length learned at every position, or
only at those the shorter first phase trained?

    KERAS_BACKEND=jax python -m bench.position_accuracy runs/pretrain_default

Reads `<run_dir>/config.yaml` (the run's recorded config) for the held-out
files and the last phase's shape, and `<run_dir>/pretrainer.keras`; scores
`--batches` held-out batches, masked as every held-out evaluation is (15%,
fixed seed), in buckets of `--bucket` positions.
"""

import argparse
import os

import numpy as np


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir")
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--bucket", type=int, default=32)
    args = parser.parse_args()

    from keras_bert.pretraining import build_pretraining, load_pretraining_config
    from keras_bert.pretraining.run_setup import load_initial_weights

    # The weights come from the file: no prior to count, no folder to write.
    config = load_pretraining_config(
        os.path.join(args.run_dir, "config.yaml"),
        {"output_bias_init": "zeros", "model_dir": os.path.join(args.run_dir, "unused")},
    )
    pretraining = build_pretraining(config)
    load_initial_weights(pretraining, os.path.join(args.run_dir, "pretrainer.keras"))
    dataset, model = pretraining.eval_dataset(-1), pretraining.model
    buckets = config.phases[-1].seq_len // args.bucket
    hits, totals = np.zeros(buckets), np.zeros(buckets)
    for features, labels, weights in dataset.take(args.batches).as_numpy_iterator():
        outputs = model.predict_on_batch({key: features[key] for key in model.input})
        right = np.asarray(outputs["mlm"]).argmax(-1) == labels["mlm"]
        real = weights["mlm"] > 0
        bucket = features["mask_positions"] // args.bucket
        for b in range(buckets):
            chosen = real & (bucket == b)
            hits[b] += right[chosen].sum()
            totals[b] += chosen.sum()
    print("| positions | masks | held-out accuracy |\n|---|---|---|")
    for b in range(buckets):
        first = b * args.bucket
        print(
            f"| {first}-{first + args.bucket - 1} | {int(totals[b]):,} | {hits[b] / totals[b]:.2%} |"
        )


if __name__ == "__main__":
    main()
