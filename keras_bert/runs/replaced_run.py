"""`ReplacedRun`: the one rerun transaction of every run kind: the run a
rerun replaces is set aside, put back if the rerun stops before it can
stand on its own, and removed once it can."""


class ReplacedRun:
    """The run in a folder that a rerun replaces, kept until the new run
    stands on its own (fine-tuning: its model is saved and scored;
    pre-training: its first checkpoint).

    `start` first puts right what a killed earlier rerun left
    (`PreviousRun.recover`: the run it was replacing comes back), on every
    rerun; then, with `replace`, sets the run in the folder aside
    (`PreviousRun`: `.previous-run/` and its journal; only the run's own
    files, `RunFolder.run_files`). `stands_alone` discards it; until then
    an error, Ctrl-C or SIGTERM puts it back (`__exit__`; a stop must
    save nothing of the new run meanwhile: `stopping`), and so does the
    next rerun after a `kill -9`. Reading a file of the replaced run
    (`--init_checkpoint <model_dir>/model.keras`) finds it where it was
    set aside (`path`).

    A first run in the folder (no run there, or the replaced one set aside)
    that fails before it stands alone removes what it wrote
    (`RunFolder.remove_failed_first_run`): there is nothing to resume, and
    its config would pass the folder off as a run.

    Args:
        folder: `RunFolder`. Checked by its `refuse_another_run` first.
        replace: bool. Set the run there aside (fine-tuning: every rerun;
            pre-training: `--overwrite`, else it resumes).
        until: str. When the new run stands alone, for the report.
        say: callable taking a line: where the transaction reports.
    """

    def __init__(self, folder, replace, until, say):
        self.folder = folder
        self.previous = folder.previous
        self.replace = replace
        self.until = until
        self.say = say
        self.kept = False
        self.first = False

    def start(self):
        recovered = self.previous.recover()
        if recovered:
            self.say(f"warning: {recovered}.")
        if self.replace:
            names = self.previous.set_aside()
            if names:
                self.kept = True
                self.say(
                    f"A rerun: the previous run's {', '.join(names)} set aside in "
                    f"{self.previous.folder} until {self.until}."
                )
        self.first = not self.kept and not self.folder.run_files()

    def path(self, path):
        return self.previous.path(path)

    def stands_alone(self):
        """The new run can be resumed or used on its own: the replaced run
        is removed (at its first call)."""
        self.first = False
        if self.kept:
            self.previous.discard()
            self.kept = False
            self.say(f"Removed the replaced run's {', '.join(self.previous.names)}.")

    def stopping(self):
        """Before a stop's save (Ctrl-C, SIGTERM): while the replaced run is
        kept, the stop saves nothing and puts it back (`__exit__`)."""
        if self.kept:
            self.say("Stopped before this run could stand alone; nothing of it is kept.")
            raise KeyboardInterrupt

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        if exc_type is None:
            return
        if self.kept:
            self.previous.restore()
            self.say(f"The replaced run is back in {self.folder.model_dir}.")
        elif self.first:
            self.folder.remove_failed_first_run()
