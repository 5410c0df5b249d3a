"""Where the checkout's bundled files are, from any working directory.

keras_bert runs from a checkout (`pip install -e .`, as `make` does): the
YAML recipes in `configs/` and the corpus and vocabulary in `data/` sit
beside the packages, not inside them, as the design card lays them out.

It also spells the paths the commands are given one way (`normal_path`),
so that a name derived from one (the `.hf.lock` beside `hf`) is the same
however it was typed.
"""

import argparse
import os
from pathlib import Path

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
