"""`python -m keras_bert.vocab`: learn a WordPiece vocabulary from text.

    python -m keras_bert.vocab --input 'data/corpus/*/*.txt' \
        --vocab_size 30522 --output vocab.txt [--cased] [--overwrite]

Words are split exactly as `pipelines.BertTokenizer` splits them, counted,
and handed to tensorflow-text's WordPiece learner. The reserved tokens
`[PAD] [UNK] [CLS] [SEP] [MASK]` get ids 0-4. The written file is validated
by loading it back.
"""

import argparse
import os
import sys
import time

from keras_bert.paths import PathFlag, file_output, normal_path, refuse_overlap
from keras_bert.runtime.command import run_command
from keras_bert.runtime.console import add_verbose_argument


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m keras_bert.vocab", description="Learn a BERT WordPiece vocabulary."
    )
    parser.add_argument(
        "--input",
        required=True,
        action="append",
        type=normal_path,
        help="text file or glob; repeatable.",
    )
    parser.add_argument(
        "--vocab_size",
        type=int,
        default=30522,
        help="maximum vocabulary size, special tokens included (default: %(default)s).",
    )
    parser.add_argument(
        "--output",
        action=PathFlag,
        type=file_output,
        required=True,
        help="vocabulary file to write.",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing --output file."
    )
    parser.add_argument(
        "--cased", action="store_true", help="keep case and accents (default: uncased)."
    )
    parser.add_argument(
        "--max_word_chars",
        type=int,
        default=50,
        help="longer words are not counted (default: %(default)s).",
    )
    parser.add_argument(
        "--min_count",
        type=int,
        default=10,
        help="lowest piece frequency the learner may accept; "
        "lower it when a small corpus gives fewer tokens "
        "than --vocab_size (default: %(default)s).",
    )
    add_verbose_argument(parser)
    return parser.parse_args(argv)


def output_error(path, inputs, overwrite):
    """What is wrong with `--output`, found before learning, not after: the
    shared rules (`output_guard.check_output`: never an input or a run's own
    file, an existing file only with `--overwrite`), then its folder."""
    import tensorflow as tf

    from keras_bert.errors import UserError
    from keras_bert.runs.output_guard import check_output

    try:
        check_output("--output", path, [f for p in inputs for f in tf.io.gfile.glob(p)], overwrite)
    except UserError as error:
        return str(error)
    if "://" in path:  # A remote file system: its writer will tell.
        return None
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        return f"--output {path}: {parent} is not an existing folder"
    if not os.access(parent, os.W_OK):
        return f"--output {path}: folder {parent} is not writable"
    return None


def main(argv=None):
    args = parse_args(argv)

    def learn():
        import pipelines
        from keras_bert.errors import UserError
        from keras_bert.file_io import FILE_ERRORS, error_reason, special_file, write_atomically
        from keras_bert.runs.output_guard import claimed_output
        from keras_bert.runtime.progress import progress_callback

        def check():
            error = output_error(args.output, args.input, args.overwrite)
            if error:
                raise UserError(error)

        check()
        with claimed_output(args.output, check, "vocab"):
            start = time.time()
            tokens = pipelines.learn_vocabulary(
                args.input,
                args.vocab_size,
                lower_case=not args.cased,
                max_word_chars=args.max_word_chars,
                min_count=args.min_count,
                progress=progress_callback("MB", unit=1e6),
            )
            try:
                write_atomically(args.output, lambda f: f.write("".join(t + "\n" for t in tokens)))
            except FILE_ERRORS as error:  # A full disk: nothing half-written is left.
                raise UserError(f"Cannot write {args.output}: {error_reason(error)}") from None
        if special_file(args.output) is None:  # Read back what a file holds.
            pipelines.load_vocabulary(args.output)
        print(f"Wrote {len(tokens)} tokens to {args.output} in {time.time() - start:.0f}s.")

    return run_command(
        learn,
        output=args.output,
        log_format="%(message)s",
        check=lambda: refuse_overlap({"--output": args.output}, {"--input": args.input}),
        verbose=args.verbose,
    )


if __name__ == "__main__":
    sys.exit(main())
