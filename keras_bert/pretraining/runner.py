"""The resumable pre-training loop behind `python -m keras_bert.pretrain`."""

import contextlib
import os
import signal
import time

import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.file_io import FILE_ERRORS, error_reason, makedirs, removed_if_left_empty
from keras_bert.pretraining.recorded_config import record_config
from keras_bert.pretraining.run_clock import run_clock
from keras_bert.pretraining.run_kind import PRETRAINING_RUN
from keras_bert.pretraining.run_outputs import export_models, fill_mask_report
from keras_bert.pretraining.run_setup import build_pretraining, load_initial_weights
from keras_bert.pretraining.training_monitor import TrainingMonitor
from keras_bert.runs.checkpoints import CheckpointManager, TrainingCheckpoint
from keras_bert.runs.replaced_run import ReplacedRun
from keras_bert.runs.run_folder import RunFolder
from keras_bert.runs.run_record import trained_under
from pipelines import CorpusError
from pipelines.corpus import NO_DOCUMENT


def run_pretraining(
    config,
    distribution=None,
    verbose="auto",
    callbacks=(),
    allow_longer_train_steps=False,
    clock=time.monotonic,
    overwrite=False,
    budget_started=None,
):
    """Pre-trains BERT as `config` says, resuming from `model_dir` if it can.

    Steps: build the model and optimizer (seeded by `data.seed`); lock
    `model_dir` (`RunLock`: a second run on it is refused); write the
    resolved config and the backend and precision it trains under to
    `<model_dir>/config.yaml` or, on a rerun, refuse a config, backend or
    precision that changes training (`record_config`); restore the newest
    readable checkpoint in `<model_dir>/checkpoints` (weights, optimizer
    and schedule position, dropout seeds, phase, data position) or else
    warm-start from `init_checkpoint`; run each remaining phase with
    `Model.fit` (one Keras epoch per `steps_per_loop` updates, the window
    over which metrics are averaged and logged); evaluate on held-out
    files after each phase (a budgeted run: at every phase's length after
    the last); save the final checkpoint; export the backbone
    and pretrainer as `.keras` and SavedModel. SIGTERM or Ctrl-C saves a
    checkpoint and returns early. With `train_budget_minutes`, a
    `BudgetClock` sets the learning rate and ends the phases and the run
    by the time spent since `budget_started`
    (`keras_bert.pretraining.time_budget`). With `overwrite` the run in
    `model_dir` is replaced instead of resumed (`ReplacedRun`).

    Args:
        config: `PretrainingConfig`.
        distribution: `TrainingDistribution` or None (from the config).
        verbose: bool or "auto". Print a line per logging window.
        callbacks: extra Keras callbacks for every `fit`.
        allow_longer_train_steps: bool. Accept a rerun whose `train_steps`
            exceeds the recorded one (only the last phase may grow); a
            finished run then trains on.
        clock: callable returning seconds; the time budget's clock.
        overwrite: bool. Start afresh: the run in `model_dir` is set aside
            and removed once this one has saved its first checkpoint.
        budget_started: float or None. The `clock` reading the time budget
            (and the elapsed time printed) counts from; None: this call.
            `python -m keras_bert.pretrain` passes its own start, so that
            its imports and backend choice are spent from the budget and
            the command ends on time whatever they took.

    Returns:
        dict: `"state"` (`TrainingState`), `"eval"` (per phase index, the
        held-out metrics), `"preempted"` (bool), `"pretraining"` and, with
        `fill_mask_probes`, `"fill_mask"` (see `fill_mask_report`).
    """
    run_started = clock()
    started = run_started if budget_started is None else budget_started
    pretraining = build_pretraining(config, distribution)
    if overwrite and pretraining.distribution.processes > 1:
        raise ConfigError(
            "--overwrite replaces the run in model_dir from one process; the other "
            f"{pretraining.distribution.processes - 1} process(es) of this run would read it "
            f"while the chief sets it aside. Empty {config.model_dir} first, or use a new "
            "model_dir."
        )
    for note in type(pretraining.objective).check_config(config):
        print(f"note: {note}", flush=True)
    # Workers of one multi-worker run share `model_dir`; only the chief
    # writes, so only the chief locks.
    lock = contextlib.nullcontext()
    folder = RunFolder(config.model_dir, PRETRAINING_RUN)
    replaced = ReplacedRun(
        folder,
        replace=overwrite,
        until="this run saves its first checkpoint",
        say=lambda line: print(line, flush=True),
    )
    created = False
    if pretraining.distribution.is_chief:
        try:
            created = makedirs(config.model_dir)
        except FILE_ERRORS as error:
            raise ConfigError(
                f"Cannot create model_dir: {error_reason(error)}"
                f". Received: model_dir={config.model_dir!r}"
            ) from None
        lock = folder.lock()
    with removed_if_left_empty(config.model_dir, created), lock, replaced:
        if pretraining.distribution.is_chief:
            folder.refuse_another_run(overwrite=overwrite)
            replaced.start()
            record_config(config, allow_longer_train_steps, trained_under(pretraining.backbone))
            folder.record_run()
        return _resume_and_train(
            pretraining, verbose, callbacks, started, run_started, clock, replaced
        )


def _resume_and_train(pretraining, verbose, callbacks, started, run_started, clock, replaced):
    """`run_pretraining` once `model_dir` is ours: restore, train each
    remaining phase, evaluate, then export and report. `started`: the clock
    reading the budget counts from; `run_started`: `run_pretraining`'s."""
    config = pretraining.config
    chief = pretraining.distribution.is_chief
    manager = CheckpointManager(
        os.path.join(config.model_dir, "checkpoints"),
        keep=config.checkpoint.keep,
        is_chief=chief,
    )
    latest, state = _restore_or_start(pretraining, manager, replaced.path)
    results = {"state": state, "eval": {}, "preempted": False, "pretraining": pretraining}
    if state.finished:
        print(
            f"Already finished at step {state.step}; outputs are in {config.model_dir}.",
            flush=True,
        )
        return results
    checkpointer = TrainingCheckpoint(
        manager,
        state,
        config.checkpoint.every_steps,
        config.optimizer.gradient_accumulation_steps,
        after_save=replaced.stands_alone,
        before_stop=replaced.stopping,
    )
    # A run killed after its last phase resumes straight into evaluation
    # and export, with no `fit` to hand the callback its model.
    checkpointer.set_model(pretraining.model)
    run = run_clock(pretraining, state, latest is not None, started, run_started, clock)
    monitor = _training_monitor(pretraining, state, run, verbose, started, clock)
    previous_handlers = checkpointer.install_signal_handlers()
    try:
        for phase in pretraining.phases[state.phase :]:
            _train_phase(pretraining, phase, state, run, checkpointer, monitor, callbacks)
            if checkpointer.preempted:
                print(
                    f"Stopped at step {state.step}; checkpoint saved. "
                    "Run the same command to resume.",
                    flush=True,
                )
                results["preempted"] = True
                return results
            if run.evaluates_each_phase:
                results["eval"][phase.index] = evaluate(
                    pretraining, phase.index, monitor, state.step
                )
            state.phase += 1
            state.phase_micro_step = 0
        end = run.describe_end(state.step)
        if end:
            print(end, flush=True)
        if not run.evaluates_each_phase:
            # Off the clock: the final model at every phase's length, after
            # the last update (between phases it would cost updates).
            for phase in pretraining.phases:
                results["eval"][phase.index] = evaluate(
                    pretraining, phase.index, monitor, state.step
                )
        state.finished = True
        if chief:
            export_models(pretraining, config.model_dir)
        checkpointer.save()
        if chief and config.fill_mask_probes:
            results["fill_mask"] = fill_mask_report(pretraining)
    finally:
        for signum, handler in previous_handlers.items():
            signal.signal(signum, handler)
    return results


def _restore_or_start(pretraining, manager, moved_path):
    """`(latest checkpoint or None, TrainingState)`: the newest readable
    checkpoint restored, else the initial weights of `init_checkpoint`
    loaded (read where `moved_path` says it is now); a finished step-based
    run whose `train_steps` was extended reopened in its last phase."""
    config = pretraining.config
    latest, state = manager.restore_newest(pretraining.model, pretraining.distribution)
    if latest:
        print(
            f"Resuming from {latest}: step {state.step}, phase "
            f"{state.phase}, {state.phase_micro_step} batches into it.",
            flush=True,
        )
    elif config.init_checkpoint:
        load_initial_weights(pretraining, moved_path(config.init_checkpoint))
        print(f"Initial weights from {config.init_checkpoint}.", flush=True)
    last = pretraining.phases[-1]
    budgeted = config.train_budget_minutes is not None
    if state.finished and not budgeted and state.step < last.first_step + last.steps:
        # `train_steps` was extended (`check_rerun_config`): back into the
        # last phase, whose first step did not move.
        state.finished = False
        state.phase = last.index
        accumulation = config.optimizer.gradient_accumulation_steps
        state.phase_micro_step = state.micro_step - last.first_step * accumulation
    return latest, state


def _training_monitor(pretraining, state, run, verbose, started, clock):
    """The console, TensorBoard and profiler callback; its learning rate,
    length and time left come from the run's clock."""
    config = pretraining.config
    profile = None
    if config.profile_steps:
        profile = tuple(int(s) for s in config.profile_steps.split(","))
    return TrainingMonitor(
        os.path.join(config.model_dir, "logs"),
        state,
        logged=pretraining.objective.logged,
        learning_rate_fn=run.learning_rate,
        total_steps=run.total_steps,
        seconds_left_fn=run.seconds_left if run.total_steps is None else None,
        profile_steps=profile,
        enabled=pretraining.distribution.is_chief,
        verbose=bool(verbose),
        clock=clock,
        started=started,
    )


def _train_phase(pretraining, phase, state, run, checkpointer, monitor, callbacks):
    """Trains what is left of `phase` (`fit`, one Keras epoch per
    `steps_per_loop` updates, until `run`'s clock ends the phase), then
    saves a checkpoint at its last step. Returns early, the checkpoint
    saved, when SIGTERM or Ctrl-C stopped it (`checkpointer.preempted`)."""
    config = pretraining.config
    seq = phase.config
    print(
        f"Phase {phase.index}: seq_len={seq.seq_len}, "
        f"max_predictions={seq.max_predictions}, global batch "
        f"{seq.batch_size}, {run.describe_phase(phase)}",
        flush=True,
    )
    if run.phase_over(phase):
        return
    checkpointer.start_phase(run.phase_batches(phase))
    monitor.start_phase(phase.index, seq.batch_size, seq.seq_len)
    with _no_document_is_a_corpus_error(config):
        pretraining.model.fit(
            phase.dataset(skip_batches=state.phase_micro_step),
            **run.fit_kwargs(phase, state.step),
            # The clock first: the checkpoint saved at a step carries its
            # progress.
            callbacks=[*run.callbacks, checkpointer, monitor, *callbacks],
            verbose=0,  # TrainingMonitor prints a line a window.
            shuffle=False,  # The pipeline shuffles, seeded.
        )
    if checkpointer.last_saved_step != state.step:
        checkpointer.save()


@contextlib.contextmanager
def _no_document_is_a_corpus_error(config):
    """The pipeline's no-document error (a tf.data assertion) as a one-line
    `CorpusError` naming the files."""
    try:
        yield
    except tf.errors.InvalidArgumentError as error:
        if NO_DOCUMENT not in str(error):
            raise
        raise CorpusError(f"{config.data.train_files!r}: {NO_DOCUMENT}.") from None


def evaluate(pretraining, phase_index, monitor, step):
    """Held-out loss and accuracies at phase `phase_index`'s shape."""
    config = pretraining.config
    if config.eval_steps == 0:
        return {}
    seq = pretraining.phases[phase_index].config
    metrics = pretraining.model.evaluate(
        pretraining.eval_dataset(phase_index), steps=config.eval_steps, return_dict=True, verbose=0
    )
    metrics = {k: float(v) for k, v in metrics.items()}
    print(
        f"Held-out at seq_len={seq.seq_len} (step {step}): "
        f"{pretraining.objective.report(metrics)} loss={metrics.get('loss', float('nan')):.4f}",
        flush=True,
    )
    monitor.write_scalars("eval", {f"{k}_seq{seq.seq_len}": v for k, v in metrics.items()}, step)
    return metrics
