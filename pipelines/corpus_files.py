"""Corpus files: the patterns expanded and checked (`list_files`), and the
held-out split (`split_files`). Reading documents from them is
`pipelines.corpus`.

Files are checked eagerly: a pattern that matches nothing is an error
naming the pattern; empty files are skipped with a warning that counts and
names them; if nothing is left, an error; a text file that is not UTF-8 is
an error naming its line (`pipelines.text_files`). A file that cannot be
listed or read (an unreachable `gs://`, a scheme without its plugin) is one
`CorpusError` naming the path.
"""

import contextlib
import functools
import hashlib
import logging
import os
import typing
import unicodedata

import tensorflow as tf

from pipelines.errors import CorpusError
from pipelines.text_files import open_text

logger = logging.getLogger(__name__)

CORPUS_FORMATS = ("sentences", "text", "lines", "tfrecord")


class FileRange(typing.NamedTuple):
    """Part of a corpus file: bytes `[start, end)` of a text file (both at
    line starts), records `[start, end)` of a TFRecord file. `split_files`
    makes them where no whole file can be held out; everything that takes
    corpus files takes them too."""

    path: str
    start: int
    end: int


def _path(file):
    return file.path if isinstance(file, FileRange) else file


@contextlib.contextmanager
def _reading(path):
    """Turns a failed file operation on `path` (an unreachable `gs://`, a
    scheme without its file system plugin, a folder not permitted) into one
    `CorpusError` naming the path, raised before the graph is built."""
    try:
        yield
    except (OSError, tf.errors.OpError) as error:
        reason = (getattr(error, "message", None) or str(error)).strip().splitlines()[0]
        if isinstance(error, tf.errors.UnimplementedError) and "://" in path:
            scheme = path.split("://")[0]
            reason += f" (no file system plugin for {scheme}:// is loaded)"
        raise CorpusError(f"Cannot read corpus files {path!r}: {reason}") from None


def _expand(file_pattern):
    patterns = (
        [file_pattern]
        if isinstance(file_pattern, (str, os.PathLike, FileRange))
        else list(file_pattern)
    )
    if not patterns:
        raise CorpusError("No file pattern given. Received: file_pattern=[]")
    files = []
    for pattern in patterns:
        if isinstance(pattern, FileRange):  # Checked by `split_files`.
            files.append(pattern)
            continue
        pattern = os.fspath(pattern)
        with _reading(pattern):
            matched = (
                sorted(tf.io.gfile.glob(pattern))
                if any(c in pattern for c in "*?[")
                else ([pattern] if tf.io.gfile.exists(pattern) else [])
            )
            matched = [f for f in matched if not tf.io.gfile.isdir(f)]
        if not matched:
            raise CorpusError(
                f"No corpus file matches {pattern!r}. Received: file_pattern={file_pattern!r}"
            )
        files.extend(matched)
    # Keep the first occurrence of each file; order is the sorted glob order.
    return list(dict.fromkeys(files))


# Text files up to this size are read at start-up to spot blank ones.
_BLANK_CHECK_BYTES = 1 << 20


def _is_blank(path, corpus_format):
    """Whether a file is empty, or a small text file that tokenizes to
    nothing: whitespace and the characters BERT's tokenizer deletes
    (control and format characters such as zero-width spaces, U+FFFD)."""
    size = tf.io.gfile.stat(path).length
    if size == 0:
        return True
    if corpus_format == "tfrecord" or size > _BLANK_CHECK_BYTES:
        return False
    with tf.io.gfile.GFile(path, "rb") as f:
        text = f.read().decode("utf-8", "ignore")
    return all(
        c.isspace() or c == "\ufffd" or unicodedata.category(c) in ("Cc", "Cf") for c in text
    )


@functools.lru_cache(maxsize=None)
def _check_utf8(path, length, mtime_nsec):
    """Raises `CorpusError` naming the first line of `path` that is not
    UTF-8, where the graph would silently drop its bytes (every accented
    letter of a Latin-1 file). Read in pieces, never whole; once per
    `length` and `mtime_nsec` (a pre-training start lists its corpus up to
    three times). A byte-order mark needs nothing: the tokenizer deletes
    U+FEFF, a format character, as the original's `_clean_text` does, so a
    file reads the same with or without one."""
    with open_text(path, CorpusError) as f:
        while f.read(1 << 20):
            pass


def _looks_binary(path):
    """A NUL byte in the first KiB: no text file has one, binaries do."""
    with tf.io.gfile.GFile(path, "rb") as f:
        return b"\x00" in f.read(1024)


def list_files(file_pattern, corpus_format="sentences"):
    """Expands globs into a sorted, validated list of corpus files.

    Args:
        file_pattern: str or list of str, file paths or globs.
        corpus_format: one of `CORPUS_FORMATS`.

    Returns:
        A list of file paths. Empty files, and text files of at most 1 MiB
        holding only whitespace, are left out with a warning that names them.
        (A larger blank file is read and yields no document.) A text file
        that looks binary (NUL bytes, yet UTF-8) is kept, with a warning
        that names it.

    Raises:
        CorpusError: a pattern matches no file, every file is empty, a text
            file is not UTF-8 (file and line named), or a file cannot be
            listed or read (the message names the path).
    """
    if corpus_format not in CORPUS_FORMATS:
        raise CorpusError(
            f"`corpus_format` must be one of {CORPUS_FORMATS}. Received: "
            f"corpus_format={corpus_format!r}"
        )
    files = _expand(file_pattern)
    empty = []
    for f in files:
        with _reading(_path(f)):
            if not isinstance(f, FileRange) and _is_blank(f, corpus_format):
                empty.append(f)
    if empty:
        logger.warning(
            "Skipping %d empty or blank corpus file(s): %s",
            len(empty),
            ", ".join(empty[:10]) + (" ..." if len(empty) > 10 else ""),
        )
    files = [f for f in files if f not in set(empty)]
    if not files:
        raise CorpusError(
            f"Every corpus file matching {file_pattern!r} is empty or blank: "
            f"{', '.join(empty[:10])}"
        )
    if corpus_format != "tfrecord":
        for f in files:
            with _reading(_path(f)):
                # A `FileRange` is checked by `split_files`; a remote file
                # is not read ahead (a start-up would download the corpus),
                # and its bytes that are not UTF-8 become [UNK]s.
                if not isinstance(f, FileRange) and "://" not in f:
                    stat = tf.io.gfile.stat(f)
                    _check_utf8(f, stat.length, stat.mtime_nsec)
                # Read anyway (its bytes become [UNK]s and stray pieces), but said.
                binary = _looks_binary(_path(f))
            if binary:
                logger.warning(
                    "Corpus file %s looks binary (NUL bytes in its first KiB), "
                    "not %s text; check --input.",
                    _path(f),
                    corpus_format,
                )
    return files


def split_files(file_pattern, holdout_fraction=0.05, *, seed=0, corpus_format="sentences"):
    """Splits a corpus into training and held-out parts by size.

    Whole files are held out where they can be, so that no held-out
    sentence is ever paired with a training one: files are taken in an
    order set by a hash of their base name and `seed` (the same on every
    machine, and files stay put when others are added), each one held out
    if that brings the held-out share of the bytes nearer
    `holdout_fraction` without giving it the majority. Where no whole file
    can be (a single file, or files each too large), a stretch of
    `holdout_fraction` of every file, at a place set by the seed and cut
    at line starts (records in TFRecord files), is held out instead, and
    the rest of the file trains (`FileRange`s). One INFO line reports the
    split. The same files and seed give the same split, so a resumed run
    evaluates on the same text.

    Args:
        file_pattern: str or list of str, globs.
        holdout_fraction: float in (0, 1), the share of the corpus held out.
        seed: int, changes what is held out.
        corpus_format: as in `list_files`.

    Returns:
        `(train_files, heldout_files)`, two lists of paths or `FileRange`s;
        pass either as `file_pattern` to `pretraining_dataset`.

    Raises:
        CorpusError: nothing can be held out (a corpus of one line).

    Example:

    >>> train, heldout = split_files("data/corpus/*/*.txt", 0.05)
    >>> len(train), len(heldout)
    (122, 11)

    Either part then feeds `pretraining_dataset`:

        ds = pretraining_dataset(train, "data/vocab/bert_uncased_vocab.txt",
                                 corpus_format="text")
    """
    if not 0.0 < holdout_fraction < 1.0:
        raise ValueError(
            f"`holdout_fraction` must be in (0, 1). Received: holdout_fraction={holdout_fraction}"
        )
    files = list_files(file_pattern, corpus_format)
    unit = "records" if corpus_format == "tfrecord" else "bytes"
    sizes = {f: _size(f, corpus_format) for f in files}
    total = sum(sizes.values())
    target = holdout_fraction * total

    def key(path):
        name = f"{seed}:{os.path.basename(path)}".encode("utf-8")
        return hashlib.sha256(name).hexdigest(), path

    heldout, held = set(), 0
    for f in sorted(files, key=key):
        if held + sizes[f] / 2 <= target and 2 * (held + sizes[f]) < total:
            heldout.add(f)
            held += sizes[f]
    if heldout:
        train = [f for f in files if f not in heldout]
        logger.info(
            "Held-out split: %d of %d files (%s %s, %.1f%%) held out, %d files (%s %s) train.",
            len(heldout),
            len(files),
            f"{held:,}",
            unit,
            100 * held / total,
            len(train),
            f"{total - held:,}",
            unit,
        )
        return train, [f for f in files if f in heldout]

    train, heldout = [], []
    for f in files:
        start, end = _held_out_stretch(f, sizes[f], holdout_fraction, seed, corpus_format)
        if start == end:
            train.append(f)
            continue
        heldout.append(FileRange(f, start, end))
        held += end - start
        train += [FileRange(f, a, b) for a, b in ((0, start), (end, sizes[f])) if a < b]
    if not heldout:
        raise CorpusError(
            f"Cannot hold out {holdout_fraction:.0%} of {file_pattern!r}: no file holds "
            f"enough lines ({', '.join(files[:3])}); give data.eval_files."
        )
    logger.info(
        "Held-out split: no whole file is near %.0f%% of the text, so a stretch of "
        "each of %d file(s) is held out: %s %s (%.1f%%) held out, %s %s train.",
        100 * holdout_fraction,
        len(heldout),
        f"{held:,}",
        unit,
        100 * held / total,
        f"{total - held:,}",
        unit,
    )
    return train, heldout


def _size(path, corpus_format):
    """Bytes of a text file, records of a TFRecord file."""
    with _reading(path):
        if corpus_format != "tfrecord":
            return tf.io.gfile.stat(path).length
        return int(tf.data.TFRecordDataset(path).reduce(0, lambda n, _: n + 1))


def _held_out_stretch(path, size, holdout_fraction, seed, corpus_format):
    """`[start, end)` of `path` to hold out: `holdout_fraction` of its
    `size`, at a place set by a hash of `seed` and its name, moved to line
    starts in a text file; `start == end` when that leaves nothing, or the
    whole file."""
    length = round(holdout_fraction * size)
    name = f"{seed}:{os.path.basename(path)}".encode("utf-8")
    start = int(hashlib.sha256(name).hexdigest(), 16) % (size - length + 1)
    end = start + length
    if corpus_format != "tfrecord":
        with _reading(path), tf.io.gfile.GFile(path, "rb") as f:
            start, end = (_line_start(f, offset, size) for offset in (start, end))
    if end - start in (0, size):
        return 0, 0
    return start, end


def _line_start(f, offset, size):
    """The first line start at or after byte `offset` of the open file `f`."""
    if offset in (0, size):
        return offset
    f.seek(offset - 1)
    position = offset - 1
    while position < size:
        chunk = f.read(1 << 16)
        newline = chunk.find(b"\n")
        if newline >= 0:
            return position + newline + 1
        position += len(chunk)
    return size
