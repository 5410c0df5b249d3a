"""The harness every command runs in, once its arguments are parsed.

Each command (`keras_bert/pretrain.py`, `finetune.py`, ...)
parses its arguments, then hands `run_command` a function that calls its
library and prints the result. `run_command` starts the process first:
the training commands (pretrain, finetune) choose the Keras backend
(`runtime.backend`, before Keras loads, which reads `KERAS_BACKEND` once),
and TensorFlow is imported with its start-up notices dropped
(`runtime.console`). So `--help` and a bad flag answer at once, without
measuring backends or loading TensorFlow.

What goes wrong becomes one line on stderr and an exit status:

- a `KERAS_BACKEND` that names no Keras backend: status 2, before
  anything loads;
- a `UserError` (a bad config, corpus, checkpoint or task file): its
  message, status 2;
- a file the user named that is missing, a folder, not permitted or on an
  unknown file system (`file_io.user_file_error`): one line naming the
  path, status 2;
- a full disk: one line naming the output, status 1, at once (`os._exit`:
  h5py's handles on a failed file crash interpreter shutdown);
- Ctrl-C (pre-training saves at the first; this is the second): one line,
  status 130.

Anything else is a bug and keeps its traceback. Standard library only at
import: TensorFlow and Keras load inside `run_command`.
"""

import json
import os
import signal
import sys
import threading

from keras_bert.runtime.allocator import keep_freed_memory_for_jax
from keras_bert.runtime.backend import backend_variable_problem, use_fastest_backend
from keras_bert.runtime.compilation_cache import cache_jax_compilations
from keras_bert.runtime.console import configure_logging, import_tensorflow_quietly

# The log lines of finetune, evaluate and predict (data and vocab print the
# message alone).
LOG_FORMAT = "%(asctime)s %(name)s: %(message)s"
RERUN_ADVICE = (
    ": free space and run the same command again (it replaces what this run "
    "wrote; nothing is left half-written)."
)


def start_up(choose_backend=False):
    """Prepares the process for Keras: JAX's compilation cache on
    (`runtime.compilation_cache`; the backend probes inherit it), the
    measured fastest backend when `choose_backend` (the training commands)
    and `KERAS_BACKEND` is unset, glibc's allocator set to reuse freed
    blocks under JAX (`runtime.allocator`), then a quiet TensorFlow import.
    All must come before Keras loads. Last, Keras loads and keras_bert's
    classes are registered, so that every command loads a saved `.keras`
    whichever of its modules it has imported."""
    cache_jax_compilations()
    if choose_backend:
        use_fastest_backend()
    keep_freed_memory_for_jax()
    import_tensorflow_quietly()
    import keras_bert

    keras_bert.register_serializables()


def run_command(
    body,
    output,
    *,
    choose_backend=False,
    backend=None,
    log_format=None,
    full_disk_advice=RERUN_ADVICE,
    interrupted="Interrupted.",
    error_prefix="error: ",
    user_errors=(),
    check=None,
    verbose=False,
):
    """Checks, starts up, calls `body()` and returns the command's exit status.

    Args:
        body: callable. Imports and calls the library, prints the result;
            returns an exit status, or None for 0.
        output: str, or a callable returning it (a path known only once
            `body` has read its config). What a full disk names.
        choose_backend: bool. Measure the fastest Keras backend first
            (`python -m keras_bert.pretrain`, `python -m keras_bert.finetune`).
        backend: str or None. The Keras backend the command runs under,
            whatever `KERAS_BACKEND` says (`export`: the exported graph is
            TensorFlow's; weights from any backend load there). Set before
            Keras loads; a process whose Keras came up under another backend
            first (a notebook calling `main`) has the library re-run the
            command in a child process, which gets it.
        log_format: str or None. `logging` format for keras_bert's and
            pipelines' INFO lines; None leaves logging alone.
        full_disk_advice: str. Follows "no space left on device in <output>".
        interrupted: str, or a callable returning it. The line for Ctrl-C.
        error_prefix: str. Starts every error line.
        user_errors: tuple of exception classes a command's library raises
            for bad input besides `UserError`.
        check: callable or None. Reads and checks the command's config and
            inputs before start-up (the backend measurement, Keras), so
            that a bad key costs no measurement; it must not load Keras.
            Its `UserError` is one line, as `body`'s.
        verbose: bool. The command's `--verbose`: keep the libraries'
            start-up notices and INFO lines (`console.verbose_requested`),
            here and in the processes the command starts.
    """
    if verbose:
        os.environ["KERAS_BERT_VERBOSE"] = "1"
    if backend is not None:
        os.environ["KERAS_BACKEND"] = backend
    # The commands that choose a backend are the ones that train.
    problem = backend_variable_problem(training=choose_backend)
    if problem is not None:
        return _one_line(f"{error_prefix}{problem}", 2)
    # SIGTERM (a scheduler's stop, `kill`) unwinds as Ctrl-C does, so what
    # a command puts right on the way out (a fine-tuning rerun's set-aside
    # run) is put right; pre-training's checkpointer takes it over while it
    # trains.
    previous_handler = _terminate_as_interrupt()
    from keras_bert.errors import UserError

    try:
        # One error path for the checks before start-up and the body: a
        # path the check cannot reach (`--config gs://...`) is one line too.
        try:
            if check is not None:
                check()
            start_up(choose_backend)
            if log_format is not None:
                configure_logging(log_format)
            status = body()
        except (UserError, *user_errors) as error:
            return _one_line(f"{error_prefix}{error}", 2)
        except Exception as error:
            from keras_bert.file_io import is_disk_full, user_file_error

            if is_disk_full(error):
                where = output() if callable(output) else output
                _one_line(f"{error_prefix}no space left on device in {where}{full_disk_advice}", 1)
                os._exit(1)
            line = user_file_error(error)
            if line is None:
                raise
            return _one_line(f"{error_prefix}{line}", 2)
    except KeyboardInterrupt:
        return _one_line(interrupted() if callable(interrupted) else interrupted, 130)
    finally:
        if previous_handler is not None:
            signal.signal(signal.SIGTERM, previous_handler)
    return 0 if status is None else status


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _terminate_as_interrupt():
    """Makes SIGTERM raise `KeyboardInterrupt`; returns the handler it
    replaced (None off the main thread, where handlers cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _interrupt)


def print_json(result):
    """What finetune, evaluate and predict print: their result dict."""
    print(json.dumps(result, indent=2, sort_keys=True))


def _one_line(line, status):
    print(line, file=sys.stderr)
    sys.stderr.flush()
    return status
