"""`python -m keras_bert.distill`: distil a fine-tuned teacher into a small student.

    python -m keras_bert.distill --teacher runs/sst2_minilm \
        --init_checkpoint random:bert_tiny --model_dir runs/sst2_tiny \
        [--data_dir glue/SST-2] [--text reviews.txt] [--vocab vocab.txt] \
        [--config my.yaml] [--set distillation.transfer.copies=4]

The teacher is a fine-tuning run folder (`keras_bert.finetune`'s
`--model_dir`) of a sentence or sentence-pair task, or of token tagging; it
labels the transfer
set (the task's training sentences, the `--text` files' lines and augmented
copies) once, and the student learns its outputs. The student's folder is
a fine-tuning run folder: `predict`, `evaluate`, `export` and `convert`
take it. Settings: the task's fine-tuning config and a `distillation:`
section (docs/distillation.md). Input errors print one line and exit with
status 2.
"""

import argparse
import sys

from keras_bert.paths import PathFlag, normal_path
from keras_bert.runtime.command import LOG_FORMAT, print_json, run_command
from keras_bert.runtime.console import add_verbose_argument


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m keras_bert.distill", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--teacher",
        action=PathFlag,
        required=True,
        help="a fine-tuning run folder (finetune's --model_dir) of a sentence(-pair) or "
        "tagging task",
    )
    parser.add_argument(
        "--init_checkpoint",
        action=PathFlag,
        required=True,
        help="the student: a .keras file, a checkpoint keras_bert.convert reads, "
        "or random:<model config>",
    )
    parser.add_argument(
        "--model_dir",
        action=PathFlag,
        required=True,
        help="the student's run folder: its model, results, export and transfer set",
    )
    parser.add_argument(
        "--data_dir",
        action=PathFlag,
        help="the task's files; default: those the teacher was fine-tuned on",
    )
    parser.add_argument(
        "--text",
        action="append",
        type=normal_path,
        default=[],
        metavar="FILE",
        help="unlabelled text for the transfer set (a file or a glob), a sentence a line "
        "(two, tab-separated, for a pair task; words, for tagging); repeatable",
    )
    parser.add_argument(
        "--vocab", action=PathFlag, help="the student's vocab.txt; default: its checkpoint's own"
    )
    parser.add_argument(
        "--config",
        action=PathFlag,
        help="a YAML path or a name in configs/finetune/; default: the task's own",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. distillation.temperature=2 (repeatable)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="also replace a run of another task in --model_dir",
    )
    add_verbose_argument(parser)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)

    def check():
        # The teacher's run, the local paths and the recipe, before the backend
        # measurement (`run_distillation` checks them again, for callers from Python).
        from keras_bert.distillation.config import load_distill_config
        from keras_bert.distillation.inputs import check_text_files, read_teacher
        from keras_bert.finetuning.config import check_local_inputs, refuse_run_over_inputs

        teacher = args.teacher
        # A remote run is read once TensorFlow is up (`run_distillation`).
        task = None if "://" in teacher else read_teacher(teacher)[0]
        check_text_files(args.text)
        check_local_inputs(args.init_checkpoint, args.vocab, args.data_dir)
        refuse_run_over_inputs(
            args.model_dir,
            args.data_dir,
            args.init_checkpoint,
            args.vocab,
            args.config,
            teacher=teacher,
            text_files=args.text,
        )
        if task is not None:
            load_distill_config(task, args.config, args.set)

    def distill():
        from keras_bert.distillation.runner import run_distillation

        print_json(
            run_distillation(
                args.teacher,
                args.init_checkpoint,
                args.model_dir,
                data_dir=args.data_dir,
                text_files=args.text,
                vocab=args.vocab,
                config_file=args.config,
                overrides=args.set,
                overwrite=args.overwrite,
            )
        )

    return run_command(
        distill,
        output=args.model_dir,
        choose_backend=True,
        log_format=LOG_FORMAT,
        check=check,
        verbose=args.verbose,
    )


if __name__ == "__main__":
    sys.exit(main())
