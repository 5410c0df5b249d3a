"""`python -m keras_bert.data`: tokenize a corpus once into TFRecord shards.

    python -m keras_bert.data --input 'corpus/*.txt' --output shards/ \
        --vocab vocab.txt [--corpus_format sentences|text|lines] [--cased] \
        [--num_shards 16] [--overwrite]

Each shard holds one `tf.train.Example` per document (`token_ids`,
`sentence_lengths`); `metadata.json` records the vocabulary's SHA-256 and
the shards' names, and is checked for every shard read. `--output` must
be new or empty, so that two runs' shards are never mixed; `--overwrite`
replaces an earlier run's shards there once the new ones are complete (a
folder holding anything else is refused).
Next-sentence pairs and masks stay dynamic: read the shards with
`pipelines.pretraining_dataset(..., corpus_format="tfrecord")`.
"""

import argparse
import sys
import time

from keras_bert.paths import PathFlag, normal_path, refuse_overlap
from keras_bert.runtime.command import run_command
from keras_bert.runtime.console import add_verbose_argument


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m keras_bert.data",
        description="Tokenize a pre-training corpus into TFRecord shards.",
    )
    parser.add_argument(
        "--input",
        required=True,
        action="append",
        type=normal_path,
        help="corpus file or glob; repeatable.",
    )
    parser.add_argument(
        "--output",
        "--output_dir",
        action=PathFlag,
        dest="output",
        required=True,
        help="new or empty folder for the shards (--output_dir: the former name).",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the shards an earlier run wrote in --output, once the new ones are complete.",
    )
    parser.add_argument("--vocab", action=PathFlag, required=True, help="vocabulary file.")
    parser.add_argument(
        "--corpus_format",
        default="sentences",
        choices=("sentences", "text", "lines"),
        help="'sentences': one sentence a line, blank line "
        "between documents; 'text': raw text, split into "
        "sentences; 'lines': one document a line "
        "(default: %(default)s).",
    )
    parser.add_argument(
        "--text_document",
        default="file",
        choices=("file", "block"),
        help="with --corpus_format text: a document is a file or a blank-line-separated block.",
    )
    parser.add_argument(
        "--cased", action="store_true", help="keep case and accents (default: uncased)."
    )
    parser.add_argument(
        "--num_shards",
        type=int,
        default=16,
        help="output files; >= the number of input pipelines "
        "that will read them (default: %(default)s).",
    )
    add_verbose_argument(parser)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)

    def write_shards():
        import pipelines
        from keras_bert.runtime.progress import progress_callback

        start = time.time()
        info = pipelines.write_tfrecord_shards(
            args.input,
            args.output,
            args.vocab,
            corpus_format=args.corpus_format,
            lower_case=not args.cased,
            num_shards=args.num_shards,
            text_document=args.text_document,
            progress=progress_callback("file"),
            overwrite=args.overwrite,
        )
        print(
            f"Wrote {info['documents']} documents, {info['sentences']} sentences, "
            f"{info['tokens']} tokens to {len(info['shards'])} shards in "
            f"{args.output} in {time.time() - start:.0f}s."
        )

    return run_command(
        write_shards,
        output=args.output,
        log_format="%(message)s",
        check=lambda: refuse_overlap(
            {"--output": args.output}, {"--input": args.input, "--vocab": args.vocab}
        ),
        verbose=args.verbose,
    )


if __name__ == "__main__":
    sys.exit(main())
