"""`ReplacedRun`: the run a pre-training rerun with `--overwrite` replaces."""

from keras_bert.training.run_folder import PRETRAINING, RunFolder


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
        self.folder = RunFolder(model_dir, PRETRAINING)
        self.previous = self.folder.previous
        self.kept = False
        self.first = False

    def start(self):
        recovered = self.previous.recover()
        if recovered:
            print(f"warning: {recovered}.", flush=True)
        if self.overwrite:
            self.folder.refuse_another_run(overwrite=True)
            names = self.previous.set_aside()
            if names:
                self.kept = True
                print(
                    f"--overwrite: the run in {self.model_dir} ({', '.join(names)}) set aside "
                    f"in {self.previous.folder} until this run saves its first checkpoint.",
                    flush=True,
                )
        self.first = not self.kept and not self.folder.run_files()

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
            self.folder.remove_failed_first_run()
