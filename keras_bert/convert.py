"""`python -m keras_bert.convert --input SRC --output DST`: convert a BERT checkpoint.

The two paths may also be given by position (`convert SRC DST`), the
command's first spelling, or one by flag and the other by position
(`--input SRC DST`, `--output DST SRC`).

SRC: an original Google checkpoint (`bert_model.ckpt` prefix or its folder,
with `bert_config.json` and `vocab.txt` beside it), a Hugging Face folder
(`config.json` + `model.safetensors`), a keras-hub `BertBackbone`
(`.keras`, `.weights.h5` or preset folder) or a keras_bert `.keras`.
DST: `*.keras` for keras_bert, any other path for a Hugging Face folder.

Fine-tuned models: a keras_bert fine-tuning run folder (what
`python -m keras_bert.finetune` writes) converts to the transformers folder of its head
(BertForSequenceClassification, BertForTokenClassification,
BertForQuestionAnswering, BertForMultipleChoice), and such a folder to a
run folder that predict, evaluate, export and distill take; `--task` names
its task (default: the head's usual one).

From Python, `convert(src, dst)` takes every source the command takes: a
checkpoint goes to the format layer (`conversion.converter.convert`), a
fine-tuned model to the run layer above it
(`finetuning.transformers_runs.convert_fine_tuned`).
"""

import argparse
import os
import sys

from keras_bert.finetuning.task_registry import TASKS
from keras_bert.paths import PathFlag, normal_path, refuse_overlap
from keras_bert.runtime.command import run_command
from keras_bert.runtime.console import add_verbose_argument


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m keras_bert.convert",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "src", nargs="?", type=normal_path, metavar="SRC", help="the checkpoint to read (--input)"
    )
    parser.add_argument(
        "dst",
        nargs="?",
        type=normal_path,
        metavar="DST",
        help="model.keras, a Hugging Face folder, or a fine-tuning run folder (--output)",
    )
    parser.add_argument("--input", action=PathFlag, metavar="SRC", help="the checkpoint to read")
    parser.add_argument(
        "--output",
        action=PathFlag,
        metavar="DST",
        help="model.keras, a Hugging Face folder, or a fine-tuning run folder, to write",
    )
    heads = parser.add_mutually_exclusive_group()
    # The hyphenated spellings came first; every other flag is snake_case.
    heads.add_argument(
        "--with_heads",
        "--with-heads",
        dest="heads",
        action="store_const",
        const=True,
        help="always write both pre-training heads (initialise missing ones)",
    )
    heads.add_argument(
        "--without_heads",
        "--without-heads",
        dest="heads",
        action="store_const",
        const=False,
        help="write the encoder only, dropping any heads",
    )
    parser.add_argument(
        "--vocab", action=PathFlag, help="vocab.txt to carry instead of the source's"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing DST")
    parser.add_argument(
        "--task",
        choices=sorted(TASKS),
        help="a fine-tuned transformers SRC: the fine-tuning task of the run written "
        "(default: classification, regression, conll2003 or swag by the head; "
        "squad_v1 or squad_v2 must be named)",
    )
    parser.add_argument(
        "--hidden_activation",
        metavar="{gelu,gelu_approximate}",
        help="the GELU the checkpoint was trained with: gelu (erf; "
        "BERT-Base/Large) or gelu_approximate (tanh; google-research/bert "
        "from Feb 2019 on, e.g. the compact 2020 models). Default: the "
        "source config's, where 'gelu' reads as erf",
    )
    add_verbose_argument(parser)
    args = parser.parse_args(argv)
    source, target = _paths(parser, args)

    def convert_checkpoint():
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        report = convert(
            source,
            target,
            heads=args.heads,
            vocab=args.vocab,
            overwrite=args.overwrite,
            hidden_activation=args.hidden_activation,
            task=args.task,
        )
        print("\n".join(report))

    return run_command(
        convert_checkpoint,
        output=target,
        check=lambda: refuse_overlap(
            {"--output": target}, {"--input": source, "--vocab": args.vocab}
        ),
        verbose=args.verbose,
    )


def convert(src, dst, heads=None, vocab=None, overwrite=False, hidden_activation=None, task=None):
    """Converts `src` and writes it to `dst`: a checkpoint as
    `conversion.converter.convert` does, a fine-tuned model (a fine-tuning
    run folder, or a transformers folder of a task head's class) as
    `finetuning.transformers_runs.convert_fine_tuned` does; the arguments
    are theirs. `task` names the task of the run a fine-tuned transformers
    folder becomes, and is refused for any other source.

    Returns:
        The report: a list of lines.

    Raises:
        CheckpointError: for a bad source, config, weights, option or
            destination.
        FinetuneError: for a fine-tuning run folder that `predict` would
            refuse.
    """
    from keras_bert.conversion import converter
    from keras_bert.conversion.task_head import ARCHITECTURES
    from keras_bert.errors import CheckpointError
    from keras_bert.finetuning.transformers_runs import convert_fine_tuned, source_kind

    src, dst = normal_path(src), normal_path(dst)
    converter.check_request(src, dst, vocab, hidden_activation)
    options = {
        "heads": heads,
        "vocab": vocab,
        "overwrite": overwrite,
        "hidden_activation": hidden_activation,
    }
    kind = source_kind(src)
    if kind is not None:
        return convert_fine_tuned(src, dst, kind, task=task, **options)
    if task is not None:
        raise CheckpointError(
            f"--task {task}: names the task of a fine-tuned transformers folder "
            f"({', '.join(ARCHITECTURES)}); {src} is none"
        )
    return converter.convert(src, dst, **options)


def _paths(parser, args):
    """`(SRC, DST)`, each given once: by its flag, or by position in the
    order of the paths the flags leave out, so that `--input SRC DST`
    reads as `--output DST SRC` does."""
    flags = {"--input": args.input, "--output": args.output}
    # argparse fills the positionals in order: DST only after SRC.
    positional = [path for path in (args.src, args.dst) if path is not None]
    left_out = [flag for flag, path in flags.items() if path is None]
    if len(positional) > len(left_out):
        given = [f"{flag} {path}" for flag, path in flags.items() if path is not None]
        parser.error(
            f"{', '.join(given + positional)}: {len(given + positional)} paths for SRC and "
            "DST; give the paths as --input SRC --output DST, or as SRC DST"
        )
    flags.update(zip(left_out, positional))
    for flag, name in (("--input", "SRC"), ("--output", "DST")):
        if flags[flag] is None:
            parser.error(f"{flag} {name} is required (or {name} by position)")
    return flags["--input"], flags["--output"]


if __name__ == "__main__":
    sys.exit(main())
