"""`python -m keras_bert.predict`: a fine-tuned model's predictions for new data.

    python -m keras_bert.predict --model_dir runs/sst2 --input glue/SST-2/test.tsv \
        [--output preds.jsonl] [--glue_submission] [--overwrite]

The task, its settings, the model and the vocabulary come from `--model_dir`
(what `keras_bert.finetune` wrote); `--input` is a file in the task's format
without labels: a GLUE TSV (the official `test.tsv`, or the train/dev
layout, or a `datasets` export), a table with the run's text columns (TSV,
CSV, JSON Lines, JSON, Parquet, a save_to_disk folder), SQuAD JSON, CoNLL text
(a word a line), SWAG CSV. `--glue_submission` writes the leaderboard's
`index<TAB>prediction` file under the name it expects (`SST-2.tsv`,
`MNLI-m.tsv`, ...). An existing output is replaced only with `--overwrite`;
the input and the run's own files never are. Input errors print one line, exit 2.
"""

import argparse
import sys

from keras_bert.paths import PathFlag, file_output, refuse_output_over_run
from keras_bert.runtime.command import LOG_FORMAT, print_json, run_command
from keras_bert.runtime.console import add_verbose_argument


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m keras_bert.predict", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--model_dir", action=PathFlag, required=True, help="a keras_bert.finetune output folder"
    )
    parser.add_argument(
        "--input",
        action=PathFlag,
        required=True,
        help="a file in the task's format; labels not needed",
    )
    parser.add_argument(
        "--output",
        action=PathFlag,
        type=file_output,
        help="default: <model_dir>/predictions_<input name>.<jsonl|txt|json>, "
        "or <model_dir>/glue_submission/<GLUE name>.tsv",
    )
    parser.add_argument(
        "--glue_submission",
        action="store_true",
        help="write the GLUE leaderboard's file (official test.tsv input)",
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

    def predict():
        from keras_bert.finetuning.inference import run_prediction

        print_json(
            run_prediction(
                args.model_dir,
                args.input,
                args.output,
                glue_submission=args.glue_submission,
                overwrite=args.overwrite,
            )
        )

    return run_command(
        predict,
        output=args.output or args.model_dir,
        log_format=LOG_FORMAT,
        check=lambda: refuse_output_over_run(args.output, args.model_dir, args.input),
        verbose=args.verbose,
    )


if __name__ == "__main__":
    sys.exit(main())
