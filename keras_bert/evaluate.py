"""`python -m keras_bert.evaluate`: score a fine-tuned model on a labelled file.

    python -m keras_bert.evaluate --model_dir runs/sst2 --input glue/SST-2/dev.tsv \
        [--output runs/sst2/eval_dev] [--overwrite]

No training: the task, its settings, the model and the vocabulary come from
`--model_dir` (what `keras_bert.finetune` wrote); `--input` is a file in the
task's format, with labels (a GLUE TSV or `datasets` export; a table with the
run's columns: TSV, CSV, JSON Lines, JSON, Parquet, a save_to_disk folder;
SQuAD JSON, CoNLL text, SWAG CSV). Writes `eval_results.json` (the official
metric) and the predictions file into `--output` (default:
`<model_dir>/eval_<file name>_<digest of its path>/`); existing results are
replaced only with `--overwrite`. Input errors print one line, exit 2.
"""

import argparse
import sys

from keras_bert.paths import PathFlag, refuse_output_over_run
from keras_bert.runtime.command import LOG_FORMAT, print_json, run_command
from keras_bert.runtime.console import add_verbose_argument


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m keras_bert.evaluate", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--model_dir", action=PathFlag, required=True, help="a keras_bert.finetune output folder"
    )
    parser.add_argument(
        "--input", action=PathFlag, required=True, help="a labelled file in the task's format"
    )
    parser.add_argument(
        "--output",
        "--output_dir",
        action=PathFlag,
        dest="output",
        help="the folder for the scores and predictions (default: "
        "<model_dir>/eval_<file name>_<path digest>/); --output_dir is the former name",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace existing output files (never the input or the run's own files)",
    )
    add_verbose_argument(parser)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)

    def evaluate():
        from keras_bert.finetuning.inference import run_evaluation

        print_json(
            run_evaluation(args.model_dir, args.input, args.output, overwrite=args.overwrite)
        )

    return run_command(
        evaluate,
        output=args.output or args.model_dir,
        log_format=LOG_FORMAT,
        check=lambda: refuse_output_over_run(args.output, args.model_dir, args.input),
        verbose=args.verbose,
    )


if __name__ == "__main__":
    sys.exit(main())
