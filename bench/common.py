"""What the benchmarks share: where things are, the second interpreter that
runs the Hugging Face side, the task text without labels, Markdown tables.

Only the standard library at the top: the Hugging Face side imports this
module in the benchmark virtualenv, which has neither TensorFlow nor
keras_bert (bench/README.md says how to make it).
"""

import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# ../shared/data beside the checkout: GLUE, CoNLL-2003, SQuAD, the Gutenberg
# corpus (see its README); the benchmarks that need it say so when it is missing.
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data")
VOCAB = os.path.join(ROOT, "data", "vocab", "bert_uncased_vocab.txt")
# The benchmark virtualenv (requirements-bench.txt): torch and transformers,
# kept out of the project's .venv.
BENCH_PYTHON = os.path.join(ROOT, ".venv-bench", "bin", "python")


# === The Hugging Face side, in the benchmark virtualenv ===


def add_bench_python(parser):
    """The `--bench_python` option of the scripts with a Hugging Face side."""
    parser.add_argument(
        "--bench_python",
        default=BENCH_PYTHON,
        help="the interpreter of the benchmark virtualenv (torch, "
        "transformers: requirements-bench.txt) that runs the Hugging "
        "Face side",
    )


def module_command(python, module, *args):
    """`python -m module args...`: a benchmark run by another interpreter,
    or in a fresh process of this one."""
    return [python, "-m", module, *(str(a) for a in args)]


def subprocess_env(**variables):
    """This environment plus `variables`, with the repository first on
    PYTHONPATH: `python -m bench.X` then resolves in any interpreter and
    from any working directory."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, **variables, "PYTHONPATH": ROOT + (os.pathsep + path if path else "")}


def run_json(python, module, *args):
    """Runs `python -m module args...` to the end and returns the JSON
    object of its last line of output (the worker's result)."""
    out = subprocess.run(
        module_command(python, module, *args),
        env=subprocess_env(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


# === Task text, labels removed ===


def conll_articles(path):
    """CoNLL-2003 articles (between `-DOCSTART-` lines) as plain text."""
    articles, words = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            columns = line.split()
            if columns and columns[0] == "-DOCSTART-":
                if words:
                    articles.append(" ".join(words))
                words = []
            elif columns:
                words.append(columns[0])
    if words:
        articles.append(" ".join(words))
    return articles


def training_documents(task, data_dir):
    """The task's training split as unlabeled documents."""
    import pipelines.tasks as tasks

    if task == "sst2":
        glue = tasks.glue_data_dir("sst2", os.path.join(data_dir, "glue"))
        return [e.text_a for e in tasks.read_glue("sst2", os.path.join(glue, "train.tsv"))]
    return conll_articles(os.path.join(data_dir, "conll2003", "train.txt"))


def write_text(task, data_dir, out, files=20):
    """OUT/text/part-NN.txt, documents dealt round-robin (one file is held
    out by the pre-training config's `holdout_fraction`)."""
    documents = training_documents(task, data_dir)
    folder = os.path.join(out, "text")
    os.makedirs(folder, exist_ok=True)
    for i in range(files):
        with open(os.path.join(folder, f"part-{i:02d}.txt"), "w", encoding="utf-8") as f:
            f.write("".join(d.replace("\n", " ") + "\n" for d in documents[i::files]))
    print(
        f"text: {len(documents):,} {task} training documents, labels removed, "
        f"in {files} files under {folder}",
        flush=True,
    )
    return os.path.join(folder, "*.txt")


# === The machine ===


def processor():
    """The processor a measurement ran on, as BENCHMARKS.md names it: a
    conclusion about time holds for it alone (`AMD EPYC family 25 model 1,
    AVX2, 2 cores`: the Zen 3)."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        return f"unknown processor, {os.cpu_count()} cores"
    vector = "AVX-512" if "avx512f" in fields.get("flags", "").split() else "AVX2"
    return (
        f"{fields.get('model name', '?')} family {fields.get('cpu family', '?')} model "
        f"{fields.get('model', '?')}, {vector}, {os.cpu_count()} cores"
    )


# === Markdown tables ===


def markdown_row(cells):
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def markdown_table(header, rows):
    """A Markdown table (no trailing newline): `header` cells, then one
    line per row of cells."""
    return "\n".join(
        [markdown_row(header), "|" + "---|" * len(header)] + [markdown_row(row) for row in rows]
    )
