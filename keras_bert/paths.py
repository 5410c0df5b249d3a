"""Where the checkout's bundled files are, from any working directory.

keras_bert runs from a checkout (`pip install -e .`, as `make` does): the
YAML recipes in `configs/` and the corpus and vocabulary in `data/` sit
beside the packages, not inside them, as the design card lays them out.
"""

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
