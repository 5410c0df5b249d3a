"""Exports a trained keras_bert model for TF Serving.

    python -m keras_bert.export --model_dir runs/sst2 --output /models/sst2

writes `/models/sst2/<next version>/` (or `--version N`, which must be new
unless `--overwrite`), a SavedModel whose `serving_default`
signature takes raw text and runs on stock TensorFlow (no tensorflow-text).
`--model_dir` holds `model.keras` (fine-tuned), `pretrainer.keras` or
`backbone.keras`, tried in that order; `--model FILE` picks one. The
vocabulary comes from the backbone inside the archive unless `--vocab`.
A run's `model_dir` also gives its `config.yaml`: the export tokenizes as
the run did (`data.lower_case`; a casing flag that contradicts it is
refused) and, for a fine-tuning run, truncates and windows requests as its
`predict` does unless a flag says otherwise.
"""

import argparse
import os
import sys

from keras_bert.paths import PathFlag, refuse_overlap
from keras_bert.runtime.command import run_command
from keras_bert.runtime.console import add_verbose_argument
from pipelines import limits

# `serving.converted_check.QUANTIZATIONS`, which is not imported here: it
# loads TensorFlow before the arguments are parsed (a test checks they agree).
QUANTIZATIONS = ("float32", "dynamic_int8")


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
        help="cased tokenization (default: the run's, else inferred from the vocabulary)",
    )
    parser.add_argument(
        "--seq_len",
        type=int,
        help="pieces a request is truncated to (default: a fine-tuning run's, else 128, or "
        "the model's max_sequence_length when shorter).",
    )
    parser.add_argument("--version", type=int, help="default: next free")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace --version if it exists (written beside it, then renamed into its place).",
    )
    parser.add_argument(
        "--top_k",
        type=int,
        default=limits.FILL_MASK_TOP_K,
        help=f"fill-mask: tokens returned per [MASK] (default: {limits.FILL_MASK_TOP_K})",
    )
    parser.add_argument(
        "--max_masks",
        type=int,
        default=limits.FILL_MASK_MAX_MASKS,
        help=f"fill-mask: [MASK]s per request (default: {limits.FILL_MASK_MAX_MASKS})",
    )
    parser.add_argument(
        "--max_answer_length",
        type=int,
        help="SQuAD: longest answer in pieces (default: a fine-tuning run's, else "
        f"{limits.SQUAD_MAX_ANSWER_LENGTH})",
    )
    parser.add_argument(
        "--max_query_length",
        type=int,
        help="SQuAD: question pieces kept (default: a fine-tuning run's, else "
        f"{limits.SQUAD_MAX_QUERY_LENGTH})",
    )
    parser.add_argument(
        "--doc_stride",
        type=int,
        help="SQuAD: pieces between the starts of a long context's windows "
        f"(default: a fine-tuning run's, else {limits.SQUAD_DOC_STRIDE})",
    )
    parser.add_argument(
        "--n_best_size",
        type=int,
        help="SQuAD: start and end candidates scored per window "
        f"(default: a fine-tuning run's, else {limits.SQUAD_N_BEST_SIZE})",
    )
    parser.add_argument(
        "--jit_compile",
        action="store_true",
        help="compile the model's forward pass with XLA: faster on CPUs; TF Serving then needs "
        "--xla_cpu_compilation_enabled=true",
    )
    parser.add_argument(
        "--tflite",
        choices=QUANTIZATIONS,
        help="also write model.tflite into the version: the token-id model for TFLite / LiteRT "
        "(float32, or dynamic_int8 weights; docs/serving.md)",
    )
    parser.add_argument(
        "--onnx",
        choices=QUANTIZATIONS,
        help="also write model.onnx into the version: the token-id model for ONNX Runtime "
        "(float32, or dynamic_int8 weights; needs tf2onnx, onnx and onnxruntime; "
        "docs/serving.md)",
    )
    add_verbose_argument(parser)
    args = parser.parse_args(argv)

    def export():
        from keras_bert.errors import ExportError
        from keras_bert.finetuning.run_kind import FINETUNING_RUN
        from keras_bert.runs.output_guard import check_export_folder
        from keras_bert.runs.run_folder import RunFolder
        from keras_bert.serving.serving_export import export_for_serving, find_model_file

        check_export_folder("--output", args.output)
        if args.model is None:
            # A folder whose fine-tuning rerun has not finished holds no one run.
            RunFolder(args.model_dir, FINETUNING_RUN).refuse_unfinished_rerun(error=ExportError)
        model_file = args.model or find_model_file(args.model_dir)
        model, options = model_file, {}
        if args.model_dir:
            model, options = _run_settings(args.model_dir, model_file)
        recorded = options.get("lower_case")
        if None not in (recorded, args.lower_case) and recorded != args.lower_case:
            raise ExportError(
                f"--{'lower_case' if args.lower_case else 'cased'} contradicts the run in "
                f"{args.model_dir}, which tokenized {'uncased' if recorded else 'cased'} (its "
                "config.yaml's data.lower_case, or its vocabulary's casing where that is null): "
                "drop the flag, so that the export answers as predict does"
            )
        flags = dict(
            lower_case=args.lower_case,
            seq_len=args.seq_len,
            max_answer_length=args.max_answer_length,
            max_query_length=args.max_query_length,
            doc_stride=args.doc_stride,
            n_best_size=args.n_best_size,
        )
        options.update({name: value for name, value in flags.items() if value is not None})
        if args.jit_compile:
            options["jit_compile"] = True
        if args.tflite:
            options["tflite"] = args.tflite
        if args.onnx:
            options["onnx"] = args.onnx
        path = export_for_serving(
            model,
            args.output,
            vocabulary=args.vocab,
            version=args.version,
            overwrite=args.overwrite,
            top_k=args.top_k,
            max_masks=args.max_masks,
            **options,
        )
        print(f"Exported {model_file} to {path}")

    # serving_export raises `ExportError` (a `UserError`) for bad input; a
    # child process under another backend reads back the line it prints.
    return run_command(
        export,
        output=args.output,
        # The exported graph is TensorFlow's, whatever KERAS_BACKEND says.
        backend="tensorflow",
        error_prefix=f"{parser.prog}: error: ",
        # A run's export/ folder is inside the run it exports.
        check=lambda: refuse_overlap(
            {"--output": args.output},
            {"--model_dir": args.model_dir, "--model": args.model, "--vocab": args.vocab},
            inside={("--output", "--model_dir")},
        ),
        verbose=args.verbose,
    )


def _run_settings(model_dir, model_file):
    """`(model, options)`: `model_file`, loaded when its options depend on
    its backbone, and the `export_for_serving` options that make it answer
    as the run in `model_dir` did, from the run's `config.yaml`: all of a
    fine-tuning run's, a pre-training run's `data.lower_case`. `lower_case`
    is resolved (the rule `predict` applies to None), so that a casing flag
    can be checked against it. Without a record, no options: the casing
    is inferred from the vocabulary."""
    from keras_bert.errors import ConfigError
    from keras_bert.file_io import is_file
    from keras_bert.finetuning.config import load_saved_config
    from keras_bert.runs.recipe import read_recipe
    from keras_bert.serving.serving_export import (
        finetuned_export_options,
        infer_lower_case,
        load_model,
    )

    config_path = os.path.join(model_dir, "config.yaml")
    if not is_file(config_path):
        return model_file, {}
    if os.path.basename(model_file) == "model.keras":
        _, config = load_saved_config(model_dir)
        model = load_model(model_file)
        options = finetuned_export_options(config, model.backbone)
        if options["lower_case"] is None and model.backbone.vocabulary:
            options["lower_case"] = infer_lower_case(model.backbone.vocabulary)
        return model, options
    lower_case = (read_recipe(config_path).get("data") or {}).get("lower_case")
    if not isinstance(lower_case, bool):
        raise ConfigError(
            f"{config_path}: data.lower_case must be true or false. Received: {lower_case!r}"
        )
    return model_file, {"lower_case": lower_case}


if __name__ == "__main__":
    sys.exit(main())
