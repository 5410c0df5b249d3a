"""`python -m keras_bert.finetune`: fine-tune, evaluate, predict and export.

    python -m keras_bert.finetune --task sst2 --data_dir glue/SST-2 \
        --init_checkpoint minilm.keras --model_dir runs/sst2 \
        [--vocab vocab.txt] [--config my.yaml] [--set optimizer.learning_rate=3e-5]

The tasks are `--task`'s choices (`finetuning.task_registry.TASKS`: GLUE,
SQuAD, CoNLL-2003, SWAG, and classification, pair classification and
regression over files with named columns; docs/finetuning.md). Defaults
come from `configs/finetune/`. Unless `KERAS_BACKEND` is set, it trains on the backend
measured fastest on this machine, as `pretrain` does (`keras_bert.runtime.
backend`). Input errors print one line and exit with status 2.
"""

import argparse
import sys

from keras_bert.finetuning.task_registry import TASKS
from keras_bert.paths import PathFlag
from keras_bert.runtime.command import LOG_FORMAT, print_json, run_command
from keras_bert.runtime.console import add_verbose_argument


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m keras_bert.finetune", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--task", required=True, choices=sorted(TASKS), help="the task (its reader and head)"
    )
    parser.add_argument(
        "--data_dir",
        action=PathFlag,
        required=True,
        help="the task's files (docs/finetuning.md: what each reads)",
    )
    parser.add_argument(
        "--init_checkpoint",
        action=PathFlag,
        required=True,
        help="a .keras file, a checkpoint keras_bert.convert reads, or random:<model config>",
    )
    parser.add_argument(
        "--model_dir",
        action=PathFlag,
        required=True,
        help="where the run writes its model, results and export",
    )
    parser.add_argument("--vocab", action=PathFlag, help="vocab.txt; default: the checkpoint's own")
    parser.add_argument(
        "--config",
        action=PathFlag,
        help="a YAML path or a name in configs/finetune/ (glue, squad, ...); "
        "default: the task's own",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. training.epochs=2 (repeatable)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="also replace a run of another task in --model_dir (a rerun of the same task "
        "always replaces its run, kept aside until the new model is saved)",
    )
    add_verbose_argument(parser)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)

    def check():
        # The config, its overrides and the local paths, before the backend
        # measurement (`run_finetune` checks them again, for callers from Python).
        from keras_bert.finetuning.config import (
            check_local_inputs,
            load_finetune_config,
            refuse_run_over_inputs,
        )

        check_local_inputs(args.init_checkpoint, args.vocab, args.data_dir)
        refuse_run_over_inputs(
            args.model_dir, args.data_dir, args.init_checkpoint, args.vocab, args.config
        )
        load_finetune_config(args.task, args.config, args.set)

    def finetune():
        from keras_bert.finetuning.runner import run_finetune

        print_json(
            run_finetune(
                args.task,
                args.data_dir,
                args.init_checkpoint,
                args.model_dir,
                vocab=args.vocab,
                config_file=args.config,
                overrides=args.set,
                overwrite=args.overwrite,
            )
        )

    return run_command(
        finetune,
        output=args.model_dir,
        choose_backend=True,
        log_format=LOG_FORMAT,
        check=check,
        verbose=args.verbose,
    )


if __name__ == "__main__":
    sys.exit(main())
