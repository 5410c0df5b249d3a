"""Files at any path TensorFlow's file system layer knows: local paths,
`gs://` (Cloud TPU workers read and write through Cloud Storage), `s3://`
or `hdfs://` where a plugin provides them, and the in-memory `ram://`.

What a reader can see of a write in progress:

- A file written with `write_atomically` is filled under a temporary name
  and renamed into place. A local rename is atomic. An object store
  renames by copying to the new name and deleting the old, and an object
  appears whole or not at all, so there too the final name only ever holds
  a complete file.
- A directory filled inside `atomic_directory` is moved into place. Locally
  that is one rename: the directory appears complete or not at all. Object
  stores have no directories to rename (and `ram://` renames only the
  directory's own entry, not its files), so there its files move one at a
  time, each appearing whole, and the file that marks the directory
  complete (`last`) moves last: a reader that looks for it first never
  takes a partial directory for a finished one.
"""

import contextlib
import errno
import json
import os
import posixpath
import re
import shutil
import stat
import tempfile
import uuid
import zipfile

import tensorflow as tf

# What a failed file operation raises: `os` calls raise OSError, the
# TensorFlow file system layer a `tf.errors.OpError`.
FILE_ERRORS = (OSError, tf.errors.OpError)


def is_local(path):
    """Whether `path` names the local file system, where a rename is atomic
    and `O_EXCL` creates a file exclusively. `file://` paths count as
    remote: they work, with the weaker guarantees."""
    return "://" not in os.fspath(path)


def error_reason(error):
    """The system's words for a failed file operation (an OSError's
    `strerror`, a TensorFlow error's message), on one line: a remote file
    system's message spans lines ("...\n\t when reading metadata of ...")."""
    reason = getattr(error, "strerror", None) or getattr(error, "message", None) or str(error)
    if isinstance(error, _REMOTE_TF_ERRORS) and "://" in reason:
        return _unreachable(reason)
    return " ".join(reason.split())


# What `os` raises for a path the user named that cannot be used: missing,
# a folder where a file was wanted (or the reverse), not permitted, read-only.
_USER_OS_ERRORS = (
    FileNotFoundError,
    FileExistsError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
)
_USER_ERRNOS = (errno.EROFS, errno.ENAMETOOLONG, errno.ELOOP)
# TensorFlow's file system layer says the same in its messages, which
# start with the path ("/x; No such file or directory").
_USER_TF_REASONS = (
    "No such file or directory",
    "Could not find directory",
    "Is a directory",
    "Not a directory",
    "Permission denied",
    "Read-only file system",
    "not implemented (file: ",  # An unknown scheme: "File system scheme 'x' ..."
)


def user_file_error(error):
    """One line for a file operation that failed on the user's path (not
    found, a folder, not permitted, an unknown scheme), naming the path; None
    for any other error. An `OSError` made with a message only (raised by
    keras_bert for a path it checked) is its message."""
    if isinstance(error, _USER_OS_ERRORS) or (
        isinstance(error, OSError) and error.errno in _USER_ERRNOS
    ):
        return str(error)
    if isinstance(error, tf.errors.OpError):
        message = (error.message or "").strip()
        if any(reason in message for reason in _USER_TF_REASONS):
            return _REMOTE_PATH.sub(
                lambda match: _named_by_the_user(match.group()), message.splitlines()[0]
            )
        if isinstance(error, _REMOTE_TF_ERRORS) and "://" in message:
            return _unreachable(message)
    return None


# What TensorFlow's file system layer raises for a remote path it cannot
# use: a bucket it cannot reach or resolve, credentials refused, a timeout.
_REMOTE_TF_ERRORS = (
    tf.errors.FailedPreconditionError,
    tf.errors.UnavailableError,
    tf.errors.UnauthenticatedError,
    tf.errors.PermissionDeniedError,
    tf.errors.DeadlineExceededError,
)


def _unreachable(message):
    """One line from a remote file system's message: the path, then why
    ("Error executing an HTTP request: libcurl code 6 ..., error details:
    Could not resolve host: ...\n\t when reading metadata of gs://b/f"
    becomes "gs://b/f: cannot be reached (Could not resolve host: ...)").
    """
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    where = next((w.rsplit(" ", 1)[-1] for w in reversed(lines) if "://" in w), "")
    where = _named_by_the_user(where)
    detail = lines[0].split("error details:")[-1].strip() if lines else message
    return f"{where}: cannot be reached ({detail})" if where else " ".join(lines)


_REMOTE_PATH = re.compile(r"\w+://[^\s'\"]+")


def _named_by_the_user(path):
    """`path` without keras_bert's own files in it: they are hidden
    (`.previous-run.json`, a `.lock`, a `.<name>.<random>.partial`), and
    the folder the user named is what an error reports."""
    while posixpath.basename(path).startswith("."):
        path = posixpath.dirname(path)
    return path


def is_file(path):
    return tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path)


def is_dir(path):
    """Whether `path` is a folder. Where `tf.io.gfile.isdir` says False for
    a file system it cannot reach (an unreachable `gs://`), this raises its
    error, which the commands word as "cannot be reached"."""
    if tf.io.gfile.isdir(path):
        return True
    tf.io.gfile.exists(path)
    return False


def same_file(a, b):
    """Whether paths `a` and `b` name one file: through any spelling, a
    symlink, a hard link or a mount seen under two names locally; by
    normalised path on a remote file system."""
    if is_local(a) and is_local(b):
        if os.path.realpath(a) == os.path.realpath(b):
            return True
        try:
            return os.path.samefile(a, b)
        except OSError:
            return False
    return normalized(a) == normalized(b)


def normalized(path):
    """`path` with `.`, `..` and doubled separators resolved, scheme kept."""
    scheme, sep, rest = os.fspath(path).partition("://")
    return scheme + sep + posixpath.normpath(rest) if sep else posixpath.normpath(scheme)


def listdir(path):
    """Names in the directory `path`. Object stores list a sub-directory
    as `name/`; the slash is dropped, as a local listing has none."""
    return [name.rstrip("/") for name in tf.io.gfile.listdir(path)]


def makedirs(path):
    """Creates `path` and its parents if missing; returns whether `path`
    was missing (`removed_if_left_empty` takes it).

    Local paths go through `os`: TensorFlow creates local directories
    0755 whatever the umask says, and its errors carry no errno."""
    created = not tf.io.gfile.isdir(path)
    if is_local(path):
        os.makedirs(path, exist_ok=True)
    else:
        tf.io.gfile.makedirs(path)
    return created


@contextlib.contextmanager
def removed_if_left_empty(path, created):
    """A `with` block after which the folder `path`, when `created` for it
    (`makedirs`) and still empty, is removed if the block fails: a first
    run or export that failed before writing anything leaves no folder."""
    try:
        yield
    except BaseException:
        if created and tf.io.gfile.isdir(path) and not listdir(path):
            remove(path)
        raise


def remove(path, ignore_errors=False):
    """Removes the file or directory tree at `path`, if there is one, and
    never anything outside it: a link (`path` itself, or one inside the
    tree) is unlinked, never followed.

    Local paths go through `os` and `shutil.rmtree`, which unlink links;
    TensorFlow's `rmtree` follows a link to a folder and empties its
    target. Object stores have no links."""
    try:
        if not is_local(path):
            if tf.io.gfile.exists(path):
                tf.io.gfile.rmtree(path)  # A plain object too.
        elif os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)  # A file, a link, a FIFO.
    except FILE_ERRORS:
        if not ignore_errors:
            raise


def move(source, target):
    """Renames a file or folder; on an object store, file by file."""
    if is_local(source):
        os.rename(source, target)
    elif not tf.io.gfile.isdir(source):
        tf.io.gfile.rename(source, target, overwrite=True)
    else:
        for folder, _, names in tf.io.gfile.walk(source):
            relative = folder[len(source) :].strip("/")
            tf.io.gfile.makedirs(os.path.join(target, relative))
            for name in names:
                tf.io.gfile.rename(
                    os.path.join(folder, name), os.path.join(target, relative, name), overwrite=True
                )
        remove(source)


# Special files an output may name that are written through, never renamed
# over: `--output /dev/null` discards, a FIFO (or `>(...)`) streams.
WRITTEN_THROUGH = ("character device", "FIFO")


def special_file(path):
    """What kind of special file a local `path` is, through symlinks
    ("character device", "FIFO", "block device", "socket"), or None for a
    regular file, a folder, a path that does not exist or a remote one."""
    if not is_local(path):
        return None
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    for kind, test in (
        ("character device", stat.S_ISCHR),
        ("FIFO", stat.S_ISFIFO),
        ("block device", stat.S_ISBLK),
        ("socket", stat.S_ISSOCK),
    ):
        if test(mode):
            return kind
    return None


class _TextOrBytes:
    """An opened binary file with `GFile`'s `write` (str as UTF-8, or bytes)."""

    def __init__(self, raw):
        self.raw = raw

    def write(self, data):
        self.raw.write(data.encode("utf-8") if isinstance(data, str) else data)

    def flush(self):
        self.raw.flush()


def write_atomically(path, write):
    """Calls `write(f)` on a new file beside `path`, then renames it to
    `path`: `path` holds all of it or is left as it was. The temporary
    file is removed if anything fails (a full disk, an interrupt). `f.write`
    takes str or bytes, as a `tf.io.gfile.GFile`'s does; there is no
    `writelines`. A character device or FIFO (`WRITTEN_THROUGH`) is
    written through, not replaced; a link at `path` is replaced, never
    written through.

    The temporary name is random and, locally, created with `O_EXCL`: at a
    fixed name (`x.jsonl.partial`) anyone who can write in the folder could
    plant a link, and the write would go through it to the link's target.
    """
    if special_file(path) in WRITTEN_THROUGH:
        with open(path, "wb") as raw:
            write(_TextOrBytes(raw))
        return
    folder, name = os.path.split(os.fspath(path))
    partial = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.partial")
    if not is_local(path):
        try:
            with tf.io.gfile.GFile(partial, "w") as f:
                write(f)
            tf.io.gfile.rename(partial, path, overwrite=True)
        except BaseException:
            remove(partial, ignore_errors=True)
            raise
        return
    try:
        # 0o666 under the umask, as `open` would make it.
        descriptor = os.open(partial, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
    except OSError as error:
        # The user named `path`, not the hidden name beside it.
        raise OSError(error.errno, error.strerror, os.fspath(path)) from None
    try:
        with os.fdopen(descriptor, "wb") as raw:
            write(_TextOrBytes(raw))
        # Renames over a link at `path` (replacing the link, not its target).
        os.replace(partial, path)
    except BaseException:
        remove(partial, ignore_errors=True)
        raise


def write_json_atomically(value, path):
    write_atomically(path, lambda f: json.dump(value, f, indent=2, sort_keys=True))


def write_jsonl_atomically(rows, path):
    """`rows` (dicts) as JSON Lines, one object a line, text as it is
    (`ensure_ascii=False`: "café", not "caf\\u00e9"), every task alike."""
    write_atomically(
        path, lambda f: f.write("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    )


@contextlib.contextmanager
def atomic_directory(final_dir, last):
    """Yields the path of a hidden sibling of `final_dir` for the block to
    create and fill; if the block succeeds, moves it to `final_dir`,
    replacing what is there. The sibling is removed whatever happens; a
    killed process leaves it, under a `.tmp-` name no reader takes for a
    result.

    Args:
        final_dir: str. Where the directory ends up.
        last: str. The file, relative to the directory, whose presence
            marks it complete; moved last where files move one by one,
            and flushed to disk before a local rename, so that after a
            crash the directory is never found with it empty.
    """
    parent, name = os.path.split(final_dir.rstrip("/"))
    staging = os.path.join(parent, f".tmp-{name}-{uuid.uuid4().hex[:8]}")
    try:
        yield staging
        if is_local(final_dir):
            _flush_to_disk(os.path.join(staging, last))
            remove(final_dir)
            os.rename(staging, final_dir)
        else:
            _move_files(staging, final_dir, last)
    finally:
        remove(staging, ignore_errors=True)


def _flush_to_disk(path):
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _move_files(source, target, last):
    """Moves the tree `source` to `target` file by file, `last` last,
    replacing what is at `target`."""
    folders, files = [], []
    for folder, _, names in tf.io.gfile.walk(source):
        relative = folder[len(source) :].strip("/")
        folders.append(relative)
        files += [os.path.join(relative, n) for n in names]
    if last not in files:
        raise FileNotFoundError(f"{source} holds no {last}")
    remove(target)
    # `ram://` lists only directories created as such: make each one.
    for relative in folders:
        tf.io.gfile.makedirs(os.path.join(target, relative))
    files.remove(last)
    for name in files + [last]:
        tf.io.gfile.rename(os.path.join(source, name), os.path.join(target, name), overwrite=True)


def is_disk_full(error):
    """Whether `error` means the disk (or quota) is full. h5py, TensorFlow
    and plain `open` report it as different types, all with the system's
    message, so both the errno and the message are checked."""
    return (
        getattr(error, "errno", None) in (errno.ENOSPC, errno.EDQUOT)
        or "No space left on device" in str(error)
        or "Disk quota exceeded" in str(error)
    )


def chmod_as_created(path):
    """Gives `path` the mode a plain `open`/`mkdir` would under the umask:
    `mkstemp`/`mkdtemp` make private 0600 files and 0700 folders, which a
    rename into place would otherwise publish."""
    umask = os.umask(0)
    os.umask(umask)
    full = 0o777 if stat.S_ISDIR(os.stat(path).st_mode) else 0o666
    os.chmod(path, full & ~umask)


def save_keras_atomically(model, path):
    """`model.save(path)` through a hidden sibling renamed into place, so
    `path` only ever holds a complete archive (on an object store too: see
    `keras_bert.file_io`); the sibling is removed whatever happens."""
    through = special_file(path) in WRITTEN_THROUGH
    folder, name = os.path.split(os.fspath(path))
    if through:  # Not beside a device in /dev: in the temporary folder.
        folder = tempfile.gettempdir()
    # Named, not created, here: `mkstemp` would create it 0600, and
    # `model.save` creating it honours the umask like any other file.
    tmp = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.tmp.keras")
    try:
        model.save(tmp)
        if through:
            with open(tmp, "rb") as source, open(path, "wb") as target:
                shutil.copyfileobj(source, target)
        else:
            tf.io.gfile.rename(tmp, path, overwrite=True)
    finally:
        remove(tmp)


def archive_problem(path):
    """Why `path` is no readable `.keras` zip (None when it is one).

    Keras reports a truncated archive as "File not found" and a damaged one
    as a bare BadZipFile; this names the real problem.
    """
    if not is_file(path):
        return "no such file"
    with tf.io.gfile.GFile(path, "rb") as f:
        try:
            is_zip = zipfile.is_zipfile(f)
        except tf.errors.InvalidArgumentError:  # GFile's seek before byte 0: a tiny file.
            is_zip = False
        if not is_zip:
            return "not a .keras archive (truncated or corrupt zip file)"
        try:
            with zipfile.ZipFile(f) as archive:
                damaged = archive.testzip()
        except Exception as error:  # zlib, zipfile and OS errors alike.
            return f"corrupt .keras archive ({error})"
    return f"corrupt .keras archive (CRC check failed for {damaged})" if damaged else None
