"""`RunFolder`: which run a `model_dir` holds, checked before a pre-training
or fine-tuning run writes into it; the rerun's set-aside run
(`PreviousRun`), the lock and the output guard. (The runners' use of them is
tested in tests/pretraining/test_runner.py and tests/finetuning.)"""

import errno
import os
import socket

import pytest

from keras_bert.errors import ConfigError, RunFolderError
from keras_bert.file_io import write_json_atomically
from keras_bert.finetuning.run_kind import FINETUNING_RUN
from keras_bert.pretraining.run_kind import PRETRAINING_RUN
from keras_bert.runs.run_folder import RunFolder

pytestmark = pytest.mark.backend_independent


def refuse_another_run(model_dir, task=None, overwrite=False):
    """What a pre-training (`task` None) or fine-tuning run checks first."""
    RunFolder(model_dir, FINETUNING_RUN if task else PRETRAINING_RUN).refuse_another_run(
        task, overwrite
    )


def folder(tmp_path, config=None, lock=False, checkpoints=False, model=False):
    if config is not None:
        (tmp_path / "config.yaml").write_text(config)
    if model:
        (tmp_path / "model.keras").write_text("a model")
    if lock:
        (tmp_path / "pretrain.lock").write_text("1 host\n")
    if checkpoints:
        (tmp_path / "checkpoints" / "ckpt-1").mkdir(parents=True)
    return str(tmp_path)


@pytest.mark.parametrize("config", [None, "phases: []\n", "{not yaml", "[1, 2]\n"])
def test_pretraining_continues_in_its_own_or_an_unclear_folder(tmp_path, config):
    refuse_another_run(folder(tmp_path, config))


def test_pretraining_refuses_a_finetuning_folder(tmp_path):
    model_dir = folder(tmp_path, "task: sst2\n")
    with pytest.raises(RunFolderError) as error:
        refuse_another_run(model_dir)
    assert str(error.value) == (
        f"model_dir {model_dir!r} holds a fine-tuning run (task 'sst2'); "
        "pre-train into another folder."
    )


@pytest.mark.parametrize(
    "setup",
    [
        {},
        {"config": "task: sst2\n", "model": True},
        # Issue 67 item 12: a first run of another task killed before it
        # saved its model left its config, and the folder refused every task.
        {"config": "task: cola\n"},
    ],
)
def test_finetuning_reruns_into_its_own_or_a_new_folder(tmp_path, setup):
    refuse_another_run(folder(tmp_path, **setup), "sst2")


@pytest.mark.parametrize(
    "setup, message",
    [
        (
            {"lock": True},
            "holds a pre-training run; fine-tune into another folder "
            "(--init_checkpoint takes its backbone.keras)",
        ),
        ({"checkpoints": True}, "holds a pre-training run"),
        (
            {"config": "phases: []\ntask: sst2\n"},
            "its config.yaml is not a fine-tuning run's; pick another folder",
        ),
        ({"config": "{not yaml"}, "its config.yaml is not a fine-tuning run's"),
        # Issue 82 item 2: a project's config.yaml was set aside and deleted
        # as a previous run's.
        ({"config": "name: my project\n"}, "its config.yaml is not a fine-tuning run's"),
        (
            {"config": "task: cola\n", "model": True},
            "holds a fine-tuning run of task 'cola'; pick another folder for 'sst2'",
        ),
    ],
)
def test_finetuning_refuses_another_run(tmp_path, setup, message):
    model_dir = folder(tmp_path, **setup)
    with pytest.raises(RunFolderError) as error:
        refuse_another_run(model_dir, "sst2")
    assert str(error.value).startswith(f"--model_dir {model_dir}: {message}")
    if "model" in setup:  # --overwrite replaces another task's run only.
        refuse_another_run(model_dir, "sst2", overwrite=True)
    else:
        with pytest.raises(RunFolderError):
            refuse_another_run(model_dir, "sst2", overwrite=True)


@pytest.mark.parametrize("name", ["vocab.txt", "model.keras", "eval_results.json", "export"])
def test_finetuning_refuses_a_folder_of_the_users_files_it_would_write_over(tmp_path, name):
    # Issue 82 item 2: without a run in the folder, a rerun set the user's
    # vocab.txt (and any file of a run's name) aside, then deleted it.
    (tmp_path / name).write_text("the user's")
    (tmp_path / "eval_plan.md").write_text("the user's")
    with pytest.raises(RunFolderError) as error:
        refuse_another_run(str(tmp_path), "sst2", overwrite=True)
    assert str(error.value) == (
        f"--model_dir {tmp_path}: holds no keras_bert run but its own {name}, which the run "
        "would write over; pick another folder or move them"
    )
    assert RunFolder(str(tmp_path), FINETUNING_RUN).run_files() == []


def test_pretraining_overwrite_refuses_a_folder_of_the_users_files(tmp_path):
    # Issue 82 item 2, pre-training's side: no run there, so a logs/ or
    # saved_model/ of the user's would be set aside as the replaced run's.
    (tmp_path / "logs").mkdir()
    with pytest.raises(RunFolderError) as error:
        refuse_another_run(str(tmp_path), overwrite=True)
    assert str(error.value) == (
        f"model_dir {str(tmp_path)!r}: holds no keras_bert pre-training run but its own logs, "
        "which --overwrite would replace; pre-train into another folder."
    )
    refuse_another_run(str(tmp_path))  # Without --overwrite nothing is replaced.


def test_finetuning_takes_over_what_a_killed_first_pretraining_run_left(tmp_path):
    # Issue 82 item 16: only its config.yaml and an empty checkpoints/ were
    # there, and every fine-tuning was refused as "holds a pre-training run".
    (tmp_path / "config.yaml").write_text("phases: []\n")
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "notes.txt").write_text("the user's")
    refuse_another_run(str(tmp_path), "sst2")
    assert RunFolder(str(tmp_path), FINETUNING_RUN).take_over() == ["checkpoints", "config.yaml"]
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]
    # A live run (its lock) or a trained one (a model) is refused, not taken.
    (tmp_path / "config.yaml").write_text("phases: []\n")
    for name in ("pretrain.lock", "backbone.keras"):
        (tmp_path / name).write_text("1 host\n")
        with pytest.raises(RunFolderError, match="holds a pre-training run"):
            refuse_another_run(str(tmp_path), "sst2")
        assert RunFolder(str(tmp_path), FINETUNING_RUN).take_over() == []
        (tmp_path / name).unlink()


# --- Outputs that are not regular files (issue 49, items 1 and 6) ---


def _fifo_reader(path):
    """Starts a thread reading `path` (a FIFO) whole; returns a callable
    giving what it read."""
    import threading

    got = []
    # A daemon: where the writer never opens the FIFO, the test fails
    # instead of hanging the interpreter on a reader blocked in `open`.
    thread = threading.Thread(target=lambda: got.append(open(path, "rb").read()), daemon=True)
    thread.start()
    return lambda: (thread.join(10), got[0] if got else None)[1]


def test_a_character_device_or_fifo_is_written_through(tmp_path):
    import stat

    from keras_bert.file_io import write_atomically
    from keras_bert.runs.output_guard import check_output

    # /dev/null, directly and through a symlink: no --overwrite needed, and
    # it stays the device (as root, a rename would replace the machine's).
    link = tmp_path / "discard.jsonl"
    link.symlink_to("/dev/null")
    for path in ("/dev/null", str(link)):
        check_output("--output", path)
        write_atomically(path, lambda f: f.write("a line\n"))
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert link.is_symlink()
    # A FIFO streams the content to its reader.
    fifo = tmp_path / "stream"
    os.mkfifo(fifo)
    check_output("--output", str(fifo))
    read = _fifo_reader(fifo)
    write_atomically(str(fifo), lambda f: (f.write("text "), f.write(b"bytes")))
    assert read() == b"text bytes"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_socket_or_a_folder_to_be_is_refused_before_any_work(tmp_path):
    import socket

    from keras_bert.errors import UserError
    from keras_bert.runs.output_guard import check_output

    path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        with pytest.raises(UserError, match=r"--output .*/s: is a socket, not a file; not written"):
            check_output("--output", str(path), overwrite=True)
    finally:
        server.close()
    with pytest.raises(UserError, match="ends in a separator, so names a folder"):
        check_output("--output", str(tmp_path / "newdir") + "/", overwrite=True)


def test_a_keras_archive_goes_through_a_fifo_whole(tmp_path):
    import keras

    from keras_bert.file_io import save_keras_atomically

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    fifo = tmp_path / "model.keras"
    os.mkfifo(fifo)
    read = _fifo_reader(fifo)
    save_keras_atomically(model, str(fifo))
    assert read()[:2] == b"PK"  # a zip archive
    assert not [p for p in os.listdir(tmp_path) if p != "model.keras"]


def test_only_a_keras_bert_run_folder_guards_its_files(tmp_path):
    # Issue 49, item 9: any project may hold a config.yaml of its own.
    from keras_bert.errors import UserError
    from keras_bert.runs.output_guard import check_output

    project = tmp_path / "proj"
    (project / "logs").mkdir(parents=True)
    (project / "config.yaml").write_text("name: x\n")
    check_output("--output", str(project / "vocab.txt"))
    check_output("--output", str(project / "logs" / "out.jsonl"))
    (project / "config.yaml").write_text("task: sst2\n")
    with pytest.raises(UserError, match="is vocab.txt of the run in"):
        check_output("--output", str(project / "vocab.txt"))


def test_a_run_folder_is_guarded_by_its_record_or_by_the_names_runs_wrote_before_it(tmp_path):
    # Issue 81 item 2: the guard reads what a folder's run owns from the
    # folder, so it knows no kind of run (nor a user's objective).
    import json

    from keras_bert.errors import UserError
    from keras_bert.runs.output_guard import check_output
    from keras_bert.runs.run_folder import own_files_of

    run = folder(tmp_path, "task: sst2\n")
    assert "backbone.keras" in own_files_of(run)  # No record: what any run wrote before it.
    folder_run = RunFolder(run, FINETUNING_RUN)
    folder_run.record_run()
    record = json.load(open(tmp_path / "outputs.json"))
    assert record["kind"] == "fine-tuning"
    assert record["kept"] == ["export", "finetune.lock", "unfinished"]
    assert "model.keras" in record["files"] and "backbone.keras" not in record["files"]
    check_output("--output", str(tmp_path / "backbone.keras"))  # Not this run's.
    (tmp_path / "model.keras").write_text("a model")
    # What predict and evaluate wrote by default: the rerun's to set aside,
    # theirs to replace.
    folder_run.record_outputs(["predictions_test.jsonl"])
    assert json.load(open(tmp_path / "outputs.json"))["outputs"] == ["predictions_test.jsonl"]
    check_output("--output", str(tmp_path / "predictions_test.jsonl"), overwrite=True)
    for part in ("model.keras", "export/1", "outputs.json"):
        with pytest.raises(UserError, match=f"is {part} of the run in"):
            check_output("--output", str(tmp_path / part), overwrite=True)
    # While a rerun has set the run aside, the set-aside record stands.
    folder_run.previous.set_aside()
    assert "model.keras" in own_files_of(run)
    folder_run.previous.restore()


def test_a_record_from_before_its_kind_is_kept_and_extended(tmp_path):
    import json

    run = folder(tmp_path, "task: sst2\n", model=True)
    (tmp_path / "outputs.json").write_text('["predictions_dev.jsonl"]')
    (tmp_path / "predictions_dev.jsonl").write_text("{}\n")
    folder_run = RunFolder(run, FINETUNING_RUN)
    assert folder_run.run_files() == [
        "config.yaml",
        "model.keras",
        "predictions_dev.jsonl",
        "outputs.json",
    ]
    folder_run.record_outputs(["eval_test"])
    record = json.load(open(tmp_path / "outputs.json"))
    assert record["outputs"] == ["eval_test", "predictions_dev.jsonl"]
    assert {"model.keras", "vocab.txt"} <= set(record["files"])


def test_a_claimed_output_refuses_a_second_writer_and_leaves_no_lock(tmp_path):
    # Issue 49, item 6: two commands onto one new output both passed the check.
    from keras_bert.errors import UserError
    from keras_bert.runs.output_guard import check_output, claimed_output

    output = str(tmp_path / "out.jsonl")
    checks = []

    def check():
        checks.append(output)
        check_output("--output", output)

    with claimed_output(output, check, "predict"):
        assert sorted(os.listdir(tmp_path)) == [".out.jsonl.lock"]
        with pytest.raises(UserError, match="is held by pid .*the output .*out.jsonl"):
            with claimed_output(output, check, "predict"):
                pass
        open(output, "w").write("the first writer's\n")
    assert os.listdir(tmp_path) == ["out.jsonl"] and len(checks) == 1
    # The first has finished: the second's check, made holding the claim, refuses.
    with pytest.raises(UserError, match="already exists; pass --overwrite"):
        with claimed_output(output, check, "predict"):
            pass
    assert os.listdir(tmp_path) == ["out.jsonl"]


def test_a_device_output_is_written_through_without_a_lock_beside_it():
    from keras_bert.runs.output_guard import claimed_output

    before = set(os.listdir("/dev"))
    with claimed_output("/dev/null", lambda: None, "predict"):
        assert set(os.listdir("/dev")) == before


# --- A rerun's journal: any kill leaves a state the next command puts right
# (issue 49, item 3) ---


class Killed(BaseException):
    """`kill -9` at a file operation: no handler runs."""


def old_run(model_dir):
    """A fine-tuning run and the user's files beside it."""
    for name, text in {
        "config.yaml": "task: sst2\n# old\n",
        "model.keras": "old model",
        "vocab.txt": "old vocab",
        "eval_results.json": "{}",
        "predictions_dev.jsonl": "old predictions",
        "outputs.json": '["predictions_dev.jsonl"]',
        "notes.txt": "the user's",
        "eval_plan.md": "the user's too",
    }.items():
        (model_dir / name).write_text(text)


def contents(model_dir):
    return {
        str(p.relative_to(model_dir)): p.read_text()
        for p in sorted(model_dir.rglob("*"))
        if p.is_file()
    }


def rerun(model_dir, fail=False):
    """What `finetuning.runner` does to the folder: recover, set aside, write
    the new run, then discard the previous run (or restore it on failure)."""

    previous = RunFolder(str(model_dir), FINETUNING_RUN).previous
    previous.recover()
    previous.set_aside()
    for name in ("config.yaml", "vocab.txt", "model.keras", "eval_results.json"):
        write_json_atomically(f"new {name}", str(model_dir / name))
    if fail:
        previous.restore()
    else:
        previous.discard()


def operations(monkeypatch, kill_at=None):
    """Counts the file operations of `PreviousRun` (moves, removals, JSON
    writes), raising `Killed` before operation `kill_at`; returns the
    count so far as a one-item list."""
    from keras_bert.runs import previous_run

    count = [0]

    def counted(function):
        def operation(*args, **kwargs):
            if count[0] == kill_at:
                raise Killed
            count[0] += 1
            return function(*args, **kwargs)

        return operation

    for name in ("move", "remove", "write_json_atomically"):
        monkeypatch.setattr(previous_run, name, counted(getattr(previous_run, name)))
    return count


@pytest.mark.parametrize("fail", [False, True], ids=["finishing", "restoring"])
def test_a_rerun_killed_at_any_file_operation_is_put_right(tmp_path, monkeypatch, fail):

    reference = tmp_path / "reference"
    reference.mkdir()
    old_run(reference)
    before = contents(reference)
    with monkeypatch.context() as patch:
        total = operations(patch)
        rerun(reference, fail)
    after = contents(reference)
    assert (after == before) == fail
    for kill_at in range(total[0]):
        model_dir = tmp_path / f"killed_at_{kill_at}"
        model_dir.mkdir()
        old_run(model_dir)
        with monkeypatch.context() as patch:
            operations(patch, kill_at)
            with pytest.raises(Killed):
                rerun(model_dir, fail)
        RunFolder(
            str(model_dir), FINETUNING_RUN
        ).previous.recover()  # What the next finetune does first.
        # An unfinished rerun is undone, the previous run whole again; once
        # the journal says finished (the last three operations: that write,
        # the removal of the set-aside folder, of the journal), the discard
        # is completed. The user's files stay either way.
        finished = not fail and kill_at >= total[0] - 2
        assert contents(model_dir) == (after if finished else before), kill_at
        assert not (model_dir / ".previous-run").exists()


def test_an_unfinished_rerun_keeps_its_task_and_refuses_readers(tmp_path, capsys):
    # Issue 49, item 3 (c): killed before its config.yaml was written, a
    # rerun's folder took any task; predict scored whatever was there.
    from keras_bert.export import main as export

    old_run(tmp_path)
    RunFolder(str(tmp_path), FINETUNING_RUN).previous.set_aside()
    with pytest.raises(RunFolderError, match="holds a fine-tuning run of task 'sst2'"):
        refuse_another_run(str(tmp_path), "cola")
    with pytest.raises(RunFolderError) as error:
        RunFolder(str(tmp_path), FINETUNING_RUN).refuse_unfinished_rerun()
    assert f"set aside in {tmp_path / '.previous-run'}" in str(error.value)
    (tmp_path / "model.keras").write_text("the killed rerun's")
    assert export(["--model_dir", str(tmp_path), "--output", str(tmp_path / "export")]) != 0
    assert "a finetune rerun has not finished there" in capsys.readouterr().err


def test_a_set_aside_folder_from_before_the_journal_is_put_back(tmp_path):

    old_run(tmp_path)
    before = contents(tmp_path)
    RunFolder(str(tmp_path), FINETUNING_RUN).previous.set_aside()
    (tmp_path / ".previous-run.json").unlink()
    (tmp_path / "model.keras").write_text("the killed rerun's")
    RunFolder(str(tmp_path), FINETUNING_RUN).previous.recover()
    assert contents(tmp_path) == before


@pytest.mark.parametrize(
    "journal",
    [
        '{"names": 3}',
        # Issue 67 item 5: a `finished` that is no boolean read as true, and
        # `recover` deleted the set-aside run.
        '{"names": ["model.keras"], "finished": "false"}',
        '{"names": ["model.keras"], "finished": "no"}',
        '{"names": ["model.keras"], "finished": 1}',
        # A name that reaches outside the folder would be moved from there.
        '{"names": ["../model.keras"], "finished": false}',
    ],
)
def test_a_journal_keras_bert_did_not_write_is_one_line(journal, tmp_path):

    old_run(tmp_path)
    RunFolder(str(tmp_path), FINETUNING_RUN).previous.set_aside()
    set_aside = contents(tmp_path / ".previous-run")
    (tmp_path / ".previous-run.json").write_text(journal)
    # Issue 81: one error class for what a run folder refuses.
    with pytest.raises(RunFolderError, match="not a rerun journal keras_bert wrote"):
        RunFolder(str(tmp_path), FINETUNING_RUN).previous.recover()
    assert contents(tmp_path / ".previous-run") == set_aside


@pytest.mark.parametrize(
    "journal, problem",
    [
        # Issue 82 item 4: these read as "undo a rerun" and deleted the run.
        ('{"names": [], "finished": false}', "names no set-aside file"),
        ('{"names": ["nothing"], "finished": false}', "names nothing, found nowhere"),
        ('{"names": [], "finished": true}', "names no set-aside file"),
    ],
)
@pytest.mark.parametrize("kind", [FINETUNING_RUN, PRETRAINING_RUN])
def test_a_journal_that_does_not_describe_the_folder_deletes_nothing(
    journal, problem, kind, tmp_path
):
    old_run(tmp_path)
    if kind == PRETRAINING_RUN:
        (tmp_path / "config.yaml").write_text("phases: []\n")
        (tmp_path / "checkpoints" / "ckpt-9").mkdir(parents=True)
    (tmp_path / ".previous-run.json").write_text(journal)
    before = contents(tmp_path)
    with pytest.raises(RunFolderError) as error:
        RunFolder(str(tmp_path), kind).previous.recover()
    assert str(error.value).startswith(f"{tmp_path / '.previous-run.json'}: {problem}; ")
    assert contents(tmp_path) == before


def test_a_set_aside_name_the_journal_does_not_list_is_refused(tmp_path):
    old_run(tmp_path)
    RunFolder(str(tmp_path), FINETUNING_RUN).previous.set_aside()
    (tmp_path / ".previous-run.json").write_text('{"names": ["vocab.txt"], "finished": true}')
    set_aside = contents(tmp_path / ".previous-run")
    with pytest.raises(RunFolderError, match="does not name config.yaml, eval_results.json"):
        RunFolder(str(tmp_path), FINETUNING_RUN).previous.recover()
    assert contents(tmp_path / ".previous-run") == set_aside


@pytest.mark.parametrize("left", [b"", b"\n", b"\xff\xfe garbage"])
def test_an_empty_or_unreadable_lock_is_taken_over_with_one_line(left, tmp_path, capsys):
    # Issue 67 item 6: a full disk while the lock was created left it
    # empty, and it refused every rerun ("held by pid None").
    from keras_bert.runs.run_lock import RunLock

    lock = tmp_path / "pretrain.lock"
    lock.write_bytes(left)
    with RunLock(str(tmp_path)):
        assert lock.read_text() == f"{os.getpid()} {socket.gethostname()}\n"
    err = capsys.readouterr().err
    assert err == f"warning: taking over the lock {lock}, which names no process " + (
        "(empty or unreadable: a write that failed).\n"
    )
    assert os.listdir(tmp_path) == []


def test_a_lock_whose_write_fails_leaves_nothing(tmp_path, monkeypatch):
    from keras_bert.runs.run_lock import RunLock

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "link", disk_full)
    with pytest.raises(OSError, match="No space left"):
        with RunLock(str(tmp_path)):
            pass
    assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    with RunLock(str(tmp_path)):  # The rerun the error advises.
        pass


def test_a_lock_is_never_written_through_a_planted_link(tmp_path):
    # Issue 82 item 3: the claim was written beside the lock under a name
    # known in advance (`pretrain.lock.<pid>.<host>`), through a link
    # planted there.
    from keras_bert.runs.run_lock import RunLock

    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    model_dir = tmp_path / "run"
    model_dir.mkdir()
    staged = f"pretrain.lock.{os.getpid()}.{socket.gethostname()}"
    (model_dir / staged).symlink_to(victim)
    claim = f"{os.getpid()} {socket.gethostname()}\n"
    with RunLock(str(model_dir)):
        assert (model_dir / "pretrain.lock").read_text() == claim
    assert victim.read_text() == "mine"
    assert os.listdir(model_dir) == [staged]


def test_the_lock_falls_back_to_an_exclusive_create_without_hard_links(tmp_path, monkeypatch):
    from keras_bert.runs.run_lock import RunLock

    def no_links(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    with RunLock(str(tmp_path)):
        assert os.listdir(tmp_path) == ["pretrain.lock"]
        with pytest.raises(ConfigError, match="is held by pid"):
            with RunLock(str(tmp_path)):
                pass
    assert os.listdir(tmp_path) == []
