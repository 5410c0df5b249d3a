"""Atomic writes through TensorFlow's file system layer, on a local folder
and on `ram://` (no directory rename, like an object store)."""

import os
import stat
import threading
import uuid

import pytest
import tensorflow as tf

from keras_bert.file_io import (
    atomic_directory,
    listdir,
    makedirs,
    remove,
    write_atomically,
    write_jsonl_atomically,
)

pytestmark = pytest.mark.backend_independent


@pytest.fixture(params=["local", "ram"])
def root(request, tmp_path):
    if request.param == "local":
        return str(tmp_path)
    return request.getfixturevalue("ram_dir")


def read(path):
    with tf.io.gfile.GFile(path) as f:
        return f.read()


def fill(staging, files):
    for name, text in files.items():
        makedirs(os.path.dirname(os.path.join(staging, name)))
        with tf.io.gfile.GFile(os.path.join(staging, name), "w") as f:
            f.write(text)


def test_write_atomically_replaces_the_file_whole(root):
    path = os.path.join(root, "results.json")
    write_atomically(path, lambda f: f.write("old"))
    write_atomically(path, lambda f: f.write("new"))
    assert read(path) == "new" and listdir(root) == ["results.json"]


def test_failed_write_leaves_the_file_as_it_was(root):
    path = os.path.join(root, "results.json")
    write_atomically(path, lambda f: f.write("old"))

    def fail(f):
        f.write("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        write_atomically(path, fail)
    assert read(path) == "old" and listdir(root) == ["results.json"]


def test_atomic_directory_moves_the_tree_into_place(root):
    final = os.path.join(root, "1")
    fill(os.path.join(root, "1"), {"stale.txt": "from before"})
    with atomic_directory(final, last="saved_model.pb") as staging:
        fill(staging, {"variables/variables.index": "index", "saved_model.pb": "graph"})
    assert listdir(root) == ["1"]  # No staging leftovers.
    assert sorted(listdir(final)) == ["saved_model.pb", "variables"]
    assert read(os.path.join(final, "variables", "variables.index")) == "index"
    assert read(os.path.join(final, "saved_model.pb")) == "graph"


def test_failed_write_leaves_no_directory(root):
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_directory(os.path.join(root, "1"), last="saved_model.pb") as staging:
            fill(staging, {"saved_model.pb": "half"})
            raise RuntimeError("disk full")
    assert listdir(root) == []


def test_directory_without_its_completion_marker_is_not_published(root):
    final = os.path.join(root, "1")
    fill(final, {"saved_model.pb": "complete"})
    with pytest.raises(FileNotFoundError):
        with atomic_directory(final, last="saved_model.pb") as staging:
            fill(staging, {"variables/variables.index": "index"})
    assert listdir(root) == ["1"]
    assert read(os.path.join(final, "saved_model.pb")) == "complete"


def test_an_unreachable_remote_path_is_one_line_naming_it():
    # Issue 49, item 5: the message TensorFlow gives for a bucket it
    # cannot reach, as seen without network access.
    import tensorflow as tf

    from keras_bert.file_io import user_file_error

    error = tf.errors.FailedPreconditionError(
        None,
        None,
        "Error executing an HTTP request: libcurl code 6 meaning 'Could not resolve "
        "hostname', error details: Could not resolve host: www.googleapis.com\n\t when "
        "reading metadata of gs://no-such-bucket/dev.tsv",
    )
    assert user_file_error(error) == (
        "gs://no-such-bucket/dev.tsv: cannot be reached (Could not resolve host: "
        "www.googleapis.com)"
    )
    # Not a file system's error: left to surface as it is.
    assert user_file_error(tf.errors.FailedPreconditionError(None, None, "bad graph")) is None


def outside_folder(tmp_path):
    """A folder outside the tree to remove, with a file in it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    return outside


def test_remove_unlinks_links_and_never_follows_them(tmp_path):
    # Issue 67 item 2: TensorFlow's rmtree followed a link to a folder and
    # emptied its target.
    outside = outside_folder(tmp_path)
    tree = tmp_path / "run"
    (tree / "logs").mkdir(parents=True)
    (tree / "logs" / "served").symlink_to(outside)
    (tree / "linked_file").symlink_to(outside / "keep.txt")
    (tree / "export").symlink_to(outside)
    remove(str(tree / "export"))  # A link given itself: unlinked.
    assert not os.path.lexists(tree / "export")
    assert (outside / "keep.txt").read_text() == "mine"
    remove(str(tree))
    assert not tree.exists()
    assert sorted(os.listdir(outside)) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "mine"


def test_remove_takes_a_file_a_fifo_or_nothing(tmp_path):
    (tmp_path / "file").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    for name in ("file", "fifo", "absent"):
        remove(str(tmp_path / name))
    assert os.listdir(tmp_path) == []


def test_json_lines_keep_text_as_it_is(tmp_path):
    # Issue 68: one task's writer escaped non-ASCII ("caf\u00e9"), the
    # others did not; every task writes through this one now.
    path = tmp_path / "predictions.jsonl"
    write_jsonl_atomically([{"text": "café"}, {"text": "東京"}], str(path))
    assert path.read_text(encoding="utf-8") == '{"text": "café"}\n{"text": "東京"}\n'


def planted(folder, victim, names):
    """Links named `names` in `folder` to `victim`, as someone who can
    write in the folder could plant them before a write."""
    for name in names:
        (folder / name).symlink_to(victim)


def test_a_write_never_goes_through_a_planted_link(tmp_path):
    # Issue 82 item 3: `x.jsonl.partial` planted as a link to a file
    # outside had the write overwrite that file, and `x.jsonl` became a
    # link to it.
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    out = tmp_path / "out"
    out.mkdir()
    temporary = ["x.jsonl.partial", ".x.jsonl.partial", ".x.jsonl.tmp"]
    planted(out, victim, temporary + ["x.jsonl"])  # The final name too.
    write_atomically(str(out / "x.jsonl"), lambda f: (f.write("a é\n"), f.write(b"\x00b")))
    assert victim.read_text() == "mine"
    assert not (out / "x.jsonl").is_symlink()  # The link was replaced, its target kept.
    assert (out / "x.jsonl").read_bytes() == "a é\n\x00b".encode()
    assert sorted(os.listdir(out)) == sorted(temporary + ["x.jsonl"])  # Nothing left.


def test_the_temporary_file_is_created_exclusively(tmp_path, monkeypatch):
    # Were its random name known in advance, a link planted there would
    # make the write fail, never go through it (nor be removed).
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=7))
    partial = f".x.json.{uuid.UUID(int=7).hex}.partial"
    planted(tmp_path, victim, [partial])
    with pytest.raises(FileExistsError, match="x.json'$") as caught:
        write_atomically(str(tmp_path / "x.json"), lambda f: f.write("results"))
    assert caught.value.filename == str(tmp_path / "x.json")  # What the user named.
    assert victim.read_text() == "mine"
    assert sorted(os.listdir(tmp_path)) == [partial, "victim.txt"]


def test_a_written_file_has_the_mode_open_would_give_it(tmp_path):
    umask = os.umask(0o027)
    try:
        write_atomically(str(tmp_path / "x.json"), lambda f: f.write("{}"))
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "x.json").st_mode) == 0o640


def test_a_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    read = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_bytes()))
    reader.start()
    write_atomically(str(fifo), lambda f: (f.write("a é"), f.write(b"\n")))
    reader.join(timeout=10)
    assert read == ["a é\n".encode()]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
