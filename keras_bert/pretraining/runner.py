"""The resumable pre-training loop behind `python -m keras_bert.pretrain`."""

import contextlib
import os
import signal
import time

import keras
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.file_io import (
    FILE_ERRORS,
    atomic_directory,
    error_reason,
    listdir,
    makedirs,
    remove,
    removed_if_left_empty,
    save_keras_atomically,
)
from keras_bert.pretraining.checkpoint_manager import CheckpointManager
from keras_bert.pretraining.fill_mask import fill_mask
from keras_bert.pretraining.pretraining import (
    build_backbone,
    build_pretraining,
    load_initial_weights,
)
from keras_bert.pretraining.pretraining_checkpoint import PretrainingCheckpoint
from keras_bert.pretraining.run_record import (
    check_rerun_config,
    check_trained_under,
    write_config,
)
from keras_bert.pretraining.time_budget import BudgetClock, describe_end, describe_plan
from keras_bert.pretraining.training_monitor import TrainingMonitor
from keras_bert.pretraining.training_state import TrainingState
from keras_bert.run_dir import PRETRAINING_FILES, PreviousRun, RunLock, refuse_another_run
from pipelines import CorpusError
from pipelines.corpus import NO_DOCUMENT

# A budgeted phase's `fit` runs until its clock stops it.
UNBOUNDED_EPOCHS = 10**9


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
    if config.objective != "masked_lm" and config.sampled_softmax_candidates is not None:
        print(
            f"note: sampled_softmax_candidates is for objective masked_lm; {config.objective}"
            " trains its masked LM on the full softmax.",
            flush=True,
        )
    # Workers of one multi-worker run share `model_dir`; only the chief
    # writes, so only the chief locks.
    lock = contextlib.nullcontext()
    replaced = ReplacedRun(config.model_dir, overwrite)
    created = False
    if pretraining.distribution.is_chief:
        try:
            created = makedirs(config.model_dir)
        except FILE_ERRORS as error:
            raise ConfigError(
                f"Cannot create model_dir: {error_reason(error)}"
                f". Received: model_dir={config.model_dir!r}"
            ) from None
        lock = RunLock(config.model_dir)
    with removed_if_left_empty(config.model_dir, created), lock, replaced:
        if pretraining.distribution.is_chief:
            replaced.start()
            record_config(config, allow_longer_train_steps, training_record(pretraining))
        return _resume_and_train(
            pretraining, verbose, callbacks, started, run_started, clock, replaced
        )


class ReplacedRun:
    """The run a pre-training rerun replaces (`overwrite`), kept until the
    new one can be resumed on its own.

    `start` first puts right what an earlier `overwrite` run killed before
    its first checkpoint left (`PreviousRun.recover`: the run it was
    replacing comes back), on every rerun; then, with `overwrite`, sets the
    run in `model_dir` aside (`PreviousRun`: `.previous-run/` and its
    journal) after checking the folder is a pre-training run's. The first
    checkpoint the new run saves discards it (`saved`); until then an
    error, a Ctrl-C or SIGTERM (`stopping`: the stop saves nothing) puts
    it back, and so does the next rerun after a `kill -9`. Warm-starting
    from a file of the replaced run (`--init_checkpoint
    <model_dir>/backbone.keras`) reads it where it was set aside (`path`).

    A first run in the folder (no run there, or the replaced one set aside)
    that fails before its first checkpoint removes what it wrote (its
    config, logs, an empty `checkpoints/`): there is nothing to resume, and
    a rerun with other settings would be refused as a changed config.
    """

    def __init__(self, model_dir, overwrite):
        self.model_dir = model_dir
        self.overwrite = overwrite
        self.previous = PreviousRun(model_dir, own_files=PRETRAINING_FILES)
        self.kept = False
        self.first = False

    def start(self):
        recovered = self.previous.recover()
        if recovered:
            print(f"warning: {recovered}.", flush=True)
        if self.overwrite:
            refuse_another_run(self.model_dir, overwrite=True)
            names = self.previous.set_aside()
            if names:
                self.kept = True
                print(
                    f"--overwrite: the run in {self.model_dir} ({', '.join(names)}) set aside "
                    f"in {self.previous.folder} until this run saves its first checkpoint.",
                    flush=True,
                )
        self.first = not self.kept and not PRETRAINING_FILES & set(listdir(self.model_dir))

    def path(self, path):
        return self.previous.path(path)

    def saved(self):
        """After each checkpoint: the first one discards the replaced run."""
        self.first = False
        if self.kept:
            self.previous.discard()
            self.kept = False
            print(f"Removed the replaced run's {', '.join(self.previous.names)}.", flush=True)

    def stopping(self):
        """Before a stop's checkpoint (Ctrl-C, SIGTERM): while the replaced
        run is kept, the stop saves nothing and puts it back (`__exit__`)."""
        if self.kept:
            print("Stopped before this run's first checkpoint; nothing of it is kept.", flush=True)
            raise KeyboardInterrupt

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        if exc_type is None:
            return
        if self.kept:
            self.previous.restore()
            print(f"The replaced run is back in {self.model_dir}.", flush=True)
        elif self.first:
            for name in sorted(PRETRAINING_FILES):
                remove(os.path.join(self.model_dir, name))


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
    accumulation = config.optimizer.gradient_accumulation_steps
    checkpointer = PretrainingCheckpoint(
        manager,
        state,
        config.checkpoint.every_steps,
        accumulation,
        after_save=replaced.saved,
        before_stop=replaced.stopping,
    )
    # A run killed after its last phase resumes straight into evaluation
    # and export, with no `fit` to hand the callback its model.
    checkpointer.set_model(pretraining.model)
    budget = _budget_clock(pretraining, state, latest, started, run_started, clock)
    monitor = _training_monitor(pretraining, state, budget, verbose, started, clock)
    previous_handlers = checkpointer.install_signal_handlers()
    try:
        for phase in pretraining.phases[state.phase :]:
            _train_phase(pretraining, phase, state, budget, checkpointer, monitor, callbacks)
            if checkpointer.preempted:
                print(
                    f"Stopped at step {state.step}; checkpoint saved. "
                    "Run the same command to resume.",
                    flush=True,
                )
                results["preempted"] = True
                return results
            if not budget:
                results["eval"][phase.index] = evaluate(
                    pretraining, phase.index, monitor, state.step
                )
            state.phase += 1
            state.phase_micro_step = 0
        if budget:
            end = describe_end(
                config,
                state.step,
                state.budget_seconds_spent,
                budget.start_up_seconds,
                budget.switch_seconds,
                before_run_seconds=budget.before_run_seconds,
            )
            print(end, flush=True)
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
    latest, state = restore_newest_readable(manager, pretraining.model, pretraining.distribution)
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


def _budget_clock(pretraining, state, latest, started, run_started, clock):
    """The `BudgetClock` of a budgeted run (its plan printed), else None."""
    config = pretraining.config
    if config.train_budget_minutes is None:
        return None
    print(describe_plan(config, resumed_state=state if latest else None), flush=True)
    return BudgetClock(
        pretraining.schedule,
        config.train_steps,
        [p.first_step + p.steps for p in pretraining.phases],
        state,
        config.train_budget_minutes * 60,
        started,
        clock,
        config.optimizer.gradient_accumulation_steps,
        stops_at_train_steps=config.budget_stops_at_train_steps,
        run_started=run_started,
    )


def _training_monitor(pretraining, state, budget, verbose, started, clock):
    """The console, TensorBoard and profiler callback; its learning rate
    and time left come from the budget's clock when there is one."""
    config = pretraining.config
    accumulation = config.optimizer.gradient_accumulation_steps
    profile = None
    if config.profile_steps:
        profile = tuple(int(s) for s in config.profile_steps.split(","))
    return TrainingMonitor(
        os.path.join(config.model_dir, "logs"),
        state,
        logged=pretraining.objective.logged,
        learning_rate_fn=(
            (lambda step: budget.learning_rate)
            if budget
            else lambda step: float(
                keras.ops.convert_to_numpy(pretraining.schedule(step * accumulation))
            )
        ),
        total_steps=None if budget else config.train_steps,
        seconds_left_fn=budget.seconds_left if budget else None,
        profile_steps=profile,
        enabled=pretraining.distribution.is_chief,
        verbose=bool(verbose),
        clock=clock,
        started=started,
    )


def _train_phase(pretraining, phase, state, budget, checkpointer, monitor, callbacks):
    """Trains what is left of `phase` (`fit`, one Keras epoch per
    `steps_per_loop` updates; a budgeted phase until its clock stops it),
    then saves a checkpoint at its last step. Returns early, the
    checkpoint saved, when SIGTERM or Ctrl-C stopped it
    (`checkpointer.preempted`)."""
    config = pretraining.config
    seq = phase.config
    end = phase.first_step + phase.steps
    print(
        f"Phase {phase.index}: seq_len={seq.seq_len}, "
        f"max_predictions={seq.max_predictions}, global batch "
        f"{seq.batch_size}, "
        + (
            f"recipe steps {phase.first_step:,}..{end:,} of {config.train_steps:,} on the clock"
            if budget
            else f"steps {phase.first_step}..{end}"
        ),
        flush=True,
    )
    phase_done = (
        budget.phase_over(phase.index) if budget else state.phase_micro_step >= phase.micro_steps
    )
    if phase_done:
        return
    done = state.phase_micro_step
    loop = config.steps_per_loop * config.optimizer.gradient_accumulation_steps
    fit_kwargs = phase.fit_kwargs(loop, done)
    if budget:
        # The clock ends a budgeted phase, after more or fewer updates
        # than the recipe's (`BudgetClock`).
        fit_kwargs["epochs"] = UNBOUNDED_EPOCHS
    checkpointer.start_phase(None if budget else phase.micro_steps)
    monitor.start_phase(phase.index, seq.batch_size, seq.seq_len)
    # The clock first: the checkpoint saved at a step carries its progress.
    clocks = [budget] if budget else []
    with _no_document_is_a_corpus_error(config):
        pretraining.model.fit(
            phase.dataset(skip_batches=done),
            **fit_kwargs,
            **({} if budget else held_out_kwargs(pretraining, phase, state.step)),
            callbacks=[*clocks, checkpointer, monitor, *callbacks],
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


def training_record(pretraining):
    """What `config.yaml` records beside the config: the Keras backend and
    the precision the model computes in (`precision: auto` resolved)."""
    return {
        "backend": keras.backend.backend(),
        "precision": pretraining.backbone.dtype_policy.name,
    }


def record_config(config, allow_longer_train_steps, trained_under):
    """Writes `<model_dir>/config.yaml` once, before the first checkpoint,
    with `trained_under`; once checkpoints exist a rerun must match it
    (`check_rerun_config`, `check_trained_under`), so the file always
    describes what was trained."""
    path = os.path.join(config.model_dir, "config.yaml")
    refuse_another_run(config.model_dir)
    trained = CheckpointManager(
        os.path.join(config.model_dir, "checkpoints"), is_chief=False
    ).checkpoints()
    if trained and tf.io.gfile.exists(path):
        extended = check_rerun_config(config, path, allow_longer_train_steps)
        check_trained_under(config, path, trained_under)
        if not extended:
            return
    write_config(config, path, trained_under)


def restore_newest_readable(manager, model, distribution):
    """`(path, TrainingState)` of the newest checkpoint that loads, or
    `(None, TrainingState())` if there is none.

    A checkpoint cut short or damaged on disk (a full disk, a bad copy)
    is skipped with a warning for the one before it: losing
    `checkpoint.every_steps` updates beats a run that cannot resume."""
    checkpoints = [path for _, path in manager.checkpoints()]
    for path in reversed(checkpoints):
        try:
            with distribution.scope():
                return path, TrainingState(**CheckpointManager.restore(model, path))
        except (*FILE_ERRORS, ValueError, KeyError, TypeError) as error:
            print(
                f"warning: checkpoint {path} is unreadable "
                f"({type(error).__name__}: {error}); trying the one "
                "before it.",
                flush=True,
            )
    if checkpoints:
        raise ConfigError(
            f"No readable checkpoint in {manager.directory} (tried "
            f"{len(checkpoints)}). Move them away to start afresh."
        )
    return None, TrainingState()


def held_out_kwargs(pretraining, phase, step):
    """`fit` arguments that evaluate held-out data at every multiple of
    `eval_every_steps` inside the phase (its end is evaluated anyway).

    Windows (Keras epochs) are `steps_per_loop` updates from `step`, so
    the evaluated windows are listed by number (`validation_freq`)."""
    config = pretraining.config
    every = config.eval_every_steps
    if not every or not config.eval_steps:
        return {}
    loop = config.steps_per_loop
    end = phase.first_step + phase.steps
    epochs = [
        e
        for e in range(1, (end - step) // loop + 1)
        if (step + e * loop) % every == 0 and step + e * loop < end
    ]
    if not epochs:
        return {}
    return {
        "validation_data": pretraining.eval_dataset(phase.index),
        "validation_steps": config.eval_steps,
        "validation_freq": epochs,
    }


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


def fill_mask_report(pretraining):
    """Prints the top-5 fillers of `config.fill_mask_probes` by the trained
    model and by a freshly initialised one (the objective's masked LM: for
    ELECTRA the generator's); returns both."""
    import pipelines

    config = pretraining.config
    tokenizer = pipelines.BertTokenizer(config.data.vocab_file, lower_case=config.data.lower_case)
    untrained = pretraining.objective.build_model(build_backbone(config))
    report = {
        name: fill_mask(model, tokenizer, config.fill_mask_probes)
        for name, model in (("trained", pretraining.model), ("untrained", untrained))
    }
    note = pretraining.objective.fill_mask_note
    print(
        f"Fill-mask, top 5{f' ({note} masked LM)' if note else ''} "
        "(trained model | freshly initialised model):",
        flush=True,
    )
    for i, sentence in enumerate(config.fill_mask_probes):
        print(f"  {sentence}")
        for name in ("trained", "untrained"):
            for fillers in report[name][i]:
                words = ", ".join(f"{t} {p:.3f}" for t, p in fillers)
                print(f"    {name:>9}: {words}")
    return report


def export_models(pretraining, model_dir):
    """What the objective exports (`PretrainingObjective.exports`: for the
    masked LM `backbone.keras` and `pretrainer.keras`) and, where the
    backend can, their SavedModels under `saved_model/<name>`.

    Each is written to a hidden temporary sibling and moved into place; a
    run killed mid-export leaves those siblings, removed here when the
    rerun exports again."""
    leftovers = tf.io.gfile.glob(os.path.join(model_dir, ".*.tmp.keras")) + tf.io.gfile.glob(
        os.path.join(model_dir, "saved_model", ".tmp-*")
    )
    for path in leftovers:
        remove(path)
    start = time.time()
    exports = pretraining.objective.exports(pretraining.model)
    print(f"Exporting {' and '.join(exports)} to {model_dir} ...", flush=True)
    for name, (model, _) in exports.items():
        save_keras_atomically(model, os.path.join(model_dir, f"{name}.keras"))
    if keras.backend.backend() == "torch":
        print(
            "SavedModel export needs the tensorflow or jax backend; wrote the .keras files only.",
            flush=True,
        )
        return
    kwargs = {}
    for name, (model, with_saved_model) in exports.items():
        if not with_saved_model:
            continue
        if keras.backend.backend() == "jax":
            # jax2tf cannot trace keras-hub's PositionEmbedding with a
            # symbolic sequence length: export at the longest phase's.
            seq_len = max(p.seq_len for p in pretraining.config.phases)
            kwargs["input_signature"] = [
                {
                    key: tf.TensorSpec(
                        (None, None if key == "mask_positions" else seq_len), tf.int32, name=key
                    )
                    for key in model.input
                }
            ]
        with atomic_directory(
            os.path.join(model_dir, "saved_model", name), last="saved_model.pb"
        ) as temp:
            model.export(temp, format="tf_saved_model", verbose=False, **kwargs)
    served = [name for name, (_, with_saved_model) in exports.items() if with_saved_model]
    print(
        f"Exported {' and '.join(exports)} (.keras; SavedModel: {', '.join(served)}) to "
        f"{model_dir} in {time.time() - start:.0f}s.",
        flush=True,
    )
