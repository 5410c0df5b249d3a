"""How `python -m keras_bert.predict` writes a task's predictions: each
task handler names its format (`FinetuningTask.prediction_format`).

Every file is written whole or not at all (`file_io.write_atomically`).
"""

import dataclasses
import json
import os
import typing

from keras_bert.file_io import write_atomically, write_jsonl_atomically


@dataclasses.dataclass(frozen=True)
class PredictionFormat:
    """A predictions file: its extension, the writer and the files written
    beside it.

    Attributes:
        extension: str. The default file's extension (`predictions_<input
            stem><extension>` in the run folder).
        write: callable `(rows, path) -> dict` of what it wrote (`output`,
            and any companion by name); `rows` are `predict`'s dicts.
        companions: callable `path -> list of paths` written beside `path`
            (checked, like `path`, before anything is predicted).
    """

    extension: str
    write: typing.Callable[[list, str], dict]
    companions: typing.Callable[[str], list] = lambda path: []


def _write_jsonl(rows, path):
    write_jsonl_atomically(rows, path)
    return {"output": path}


def _write_conll(rows, path):
    def write(f):
        for row in rows:
            f.write("".join(f"{w} {t}\n" for w, t in zip(row["words"], row["tags"])))
            f.write("\n")

    write_atomically(path, write)
    return {"output": path}


def _offsets_path(path):
    return os.path.splitext(path)[0] + ".offsets.jsonl"


def _write_squad(rows, path):
    offsets = _offsets_path(path)
    _write_jsonl(rows, offsets)
    write_atomically(
        path,
        lambda f: json.dump(
            {row["id"]: row["answer"] for row in rows}, f, ensure_ascii=False, indent=1
        ),
    )
    return {"output": path, "offsets": offsets}


# One JSON object a line: every field of `predict`'s rows.
JSON_LINES = PredictionFormat(".jsonl", _write_jsonl)
# CoNLL-2003's layout: "word tag" a line, a blank line after each sentence.
CONLL = PredictionFormat(".txt", _write_conll)
# The official SQuAD evaluation script's {id: answer} JSON, with each
# answer's character offsets in `<stem>.offsets.jsonl`.
SQUAD = PredictionFormat(".json", _write_squad, lambda path: [_offsets_path(path)])
