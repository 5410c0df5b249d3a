"""The guard every command that writes a file calls first: never over one
of its inputs, a run folder's own files, or an existing file without
`--overwrite` (`check_output`); one writer at a time (`claimed_output`)."""

import contextlib
import os

import tensorflow as tf

from keras_bert.errors import UserError
from keras_bert.file_io import WRITTEN_THROUGH, is_local, normalized, same_file, special_file
from keras_bert.runs.run_folder import is_run_folder, own_files_of
from keras_bert.runs.run_lock import RunLock


def check_output(flag, path, inputs=(), overwrite=False, error=UserError):
    """Refuses, before anything is computed, to write the file `path` (what
    `flag` names) over a file the user did not name for writing:

    - one of `inputs` (files the command reads), through any spelling of
      the path or a symlink;
    - a run folder's own file (what the run in the folder records as its
      own, `run_folder.own_files_of`), even with `overwrite`;
    - any existing file, unless `overwrite`; a folder, or a path ending in
      a separator (a folder to be), always;
    - a block device or a socket, always. A character device or a FIFO
      (`/dev/null`, a pipe) is written through, replacing nothing, so it
      needs no `overwrite` (`file_io.WRITTEN_THROUGH`).

    Raises `error` with one line naming the flag, the path and the cause.
    """
    where = f"{flag} {path}" if flag else path
    for given in inputs:
        if same_file(path, given):
            raise error(f"{where}: is the input file {given}; write the output elsewhere")
    kind = special_file(path)
    if kind in WRITTEN_THROUGH:
        return
    if kind is not None:
        raise error(f"{where}: is a {kind}, not a file; not written")
    if os.fspath(path).endswith(("/", os.sep)):
        raise error(f"{where}: ends in a separator, so names a folder; give a file name")
    run, part = _run_part(path)
    if run is not None:
        raise error(
            f"{where}: is {part} of the run in {run}; write the output elsewhere "
            "(not replaced, even with --overwrite)"
        )
    if tf.io.gfile.isdir(path):
        raise error(f"{where}: is a folder, not a file")
    if tf.io.gfile.exists(path) and not overwrite:
        raise error(f"{where}: already exists; pass --overwrite to replace it")


@contextlib.contextmanager
def claimed_output(path, check, activity, error=UserError):
    """Holds `.<name>.lock` beside the output file `path` while a command
    computes and writes it, and runs `check` (the command's output guard,
    `check_output`) again once held: of two commands started onto one new
    output, the second is refused, whether the first is still running or
    has finished meanwhile. A device or a pipe (`--output /dev/null`) is
    written through by any number of writers: no claim, no lock beside it.
    """
    if special_file(path) is not None:
        check()
        yield
        return
    folder, name = os.path.split(os.fspath(path))
    lock = RunLock(
        folder or os.curdir, f".{name}.lock", activity, error, holds=f"the output {path}"
    )
    with lock:
        check()
        yield


def check_export_folder(flag, path, error=UserError):
    """Refuses a TF Serving base folder (numbered versions go into it) that
    is a keras_bert run folder or one of its parts other than `export/`,
    where the versions would mix with the run's files."""
    if is_run_folder(path):
        raise error(
            f"{flag} {path}: is a run folder; export into its export/ folder or another one"
        )
    run, part = _run_part(path)
    if run is not None and part.split(os.sep)[0] != "export":
        raise error(
            f"{flag} {path}: is {part} of the run in {run}; export into its export/ "
            "folder or another one"
        )


def _run_part(path):
    """`(run folder, its own file)` when `path` is, or is inside, one of
    the files a keras_bert run folder's run owns (`own_files_of`); `(None, None)`."""
    path = os.path.realpath(path) if is_local(path) else normalized(path)
    child, folder = path, os.path.dirname(path)
    while folder and folder != child:
        if os.path.basename(child) in (own_files_of(folder) or ()):
            return folder, os.path.relpath(path, folder)
        child, folder = folder, os.path.dirname(folder)
    return None, None
