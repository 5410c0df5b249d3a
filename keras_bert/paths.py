"""Where the checkout's bundled files are, from any working directory.

keras_bert runs from a checkout (`pip install -e .`, as `make` does): the
YAML recipes in `configs/` and the corpus and vocabulary in `data/` sit
beside the packages, not inside them, as the design card lays them out.

It also spells the paths the commands are given one way (`normal_path`),
so that a name derived from one (the `.hf.lock` beside `hf`) is the same
however it was typed.
"""

import argparse
import glob
import os
from pathlib import Path

from pipelines.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
DATA = ROOT / "data"


def bundled(path):
    """`path` as given when it exists or is absolute or remote; a relative
    path that names one of the checkout's own files (the defaults
    `data/corpus/*/*.txt`, `data/vocab/bert_uncased_vocab.txt`) resolved
    against the checkout, so a run started elsewhere finds them."""
    path = os.fspath(path)
    if "://" in path or os.path.isabs(path) or Path(path).parts[:1] != ("data",):
        return path
    if any(Path().glob(path)) or not any(ROOT.glob(path)):
        return path
    return str(ROOT / path)


def normal_path(path):
    """`path` spelt one way: `~` expanded, `.` and `..` parts collapsed and
    trailing separators dropped (`~/runs/./hf/` is `/home/me/runs/hf`). A
    URL (`gs://bucket/dir/`) loses its trailing slashes only; an empty
    path stays empty rather than become the current folder."""
    path = os.fspath(path)
    scheme, sep, rest = path.partition("://")
    if sep:
        return scheme + sep + (rest.rstrip("/") or rest)
    return os.path.normpath(os.path.expanduser(path)) if path else path


def file_output(path):
    """`normal_path` for a flag naming a file to write: a trailing
    separator says the user means a folder, so it is refused here, before
    any work, rather than dropped (`output_guard.check_output` refuses it too,
    for callers from Python)."""
    if path.endswith(("/", os.sep)):
        raise argparse.ArgumentTypeError(
            f"{path}: ends in a separator, so names a folder; give a file name"
        )
    return normal_path(path)


class PathFlag(argparse.Action):
    """A flag naming a path: `argparse`'s store, its value parsed by
    `normal_path` (or the `type=` given), and given once. A second value
    for the same destination (the flag twice, or a flag and its former
    name, `--output` with `--output_dir`) is a usage error, where
    `argparse` would keep the last one silently."""

    def __init__(self, option_strings, dest, type=normal_path, **kwargs):
        super().__init__(option_strings, dest, type=type, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        # `argparse` itself tells an unset value by its identity with the default.
        given = getattr(namespace, self.dest)
        if given is not self.default:
            raise argparse.ArgumentError(self, f"{given} and {values} both given; give one")
        setattr(namespace, self.dest, values)


def refuse_overlap(outputs, inputs, inside=(), holding=()):
    """Raises a `UserError` when a path a command writes (`outputs`) is one
    of the paths it reads (`inputs`), holds one, or lies inside one: the
    output would replace or mix with what it is made from (a student
    written over its teacher's folder). Each path is resolved once, links
    followed (a hard link is the file it links); a glob stands for the
    files it matches.

    Args:
        outputs: dict of flag to path (None: not given).
        inputs: dict of flag to a path, a list of paths or globs, or None.
        inside: pairs `(output flag, input flag)` where the output may lie
            inside the input (`predict` writes into the run folder it reads).
        holding: pairs where the output may hold the input (`finetune`
            continues from `<model_dir>/model.keras`). The same path is
            refused all the same.
    """
    read = [
        (flag, path, _resolved(path))  # A glob is named by the file it matched.
        for flag, value in inputs.items()
        for given in ([value] if isinstance(value, str) else value or [])
        for path in _expanded(given)
    ]
    for out_flag, output in outputs.items():
        if not output:
            continue
        written = _resolved(output)
        for in_flag, given, path in read:
            if written == path or _same_inode(written, path):
                how = "is"
            elif _inside(path, written) and (out_flag, in_flag) not in holding:
                how = "holds"
            elif _inside(written, path) and (out_flag, in_flag) not in inside:
                how = "lies inside"
            else:
                continue
            raise UserError(
                f"{out_flag} {output}: {how} the input {in_flag} {given}; write the output "
                "elsewhere (it would replace or mix with what it is made from)"
            )


def refuse_output_over_run(output, model_dir, input_file):
    """`refuse_overlap` for `predict` and `evaluate`: `--output` may lie
    inside the run folder they read (their default is there; the run's own
    files are `output_guard.check_output`'s to protect), never be it or
    their `--input`."""
    refuse_overlap(
        {"--output": output},
        {"--model_dir": model_dir, "--input": input_file},
        inside={("--output", "--model_dir")},
    )


def _expanded(pattern):
    """The local files a glob matches (the pattern itself when none)."""
    if "://" in pattern or not any(c in pattern for c in "*?["):
        return [pattern]
    return glob.glob(os.path.expanduser(pattern), include_hidden=True) or [pattern]


def _resolved(path):
    """`path` spelt one way: a local one with its links followed."""
    path = normal_path(path)
    return path if "://" in path else os.path.realpath(path)


def _same_inode(a, b):
    """Two local names of one file (a hard link)."""
    try:
        return "://" not in a and os.path.samefile(a, b)
    except OSError:  # Either does not exist (yet).
        return False


def _inside(path, folder):
    return path.startswith(folder.rstrip("/") + "/")
