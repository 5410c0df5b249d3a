"""Seconds per pre-training step of each objective, side by side.

    KERAS_BACKEND=jax python -m bench.objective_step [--shapes 32:128,128:32]
        [--rounds 3] [--steps 10]

For each sequence length x batch, builds every objective's model on the
default run's BERT-Tiny (`keras_bert.pretraining.step_probe`, compiled as
a run compiles it, random ids), then times `--steps` updates per round in alternating
rounds and reports the best round and each objective's ratio to the masked
LM (issue 47's target: ELECTRA at most 1.3x). Never run by the test suite.
"""

import argparse

from keras_bert.pretraining.config import load_pretraining_config
from keras_bert.pretraining.objective_registry import OBJECTIVES
from keras_bert.pretraining.step_probe import warmed_up_steps


def main():
    parser = argparse.ArgumentParser(prog="python -m bench.objective_step")
    parser.add_argument("--shapes", default="32:128,128:32", help="seq_len:batch, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        seq_len, batch_size = map(int, shape.split(":"))
        steps = {
            name: warmed_up_steps(
                3,
                load_pretraining_config(
                    "default",
                    {
                        "objective": name,
                        # The full softmax and dropout, as measured so far;
                        # the masked LM with its next-sentence task.
                        "sampled_softmax_candidates": None,
                        "model_overrides": {"dropout": 0.1},
                        "data.next_sentence_rate": 0.5 if name == "masked_lm" else 0.0,
                    },
                ),
                shapes=[(seq_len, batch_size, max(1, round(0.15 * seq_len)))],
            )
            for name in OBJECTIVES
        }
        best = {name: float("inf") for name in steps}
        for _ in range(args.rounds):
            for name, time_steps in steps.items():
                best[name] = min(best[name], *time_steps(args.steps))
        print(
            f"{seq_len} tokens x {batch_size}: "
            + ", ".join(
                f"{name} {best[name] * 1000:.0f} ms ({best[name] / best['masked_lm']:.2f}x)"
                for name in steps
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
