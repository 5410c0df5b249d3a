"""Runs a tiny pre-training in this process; used as a subprocess by the
distribution tests (devices must be configured before TensorFlow starts).

    python -m tests.pretraining.distributed_worker STRATEGY MODEL_DIR CORPUS [--logical_cpus N]
"""

import argparse
import json
from pathlib import Path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("strategy")
    parser.add_argument("model_dir")
    parser.add_argument("corpus")
    parser.add_argument("--logical_cpus", type=int, default=0)
    args = parser.parse_args()
    if args.logical_cpus:
        import tensorflow as tf

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * args.logical_cpus
        )

    import keras

    from keras_bert.pretraining import create_distribution, run_pretraining
    from tests.pretraining.conftest import tiny_config

    distribution = create_distribution(args.strategy)
    keras.utils.set_random_seed(0)
    config = tiny_config(
        Path(args.model_dir).parent, args.corpus, model_dir=args.model_dir, strategy=args.strategy
    )
    results = run_pretraining(config, distribution, verbose=0)
    print(
        "RESULT "
        + json.dumps(
            {
                "strategy": distribution.name,
                "replicas": distribution.num_replicas,
                "chief": distribution.is_chief,
                "step": results["state"].step,
                "finished": results["state"].finished,
                "eval": results["eval"],
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
