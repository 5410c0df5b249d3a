"""The Colab notebook runs end to end, as committed (issue 40).

`notebooks/bert_on_colab.ipynb` is executed with nbclient on a CPU, its
`parameters` cell followed by an injected one (papermill's way) that sets
`TINY = True` (a 1-layer, 16-wide BERT, a few updates), turns the inline
TensorBoard off and writes into a temporary folder. The committed file must
carry no outputs, so that a diff shows only code.
"""

import os
from pathlib import Path

import keras
import nbformat
import pytest

pytestmark = pytest.mark.backend_independent

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "bert_on_colab.ipynb"
SENTENCES = ("a gripping , funny and moving film .", "a dull , lifeless mess .")


def read_notebook():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    return notebook


def parameters_cell_index(notebook):
    tagged = [
        i for i, cell in enumerate(notebook.cells) if "parameters" in cell.metadata.get("tags", [])
    ]
    assert len(tagged) == 1, f"one cell tagged `parameters`; found {len(tagged)}"
    return tagged[0]


def test_committed_notebook_has_no_outputs():
    notebook = read_notebook()
    parameters_cell_index(notebook)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {index} has outputs: clear them"
            assert cell.execution_count is None, f"cell {index} has an execution count"


def test_readme_links_the_notebook():
    assert "(notebooks/bert_on_colab.ipynb)" in (ROOT / "README.md").read_text()


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the notebook sets KERAS_BACKEND=tensorflow itself; run it once",
)
def test_notebook_runs_end_to_end_on_a_cpu(tmp_path, monkeypatch):
    from nbclient import NotebookClient

    notebook = read_notebook()
    injected = nbformat.v4.new_code_cell(
        f"TINY = True\nTENSORBOARD = False\nWORK_DIR = {str(tmp_path / 'runs')!r}\n",
        metadata={"tags": ["injected-parameters"]},
    )
    notebook.cells.insert(parameters_cell_index(notebook) + 1, injected)
    # The kernel imports this checkout's keras_bert, wherever it is installed,
    # and sees no GPU even where the machine has one: CI trains on a CPU.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()

    printed = "".join(
        output.get("text", "")
        for output in notebook.cells[-1].outputs
        if output.output_type == "stream"
    )
    for sentence in SENTENCES:
        assert f"): {sentence}" in printed and "prediction '" in printed, printed
    assert list((tmp_path / "runs" / "logs").rglob("events.out.tfevents.*"))
    assert (tmp_path / "runs" / "backbone.keras").is_file()


def _install_cell_index(notebook):
    (index,) = [
        i
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and "keras_bert_repo" in cell.source
    ]
    return index


def _run_install_cell(tmp_path, parameters):
    """The parameters and install cells alone, in an empty folder (a fresh
    runtime), with `pip install` and `git clone` left out."""
    from nbclient import NotebookClient

    notebook = read_notebook()
    install = notebook.cells[_install_cell_index(notebook)]
    install.source = "\n".join(
        line.split("!")[0] + "pass" if line.strip().startswith("!") else line
        for line in install.source.splitlines()
    )
    notebook.cells = [
        notebook.cells[parameters_cell_index(notebook)],
        nbformat.v4.new_code_cell(parameters),
        install,
    ]
    NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    return "".join(output.get("text", "") + output.get("evalue", "") for output in install.outputs)


def test_a_fresh_runtime_without_a_source_is_told_what_to_set(tmp_path):
    # Issue 49: "Run all" stopped at `git clone` of a placeholder URL.
    printed = _run_install_cell(tmp_path, "")
    assert "Set SOURCE (an uploaded checkout or archive) or REPO_URL" in printed
    assert not (tmp_path / "keras_bert_repo").exists()


def test_a_fresh_runtime_installs_from_an_uploaded_archive(tmp_path):
    import subprocess

    archive = tmp_path / "upload" / "keras_bert.tar.gz"
    archive.parent.mkdir()
    subprocess.run(
        ["git", "archive", "--prefix=keras_bert-main/", "-o", str(archive), "HEAD"],
        cwd=ROOT,
        check=True,
    )
    runtime = tmp_path / "content"
    runtime.mkdir()
    printed = _run_install_cell(runtime, f"SOURCE = {str(archive)!r}")
    assert (runtime / "keras_bert_repo" / "keras_bert" / "pretrain.py").is_file()
    assert f"Working in {runtime / 'keras_bert_repo'}" in printed
