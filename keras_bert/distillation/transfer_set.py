"""The transfer set: the sentences the teacher labels, and its labels, kept
as shards in the student's run folder.

The set is the task's training sentences (with their labels) and the
user's text files' lines (without), each once as it is and
`transfer.copies` times augmented (`augmentation`). Row `i` is made
from its source and its own seed alone, so any shard can be made again,
in any process: a labelling that was killed resumes at the first shard it
had not written, and a rerun with the same teacher, sentences and transfer
settings (another temperature, or another seed when there are no
augmented copies) labels nothing.

`<model_dir>/transfer_set/` holds `manifest.json` (what was labelled: a
fingerprint of the teacher, the sentences and the settings, the size, the
shard size and the teacher's outputs a sentence; and each shard written,
by its size and SHA-256) and `shard-NNNNN.tfrecord` files
(`pipelines.transfer_set`), each written whole or not at all; one that is
not as recorded is labelled again.
"""

import contextlib
import hashlib
import json
import logging
import math
import os
import signal
import threading
import time

import numpy as np
import tensorflow as tf

from keras_bert.distillation.augmentation import augmented_row
from keras_bert.distillation.inputs import is_glob, missing_text
from keras_bert.errors import FinetuneError
from keras_bert.file_io import (
    FILE_ERRORS,
    is_file,
    listdir,
    makedirs,
    remove,
    write_json_atomically,
)
from keras_bert.runtime.progress import StderrProgbar
from pipelines.text_files import read_text
from pipelines.transfer_set import write_shard

# A student's labelled transfer set, in its run folder: the run's, but
# kept when a rerun starts or fails (`DISTILLATION_RUN`), so that a
# labelling that was stopped resumes and a rerun of the same set labels
# nothing; the distillation reuses or replaces it by its manifest.
TRANSFER_SET = "transfer_set"

logger = logging.getLogger("keras_bert.distill")
MANIFEST = "manifest.json"
SHARDS = "shards"  # The manifest's record of each shard written: its size and SHA-256.


def expand_text_files(patterns):
    """The files `patterns` (paths or globs, `--text`'s) name, in order;
    one that names none is an error."""
    paths = []
    for pattern in patterns:
        if is_glob(pattern):
            found = sorted(tf.io.gfile.glob(pattern))
        else:
            found = [pattern] if is_file(pattern) else []
        if not found:
            raise missing_text(pattern)
        paths += found
    return paths


def read_text_file(path, kind):
    """The rows of `path`'s non-blank lines: with `kind` `"sentence"` a
    sentence a line; `"pair"` two a line, separated by a tab; `"words"`
    a tagged sentence's words a line, separated by white space."""
    try:
        # As every text file is read: a BOM (Notepad's) dropped, bytes not
        # UTF-8 named by their line.
        lines = read_text(path, lambda message: FinetuneError(f"--text {message}")).splitlines()
    except FILE_ERRORS as error:
        raise FinetuneError(f"--text {path}: cannot read: {error}") from None
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if kind == "words":
            rows.append({"words": line.split(), "labels": None})
        elif kind == "sentence":
            rows.append({"text_a": line.strip(), "text_b": None, "label": None})
        else:
            parts = line.split("\t")
            if len(parts) != 2 or not all(p.strip() for p in parts):
                raise FinetuneError(
                    f"--text {path}:{number}: a sentence-pair task takes two sentences a "
                    "line, separated by one tab"
                )
            rows.append({"text_a": parts[0].strip(), "text_b": parts[1].strip(), "label": None})
    if not rows:
        raise FinetuneError(f"--text {path}: holds no sentences (the transfer set takes its lines)")
    return rows


class TransferSet:
    """The transfer set's rows, made on demand.

    A row is a sentence or a pair (`text_a`, `text_b` None for a sentence,
    `label`: a class index, a score or None) or a tagged sentence (`words`,
    `labels`: a tag index a word, or None).

    Args:
        labelled: list of rows, from the task's training file.
        unlabelled: list of rows, from the text files.
        transfer: `TransferConfig`.
        seed: int. The augmentation's.
        replacer: `MaskedLmWords`, `NeighbourWords`,
            `MaskedLmAndNeighbourWords` or None. What replaces
            the words the augmentation marks (`transfer.replace_probability`).
    """

    def __init__(self, labelled, unlabelled, transfer, seed, replacer=None):
        self.sources = list(labelled) + list(unlabelled)
        self.transfer = transfer
        self.seed = seed
        self.replacer = replacer

    def __len__(self):
        return len(self.sources) * (1 + self.transfer.copies)

    def rows(self, start, stop):
        """Rows `start` to `stop` (exclusive), each a new dict: a source as
        it is, or an augmented copy of it (`augmented_row`, its marked words
        replaced by `replacer`'s)."""
        copies = 1 + self.transfer.copies
        rows, rngs = [], []
        for i in range(start, stop):
            source = self.sources[i // copies]
            rng = np.random.default_rng([self.seed, i])
            rows.append(augmented_row(source, rng, self.transfer) if i % copies else dict(source))
            rngs.append(rng)
        if self.replacer is not None:
            self.replacer.fill(rows, rngs)
        return rows

    def fingerprint(self):
        """A hash of the rows, the labels and what makes the copies."""
        digest = hashlib.sha256()
        settings = dict(vars(self.transfer))
        for speed in ("batch_size", "max_labelling_hours"):  # How fast, not what.
            settings.pop(speed)
        # Settings newer than sets labelled before them, at the value those
        # had: left out, so that those sets are still taken up.
        for key, before in (("replace_words", "all"), ("masked_lm_context", "copy")):
            if settings[key] == before:
                settings.pop(key)
        if self.transfer.copies:  # The seed makes the copies; without any, nothing.
            settings["seed"] = self.seed
        # The masked LM by its content, not by where it lies, and how
        # neighbours are found (the teacher, whose neighbours they are, is
        # in the manifest).
        settings["masked_lm"] = self.replacer and self.replacer.fingerprint
        digest.update(json.dumps(settings, sort_keys=True).encode())
        for source in self.sources:
            digest.update(json.dumps(source, sort_keys=True).encode())
        return digest.hexdigest()


def file_fingerprint(path):
    """The SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with tf.io.gfile.GFile(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def label_transfer_set(transfer_set, teacher, model_dir, progress=True):
    """Writes the teacher's outputs for every sentence of `transfer_set` as
    shards in `<model_dir>/transfer_set/`, keeping the shards a previous
    labelling of the same set by the same teacher wrote whole; returns the
    shard paths, in order.

    Ctrl-C (or SIGTERM) stops it between two batches, as a
    `KeyboardInterrupt`, the shards written so far kept.

    Args:
        transfer_set: `TransferSet`.
        teacher: `Teacher`.
        model_dir: str. The student's run folder.
        progress: bool. A progress bar with the sentences a second and the
            time left.
    """
    folder = os.path.join(model_dir, TRANSFER_SET)
    if tf.io.gfile.exists(folder) and not tf.io.gfile.isdir(folder):
        raise FinetuneError(
            f"{folder}: is a file, not a folder (the teacher's labels go there); move it away"
        )
    shard_size = transfer_set.transfer.shard_size
    size = len(transfer_set)
    labelled_set = {
        "teacher": teacher.fingerprint,
        "sentences": transfer_set.fingerprint(),
        "size": size,
        "shard_size": shard_size,
        "num_outputs": teacher.num_outputs,
    }
    paths = [
        os.path.join(folder, f"shard-{index:05d}.tfrecord")
        for index in range((size + shard_size - 1) // shard_size)
    ]
    manifest_path = os.path.join(folder, MANIFEST)
    manifest = _read_manifest(manifest_path)
    if manifest is None or {k: v for k, v in manifest.items() if k != SHARDS} != labelled_set:
        if tf.io.gfile.isdir(folder):
            logger.info("%s: labelled for another teacher or set; labelling again", folder)
            remove(folder)
        makedirs(folder)
        manifest = {**labelled_set, SHARDS: {}}
        write_json_atomically(manifest, manifest_path)
    for name in listdir(folder):
        if name.endswith(".partial"):  # A shard a killed labelling was writing.
            remove(os.path.join(folder, name))
    damaged = [
        path
        for path in paths
        if is_file(path) and not _as_written(path, manifest[SHARDS].get(os.path.basename(path)))
    ]
    if damaged:
        logger.warning(
            "%s: %s not as written (cut short or damaged); labelling again",
            folder,
            ", ".join(os.path.basename(path) for path in damaged),
        )
        for path in damaged:
            remove(path)
    todo = [i for i, path in enumerate(paths) if not is_file(path)]
    remaining = sum(min(size, (i + 1) * shard_size) - i * shard_size for i in todo)
    if remaining < size:
        logger.info(
            "Transfer set: %d of %d sentences labelled before (%s)%s",
            size - remaining,
            size,
            folder,
            "; labelling the rest" if remaining else "",
        )
    bar = (
        StderrProgbar(remaining, unit_name="sentence", stateful_metrics=["sentences/s"])
        if progress and remaining
        else None
    )
    start, done = time.time(), 0
    with _interrupts_between_batches() as stop_if_interrupted:
        for index in todo:
            shard_start = time.time()
            rows = transfer_set.rows(index * shard_size, min(size, (index + 1) * shard_size))
            # The teacher labels them in its own order (shortest first);
            # the shard keeps the rows'.
            for indices, outputs in teacher.batch_outputs(rows, transfer_set.transfer.batch_size):
                stop_if_interrupted()
                for i, values in zip(indices, outputs):
                    rows[i].update(values)
                done += len(outputs)
                if bar:
                    bar.update(done, [("sentences/s", done / max(time.time() - start, 1e-9))])
            write_shard(paths[index], rows)
            # After the shard: one written but not recorded (a kill in
            # between) is labelled again, never trusted.
            manifest[SHARDS][os.path.basename(paths[index])] = {
                **_written(paths[index]),
                "seconds": round(time.time() - shard_start, 1),
            }
            write_json_atomically(manifest, manifest_path)
            stop_if_interrupted()
            if index == todo[0] and len(todo) > 1:
                _estimate(done, time.time() - start, remaining - done, transfer_set.transfer)
    return paths


def labelling_seconds(model_dir):
    """The teacher's time labelling the transfer set in `model_dir`, summed
    over its shards (so over every run that labelled some of them: a
    labelling stopped and resumed costs what all its runs spent)."""
    manifest = _read_manifest(os.path.join(model_dir, TRANSFER_SET, MANIFEST)) or {SHARDS: {}}
    return sum(record.get("seconds", 0.0) for record in manifest[SHARDS].values())


def _estimate(done, seconds, left, transfer):
    """Says how long the `left` sentences will take to label at the speed
    measured on the first shard (its sentences of every length, the
    teacher warmed up on them), and stops, as a `FinetuneError` and with
    that shard kept, when it is over `transfer.max_labelling_hours`: a
    set of copies on a slow machine is hours of labelling, and no one
    should start twenty of them by accident."""
    rate = done / max(seconds, 1e-9)
    hours = left / rate / 3600
    logger.info(
        "Transfer set: %d sentences left to label at %.0f sentences/s (measured on the first "
        "shard): about %s on this machine",
        left,
        rate,
        duration(hours),
    )
    if hours > transfer.max_labelling_hours:
        raise FinetuneError(
            f"labelling the transfer set's {left:,} sentences left would take about {hours:.1f} "
            f"hours at the {rate:.0f} sentences/s measured on its first shard, over "
            f"distillation.transfer.max_labelling_hours={transfer.max_labelling_hours:g}; the "
            "shard labelled is kept: pass --set distillation.transfer.max_labelling_hours="
            f"{math.ceil(hours)} to go on, or make the set smaller (fewer copies or --text lines)"
        )


def duration(hours):
    """`hours` as a person reads it: minutes under two hours, else hours.

    >>> duration(0.004), duration(0.75), duration(7.25)
    ('under a minute', '45 minutes', '7.2 hours')
    """
    if hours >= 2:
        return f"{hours:.1f} hours"
    minutes = round(hours * 60)
    return f"{minutes} minutes" if minutes >= 1 else "under a minute"


def _written(path):
    """What the manifest records of a shard: its size and content."""
    return {"bytes": tf.io.gfile.stat(path).length, "sha256": file_fingerprint(path)}


def _as_written(path, record):
    """Whether the shard at `path` is the one the manifest `record`s. A
    shard cut short or damaged would fail training with a
    `DataLossError` (and again on every rerun); its size says so at once,
    its hash otherwise, for a read of the set that costs less than an
    epoch's."""
    return (
        record is not None
        and tf.io.gfile.stat(path).length == record["bytes"]
        and file_fingerprint(path) == record["sha256"]
    )


@contextlib.contextmanager
def _interrupts_between_batches():
    """Yields `stop_if_interrupted`, which raises `KeyboardInterrupt` once
    Ctrl-C or SIGTERM has come: inside, their handlers only take note, of
    the first signal and of a second alike.

    Python raises `KeyboardInterrupt` wherever the main thread is; under
    JAX that is often jaxlib's garbage-collection callback, which prints
    and drops it, and labelling went on. Off the main thread, where no
    handler can be set, the signals keep their own handlers.
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    received = []

    def note(signum, frame):
        received.append(signum)

    def stop_if_interrupted():
        if received:
            raise KeyboardInterrupt

    previous = {signum: signal.signal(signum, note) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop_if_interrupted
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    stop_if_interrupted()  # One that came after the last look.


def _read_manifest(path):
    if not is_file(path):
        return None
    try:
        with tf.io.gfile.GFile(path) as f:
            return json.load(f)
    except (*FILE_ERRORS, ValueError):
        return None
