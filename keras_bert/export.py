"""Exports a trained keras_bert model for TF Serving.

    python -m keras_bert.export --model_dir runs/sst2 --output /models/sst2

writes `/models/sst2/<next version>/` (or `--version N`, which must be new
unless `--overwrite`), a SavedModel whose `serving_default`
signature takes raw text and runs on stock TensorFlow (no tensorflow-text).
`--model_dir` holds `model.keras` (fine-tuned), `pretrainer.keras` or
`backbone.keras`, tried in that order; `--model FILE` picks one. The
vocabulary comes from the backbone inside the archive unless `--vocab`.
"""

import argparse
import sys

from keras_bert.paths import PathFlag
from keras_bert.runtime.command import run_command
from keras_bert.runtime.console import add_verbose_argument


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m keras_bert.export", description=__doc__.split("\n")[0]
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model_dir", action=PathFlag, help="training output directory")
    source.add_argument("--model", action=PathFlag, help="a .keras archive")
    parser.add_argument("--output", action=PathFlag, required=True, help="TF Serving base path")
    parser.add_argument("--vocab", action=PathFlag, help="vocab.txt (default: the model's own)")
    case = parser.add_mutually_exclusive_group()
    case.add_argument(
        "--lower_case",
        dest="lower_case",
        action="store_true",
        default=None,
        help="uncased tokenization",
    )
    case.add_argument(
        "--cased",
        dest="lower_case",
        action="store_false",
        help="cased tokenization (default: infer from vocab)",
    )
    parser.add_argument(
        "--seq_len",
        type=int,
        help="pieces a request is truncated to (default: 128, or the model's "
        "max_sequence_length when shorter).",
    )
    parser.add_argument("--version", type=int, help="default: next free")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace --version if it exists (written beside it, then renamed into its place).",
    )
    parser.add_argument(
        "--top_k", type=int, default=5, help="fill-mask: tokens returned per [MASK] (default: 5)"
    )
    parser.add_argument(
        "--max_masks", type=int, default=20, help="fill-mask: [MASK]s per request (default: 20)"
    )
    parser.add_argument(
        "--max_answer_length",
        type=int,
        default=30,
        help="SQuAD: longest answer in pieces (default: 30)",
    )
    parser.add_argument(
        "--max_query_length",
        type=int,
        default=64,
        help="SQuAD: question pieces kept (default: 64)",
    )
    parser.add_argument(
        "--doc_stride",
        type=int,
        default=128,
        help="SQuAD: pieces between the starts of a long context's windows (default: 128)",
    )
    parser.add_argument(
        "--n_best_size",
        type=int,
        default=20,
        help="SQuAD: start and end candidates scored per window (default: 20)",
    )
    parser.add_argument(
        "--jit_compile",
        action="store_true",
        help="compile the model's forward pass with XLA: faster on CPUs; TF Serving then needs "
        "--xla_cpu_compilation_enabled=true",
    )
    add_verbose_argument(parser)
    args = parser.parse_args(argv)

    def export():
        from keras_bert.serving.serving_export import export_for_serving, find_model_file
        from keras_bert.training.output_guard import check_export_folder

        check_export_folder("--output", args.output)
        model = args.model or find_model_file(args.model_dir)
        path = export_for_serving(
            model,
            args.output,
            vocabulary=args.vocab,
            lower_case=args.lower_case,
            seq_len=args.seq_len,
            version=args.version,
            overwrite=args.overwrite,
            top_k=args.top_k,
            max_masks=args.max_masks,
            max_answer_length=args.max_answer_length,
            max_query_length=args.max_query_length,
            doc_stride=args.doc_stride,
            n_best_size=args.n_best_size,
            jit_compile=args.jit_compile,
        )
        print(f"Exported {model} to {path}")

    # serving_export raises `ExportError` (a `UserError`) for bad input; a
    # child process under another backend reads back the line it prints.
    return run_command(
        export,
        output=args.output,
        # The exported graph is TensorFlow's, whatever KERAS_BACKEND says.
        backend="tensorflow",
        error_prefix=f"{parser.prog}: error: ",
        verbose=args.verbose,
    )


if __name__ == "__main__":
    sys.exit(main())
