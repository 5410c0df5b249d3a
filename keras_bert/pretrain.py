"""`python -m keras_bert.pretrain`: pre-train BERT from a YAML recipe.

With no arguments it pre-trains a BERT-Tiny on the corpus bundled in
`data/corpus/` (a few minutes on 2 CPU cores) and prints held-out masked-LM
and next-sentence accuracy. Running the same command again after a crash
or preemption resumes from the newest checkpoint in `--model_dir`.

    python -m keras_bert.pretrain
    python -m keras_bert.pretrain --config bert_base --tpu my-tpu \
        --set data.train_files=gs://bucket/shards/*.tfrecord \
        --set data.corpus_format=tfrecord --model_dir gs://bucket/run1
"""

# Before Keras, which reads KERAS_BACKEND once, and before TensorFlow's
# start-up notices reach the console.
from keras_bert.runtime.backend import use_fastest_backend_for_main_command  # noqa: E402
from keras_bert.runtime.console import import_tensorflow_quietly  # noqa: E402

use_fastest_backend_for_main_command()
import_tensorflow_quietly()

import argparse
import os
import sys

from keras_bert.runtime.console import add_verbose_argument
from keras_bert.errors import ConfigError
from keras_bert.file_io import is_disk_full
from keras_bert.pretraining.config import (
    STRATEGIES,
    load_pretraining_config,
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m keras_bert.pretrain",
        description="Pre-train BERT (masked LM + next sentence).")
    parser.add_argument(
        "--config", default="default",
        help="configs/pretrain/<name>.yaml name or a YAML path "
             "(default: %(default)s; also bert_base, bert_large).")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="override a config value, e.g. optimizer.learning_rate=3e-4 or "
             "phases.1.batch_size=16; repeatable; unknown keys are errors.")
    parser.add_argument("--model_dir", help="checkpoints, logs and exports "
                        "(overrides model_dir).")
    parser.add_argument("--strategy", choices=STRATEGIES,
                        help="distribution strategy (overrides strategy).")
    parser.add_argument("--tpu", help="TPU name or grpc://host:port.")
    parser.add_argument("--init_checkpoint", help="warm-start weights only "
                        "from a .keras file or a checkpoint directory.")
    parser.add_argument(
        "--allow_longer_train_steps", action="store_true",
        help="rerun on a --model_dir with a larger train_steps than it was "
             "started with: the last phase grows (and a finished run trains "
             "on). Any other change to what trains is refused.")
    add_verbose_argument(parser)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    overrides = list(args.set)
    for key in ("model_dir", "strategy", "tpu", "init_checkpoint"):
        value = getattr(args, key)
        if value is not None:
            overrides.append(f"{key}={value}")
    try:
        import pipelines

        config = load_pretraining_config(args.config, overrides)
        from keras_bert.pretraining.runner import run_pretraining

        results = run_pretraining(
            config, allow_longer_train_steps=args.allow_longer_train_steps)
    except (ConfigError, pipelines.PipelineInputError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # The second Ctrl-C: no traceback.
        print("Interrupted without saving; the last checkpoint is the one "
              "to resume from.", file=sys.stderr)
        return 130
    except Exception as error:
        if not is_disk_full(error):
            raise
        print(f"error: no space left on device in {config.model_dir}; no "
              "partial checkpoint or export is kept. Free space and run the "
              "same command to resume from the last checkpoint.",
              file=sys.stderr)
        # At once: h5py's handles on the failed file crash interpreter
        # shutdown.
        sys.stderr.flush()
        os._exit(1)
    if results["preempted"]:
        # The checkpoint is on disk. Leave at once: interpreter shutdown can
        # block on tf.data threads of the iterator `fit` was stopped in, and
        # a preempted VM has seconds, not minutes.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    for index, metrics in sorted(results["eval"].items()):
        seq_len = config.phases[index].seq_len
        print(f"held-out seq_len={seq_len}: "
              f"mlm_accuracy={metrics.get('mlm_accuracy', float('nan')):.4f}"
              + (f" nsp_accuracy={metrics['nsp_accuracy']:.4f}"
                 if "nsp_accuracy" in metrics else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
