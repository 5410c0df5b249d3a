"""The serving tokenizer (`CoreOpsBertTokenizer`) at two git revisions, side
by side: the same inputs, the same ids, the time of each.

    KERAS_BACKEND=tensorflow python -m bench.tokenizer_revisions --before REV \
        [--after REV] [--calls 200] [--rounds 5]

`--before` / `--after` (default: the working tree): revisions whose
`keras_bert/serving/core_ops_bert_tokenizer.py` is loaded as a module of its
own (the rest of the package is the working tree's). Each tokenizes, with
the BERT uncased vocabulary, as `serve_text` does (`max_words_per_row`
128, the ids alone):

* corpus paragraphs long enough to fill 128 pieces, batch 1 and batch 32;
* hostile rows: 128 words of 200 characters that WordPiece splits into
  200 pieces (`a` then `##a`), into a few long pieces, or not at all.

Both revisions' ids are checked equal on every input first. The two take
turns for `--rounds` rounds (the machine's other load moves both alike);
each one's best round's median over `--calls` calls (a tenth as many for
the batch-32 and hostile inputs) is reported, and the ratio before/after.
Never run by the test suite.
"""

import argparse
import importlib.util
import os
import statistics
import subprocess
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from bench.common import ROOT, VOCAB, markdown_table, processor  # noqa: E402
from bench.serving import paragraphs  # noqa: E402

MODULE = "keras_bert/serving/core_ops_bert_tokenizer.py"


def tokenizer_class(revision, folder):
    """`CoreOpsBertTokenizer` as `revision` wrote it (None: the working
    tree's)."""
    path = os.path.join(ROOT, MODULE)
    if revision is not None:
        source = subprocess.run(
            ["git", "show", f"{revision}:{MODULE}"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        path = os.path.join(folder, f"tokenizer_{revision}.py".replace("/", "_"))
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
    spec = importlib.util.spec_from_file_location(f"tokenizer_{len(os.listdir(folder))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CoreOpsBertTokenizer


def inputs():
    """name -> (string tensor, calls per round as a share of `--calls`)."""
    text = paragraphs(32)
    return {
        "paragraph, batch 1": (text[:1], 1),
        "paragraphs, batch 32": (text, 0.1),
        "hostile: 128 x 'a' * 200 (200 pieces each)": ([" ".join(["a" * 200] * 128)], 0.1),
        "hostile: 128 x 'supercalifragilisticexpialidocious' * 5": (
            [" ".join(["supercalifragilisticexpialidocious" * 5] * 128)],
            0.1,
        ),
        "hostile: 128 x ('ab' * 60 + 'x')": ([" ".join(["ab" * 60 + "x"] * 128)], 0.1),
    }


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.tokenizer_revisions", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--before", required=True, help="a git revision")
    parser.add_argument("--after", help="a git revision (default: the working tree)")
    parser.add_argument("--calls", type=int, default=200, help="batch-1 calls timed a round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds the revisions alternate in")
    args = parser.parse_args()

    folder = tempfile.mkdtemp()
    spec = [tf.TensorSpec([None], tf.string)]
    tokenize = {}
    for label, revision in (("before", args.before), ("after", args.after)):
        tokenizer = tokenizer_class(revision, folder)(VOCAB, lower_case=True)
        tokenize[label] = tf.function(
            lambda t, tokenizer=tokenizer: tokenizer.tokenize(t, max_words_per_row=128)[
                "token_ids"
            ],
            input_signature=spec,
        )
    rows = []
    for name, (text, share) in inputs().items():
        text = tf.constant(text)
        before, after = (tokenize[label](text).to_list() for label in tokenize)
        assert before == after, f"the revisions' ids differ on {name}"
        calls = max(3, int(args.calls * share))
        rounds = {label: [] for label in tokenize}
        for _ in range(args.rounds):
            for label, fn in tokenize.items():
                times = []
                for _ in range(calls):
                    start = time.perf_counter()
                    fn(text)
                    times.append(time.perf_counter() - start)
                rounds[label].append(statistics.median(times))
        best = {label: 1000 * min(times) for label, times in rounds.items()}
        rows.append(
            [
                name,
                f"{best['before']:.3f}",
                f"{best['after']:.3f}",
                f"{best['before'] / best['after']:.2f}x",
            ]
        )
    after = args.after or "the working tree"
    print(
        f"### The serving tokenizer, {args.before} against {after}, {processor()}: the best "
        f"of {args.rounds} rounds' medians\n"
    )
    print(markdown_table(["input", "before (ms)", "after (ms)", "before / after"], rows))
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
