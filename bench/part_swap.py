"""Which part of a pre-trained backbone helps or hurts fine-tuning? Swap
parts with a fresh random init and fine-tune each hybrid.

    KERAS_BACKEND=jax PYTHONPATH=. .venv/bin/python bench/part_swap.py \
        --data runs/curve_sst2/sst2.npz --pretrained runs/curve_sst2/pretrain/backbone.keras \
        --budget 1000 --learning_rate 3e-4 --seeds 2

Hybrids: the pre-trained token embeddings in a fresh encoder; the
pre-trained encoder (and position/segment embeddings) with fresh token
embeddings; the whole pre-trained backbone with its token rows rescaled to
the random init's norm (0.02 x sqrt(hidden)). Each is fine-tuned with `bench/
data_efficiency.py`'s protocol (same subset, batches and schedule per seed)
and its dev score printed. Never run by the test suite.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def hybrids(pretrained, fresh):
    """`{name: weights}` of the backbones that mix `pretrained` and `fresh`."""
    is_token = ["token_embedding" in v.path for v in pretrained.weights]
    trained, initial = pretrained.get_weights(), fresh.get_weights()
    token = is_token.index(True)
    rescaled = list(trained)
    init_norm = 0.02 * np.sqrt(trained[token].shape[1])   # stddev 0.02 per value
    rescaled[token] = trained[token] * (
        init_norm / np.linalg.norm(trained[token], axis=1).mean())
    return {
        "pre-trained token embeddings, fresh encoder": [
            t if is_t else i for t, i, is_t in zip(trained, initial, is_token)],
        "pre-trained encoder, fresh token embeddings": [
            i if is_t else t for t, i, is_t in zip(trained, initial, is_token)],
        "pre-trained, token rows rescaled to the init norm": rescaled,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="a data_efficiency.py dump")
    parser.add_argument("--pretrained", required=True, help="a backbone .keras")
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--learning_rate", type=float, default=3e-4)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--min_updates", type=int, default=300)
    args = parser.parse_args()
    from transfer import training_modules

    training_modules()
    import keras

    import data_efficiency
    from keras_bert.models import BertBackbone

    data = dict(np.load(args.data))
    task = str(data["task"])
    pretrained = keras.saving.load_model(args.pretrained, compile=False)
    keras.utils.set_random_seed(1234)
    fresh = BertBackbone.from_config(pretrained.get_config())
    for name, weights in hybrids(pretrained, fresh).items():
        scores = [data_efficiency.finetune(task, data, pretrained.get_config(), weights,
                                           args.budget, args.learning_rate, seed,
                                           args.min_updates)[0]
                  for seed in range(args.seeds)]
        print(f"{name}: " + ", ".join(f"{100 * s:.1f}" for s in scores), flush=True)


if __name__ == "__main__":
    main()
