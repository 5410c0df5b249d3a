"""`python -m keras_bert.pretrain`: pre-train BERT from a YAML recipe.

With no arguments it pre-trains a BERT-Tiny on the corpus bundled in
`data/corpus/` (a few minutes on 2 CPU cores) and prints the held-out
masked-LM accuracy (and the next-sentence accuracy of a recipe that trains
it). Running the same command again after a crash or preemption resumes
from the newest checkpoint in `--model_dir`; `--overwrite` starts afresh
there instead.

    python -m keras_bert.pretrain
    python -m keras_bert.pretrain --config bert_base --tpu my-tpu \
        --set data.train_files=gs://bucket/shards/*.tfrecord \
        --set data.corpus_format=tfrecord --model_dir gs://bucket/run1
"""

import argparse
import os
import sys
import time

from keras_bert.paths import PathFlag, refuse_overlap
from keras_bert.pretraining.config import STRATEGIES
from keras_bert.runtime.command import run_command
from keras_bert.runtime.console import add_verbose_argument

FULL_DISK_ADVICE = (
    "; no partial checkpoint or export is kept. Free space and run the same "
    "command to resume from the last checkpoint."
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m keras_bert.pretrain",
        description="Pre-train BERT (masked LM, or ELECTRA with --set objective=electra).",
    )
    parser.add_argument(
        "--config",
        action=PathFlag,
        default="default",
        help="configs/pretrain/<name>.yaml name or a YAML path "
        "(default: %(default)s; also bert_base, bert_large).",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value, e.g. optimizer.learning_rate=3e-4 or "
        "phases.1.batch_size=16; repeatable; unknown keys are errors.",
    )
    parser.add_argument(
        "--model_dir", action=PathFlag, help="checkpoints, logs and exports (overrides model_dir)."
    )
    parser.add_argument(
        "--strategy", choices=STRATEGIES, help="distribution strategy (overrides strategy)."
    )
    parser.add_argument("--tpu", help="TPU name or grpc://host:port.")
    parser.add_argument(
        "--init_checkpoint",
        action=PathFlag,
        help="warm-start weights only from a .keras file or a checkpoint directory.",
    )
    parser.add_argument(
        "--allow_longer_train_steps",
        action="store_true",
        help="rerun on a --model_dir with a larger train_steps than it was "
        "started with: the last phase grows (and a finished run trains "
        "on). Any other change to what trains is refused.",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="start afresh instead of resuming: the run in --model_dir is replaced (kept "
        "aside until this run saves its first checkpoint, and put back if it fails first).",
    )
    add_verbose_argument(parser)
    return parser.parse_args(argv)


def interrupted_line(model_dir):
    """What Ctrl-C says was kept: the newest checkpoint to resume from, or
    none (stopped before the first, during the backend measurement say)."""
    folder = os.path.join(model_dir or "", "checkpoints")
    if model_dir and "://" in model_dir:  # Not listed from here.
        return f"Interrupted without saving; the newest checkpoint in {folder}, if any, is kept."
    names = os.listdir(folder) if model_dir and os.path.isdir(folder) else []
    saved = sorted(n for n in names if n.startswith("ckpt-") and n[len("ckpt-") :].isdigit())
    if saved:
        return (
            f"Interrupted without saving; the newest checkpoint, {folder}/{saved[-1]}, "
            "is the one the same command resumes from."
        )
    return "Interrupted before the first checkpoint; nothing to resume from."


def main(argv=None):
    # A time budget counts from here: the imports and the backend choice
    # spend it too, so the command ends on time on any machine.
    started = time.monotonic()
    args = parse_args(argv)
    overrides = list(args.set)
    for key in ("model_dir", "strategy", "tpu", "init_checkpoint"):
        value = getattr(args, key)
        if value is not None:
            overrides.append(f"{key}={value}")
    config = None

    def check():
        nonlocal config
        from keras_bert.pretraining.config import check_local_paths, load_pretraining_config

        config = load_pretraining_config(args.config, overrides)
        check_local_paths(config)
        data = config.data
        refuse_overlap(
            {"model_dir": config.model_dir},
            {
                "data.train_files": data.train_files,
                "data.eval_files": data.eval_files,
                "data.vocab_file": data.vocab_file,
                "init_checkpoint": config.init_checkpoint,
            },
            # `--overwrite` may warm-start from the run it replaces.
            holding={("model_dir", "init_checkpoint")},
        )

    def pretrain():
        from keras_bert.pretraining.runner import run_pretraining

        results = run_pretraining(
            config,
            allow_longer_train_steps=args.allow_longer_train_steps,
            overwrite=args.overwrite,
            budget_started=started,
        )
        if results["preempted"]:
            # The checkpoint is on disk. Leave at once: interpreter shutdown
            # can block on tf.data threads of the iterator `fit` was stopped
            # in, and a preempted VM has seconds, not minutes.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        objective = results["pretraining"].objective
        for index, metrics in sorted(results["eval"].items()):
            print(f"held-out seq_len={config.phases[index].seq_len}: {objective.report(metrics)}")

    return run_command(
        pretrain,
        output=lambda: config.model_dir if config else args.model_dir,
        choose_backend=True,
        check=check,
        # pipelines report the corpus and the held-out split at INFO.
        log_format="%(message)s",
        full_disk_advice=FULL_DISK_ADVICE,
        # The first Ctrl-C while training saves a checkpoint and exits 0;
        # this is the second, or one before training (the backend probe).
        interrupted=lambda: interrupted_line(config.model_dir if config else args.model_dir),
        verbose=args.verbose,
    )


if __name__ == "__main__":
    sys.exit(main())
