"""Pre-training input pipeline throughput, side by side.

    python -m bench.pipeline [--corpus ../shared/data/corpus/gutenberg]
        [--seconds 60] [--bench_python .venv-bench/bin/python]

Sequences per second, at 128 and 512 tokens, of

* `pipelines.pretraining_dataset` reading the raw books (`corpus_format=
  "text"`: tokenization, sentence splitting, NSP pair construction, packing
  and dynamic masking all in the tf.data graph, every epoch);
* the same from TFRecord shards written once by `python -m keras_bert.data`
  (pairs and masks still made every epoch);
* keras-hub's `BertMaskedLMPreprocessor` on ~seq_len-token text chunks
  (tokenize, pack one segment, mask; no NSP pairs);
* Hugging Face `tokenizers` (`BertTokenizerFast`) + `DataCollatorForLanguage
  Modeling` on the same chunks (no NSP pairs), run in the benchmark-only
  virtualenv given by `--bench_python` (see bench/README.md for how to make it).

With `--mixing`, it reports instead how many distinct documents a batch of
the raw-text pipeline holds (each sequence's segment A matched back to its
file by 4-token windows of unmasked ids), next to the expectation under a
global shuffle of the same sequences (documents weighted by their tokens):

    python -m bench.pipeline --mixing --corpus data/corpus

With `--fill`, it reports the share of real (non-padding) tokens per
sequence: SST-2's training sentences as a corpus of one-line documents
(`corpus_format="lines"`) at 128 tokens, one document per sequence against
`pack_documents=True`, and the bundled books at 128 and 512 tokens:

    python -m bench.pipeline --fill

Consumption is in the TensorFlow graph (`tf.function` over the iterator) or a
bare Python loop for Hugging Face, so the numbers are the pipelines' own.
Never run by the test suite.
"""

import argparse
import glob
import json
import os
import sys
import time

from bench.common import (
    DATA,
    ROOT,
    VOCAB,
    add_bench_python,
    markdown_row,
    markdown_table,
    run_json,
    write_text,
)

DEFAULT_CORPUS = os.path.join(DATA, "corpus", "gutenberg")
SETTINGS = {128: 20, 512: 80}  # seq_len -> max_predictions
BATCH_SIZE = 32


def corpus_files(corpus):
    files = sorted(glob.glob(os.path.join(corpus, "**", "*.txt"), recursive=True))
    if not files:
        sys.exit(
            f"No corpus at {corpus!r}: the benchmark reads "
            "../shared/data/corpus/gutenberg (pass --corpus)."
        )
    return files


def text_chunks(files, seq_len):
    """Whitespace words grouped ~seq_len wordpieces to a chunk."""
    words_per_chunk = int(seq_len * 0.75)
    chunks = []
    for path in files:
        with open(path, encoding="utf-8", errors="ignore") as f:
            words = f.read().split()
        for i in range(0, len(words), words_per_chunk):
            chunks.append(" ".join(words[i : i + words_per_chunk]))
    return chunks


def _cpu_seconds():
    """CPU time of this process, all threads, user + system."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rates(sequences, wall, cpu):
    return {"wall": sequences / wall, "cpu": sequences / cpu}


def time_tf_dataset(dataset, seconds):
    """Sequences/s of a batched dataset, consumed inside a tf.function."""
    import tensorflow as tf

    iterator = iter(dataset)

    @tf.function
    def consume(n):
        for _ in tf.range(n):
            next(iterator)
        return n

    consume(tf.constant(20))  # warm-up, fill buffers
    steps, start, cpu = 0, time.perf_counter(), _cpu_seconds()
    while time.perf_counter() - start < seconds:
        steps += int(consume(tf.constant(20)))
    return _rates(steps * BATCH_SIZE, time.perf_counter() - start, _cpu_seconds() - cpu)


def bench_ours(files, seq_len, seconds, corpus_format="text"):
    import pipelines

    dataset = pipelines.pretraining_dataset(
        files,
        VOCAB,
        seq_len=seq_len,
        max_predictions=SETTINGS[seq_len],
        batch_size=BATCH_SIZE,
        corpus_format=corpus_format,
        seed=0,
    )
    return time_tf_dataset(dataset, seconds)


def bench_keras_hub(files, seq_len, seconds):
    import keras_hub
    import tensorflow as tf

    tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=VOCAB, lowercase=True)
    preprocessor = keras_hub.models.BertMaskedLMPreprocessor(
        tokenizer,
        sequence_length=seq_len,
        mask_selection_rate=0.15,
        mask_selection_length=SETTINGS[seq_len],
    )
    chunks = text_chunks(files, seq_len)
    dataset = (
        tf.data.Dataset.from_tensor_slices(chunks)
        .repeat()
        .shuffle(10_000, seed=0)
        .batch(BATCH_SIZE, drop_remainder=True)
        .map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )
    return time_tf_dataset(dataset, seconds)


def bench_hugging_face(files, seq_len, seconds, collate=True):
    """Runs in the benchmark virtualenv (no TensorFlow there).

    `collate=True`: the documented path, examples through
    `DataCollatorForLanguageModeling.__call__` (pads, tensors, masks).
    `collate=False`: the fastest use of the same pieces, the tokenizer
    returning padded tensors and only the collator's masking step.
    """
    import random

    import torch
    from transformers import BertTokenizerFast, DataCollatorForLanguageModeling

    tokenizer = BertTokenizerFast(vocab_file=VOCAB, do_lower_case=True)
    collator = DataCollatorForLanguageModeling(
        tokenizer, mlm=True, mlm_probability=0.15, return_tensors="pt"
    )
    chunks = text_chunks(files, seq_len)
    random.Random(0).shuffle(chunks)

    def batches():
        while True:
            for i in range(0, len(chunks) - BATCH_SIZE + 1, BATCH_SIZE):
                yield chunks[i : i + BATCH_SIZE]

    def step(texts):
        if not collate:
            encoded = tokenizer(
                texts,
                truncation=True,
                max_length=seq_len,
                padding="max_length",
                return_tensors="pt",
                return_special_tokens_mask=True,
            )
            special = encoded.pop("special_tokens_mask").bool()
            return collator.torch_mask_tokens(encoded["input_ids"], special)
        encoded = tokenizer(
            texts, truncation=True, max_length=seq_len, return_special_tokens_mask=True
        )
        examples = [dict(zip(encoded.keys(), values)) for values in zip(*encoded.values())]
        return collator(examples)

    torch.manual_seed(0)
    stream = batches()
    for _ in range(5):
        step(next(stream))
    steps, start = 0, time.perf_counter()
    cpu = _cpu_seconds()
    while time.perf_counter() - start < seconds:
        step(next(stream))
        steps += 1
    return _rates(steps * BATCH_SIZE, time.perf_counter() - start, _cpu_seconds() - cpu)


HF_DOCUMENTED = "HF tokenizers + DataCollatorForLanguageModeling (mask, no NSP)"
HF_FAST = "HF tokenizers to tensors + collator.torch_mask_tokens (mask, no NSP)"


def document_mixing(files, batch_size, batches):
    """Distinct documents per batch: ours (mean, min, max) and the global
    shuffle's expectation, plus the share of sequences matched to a file."""
    import collections

    import numpy as np
    import tensorflow as tf

    import pipelines

    tokenizer = pipelines.BertTokenizer(VOCAB)
    window_to_files, tokens = collections.defaultdict(set), []
    for i, path in enumerate(files):
        with open(path, encoding="utf-8", errors="ignore") as f:
            ids = tokenizer(tf.constant([f.read()])).flat_values.numpy()
        tokens.append(len(ids))
        for j in range(len(ids) - 3):
            window_to_files[ids[j : j + 4].tobytes()].add(i)
    dataset = pipelines.pretraining_dataset(
        files,
        VOCAB,
        seq_len=128,
        max_predictions=20,
        batch_size=batch_size,
        corpus_format="text",
        seed=0,
    )
    counts, matched = [], 0
    for features, _labels, weights in dataset.take(batches):
        ids = features["token_ids"].numpy()
        mask = weights["mlm"].numpy() > 0
        masked = np.zeros(ids.shape, bool)
        np.put_along_axis(masked, features["mask_positions"].numpy(), mask, 1)
        documents = set()
        for row, row_masked in zip(ids, masked):
            end = int(np.argmax(row == 102))  # first [SEP]
            votes = collections.Counter()
            for j in range(1, end - 3):
                if not row_masked[j : j + 4].any():
                    votes.update(window_to_files.get(row[j : j + 4].tobytes(), ()))
            if votes:
                matched += 1
                documents.add(votes.most_common(1)[0][0])
        counts.append(len(documents))
    share = np.array(tokens, float) / sum(tokens)
    expected = float(np.sum(1 - (1 - share) ** batch_size))
    return {
        "mean": float(np.mean(counts)),
        "min": min(counts),
        "max": max(counts),
        "global_shuffle": expected,
        "matched": matched / (batch_size * batches),
    }


def print_mixing(files):
    print(f"\n{len(files)} files, seq_len 128\n")
    print(
        markdown_table(
            [
                "batch",
                "distinct documents per batch (mean, min-max)",
                "global shuffle (expected)",
                "ratio",
                "sequences matched",
            ],
            [],
        )
    )
    for batch_size, batches in ((32, 20), (128, 10)):  # a row as soon as it is measured
        r = document_mixing(files, batch_size, batches)
        print(
            markdown_row(
                [
                    batch_size,
                    f"{r['mean']:.1f} ({r['min']}-{r['max']})",
                    f"{r['global_shuffle']:.1f}",
                    f"{r['mean'] / r['global_shuffle']:.2f}",
                    f"{r['matched']:.0%}",
                ]
            )
        )


def real_token_share(files, corpus_format, seq_len, batches=50, **kwargs):
    """Mean share of non-padding positions over `batches` batches."""
    import numpy as np

    import pipelines

    dataset = pipelines.pretraining_dataset(
        files,
        VOCAB,
        seq_len=seq_len,
        max_predictions=SETTINGS.get(seq_len, 20),
        batch_size=BATCH_SIZE,
        corpus_format=corpus_format,
        seed=0,
        **kwargs,
    )
    return float(np.mean([f["padding_mask"].numpy().mean() for f, _, _ in dataset.take(batches)]))


def print_fill():
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as out:
        text = write_text("sst2", DATA, out)
        for pack in (False, True):
            rows.append(
                (
                    f"SST-2 train sentences, lines, pack_documents={pack}",
                    128,
                    real_token_share(
                        text, "lines", 128, next_sentence_rate=0.0, pack_documents=pack
                    ),
                )
            )
    books = corpus_files(os.path.join(ROOT, "data", "corpus"))
    for seq_len in (128, 512):
        for rate in (0.5, 0.0):
            rows.append(
                (
                    f"bundled books (data/corpus), text, next_sentence_rate={rate}",
                    seq_len,
                    real_token_share(books, "text", seq_len, next_sentence_rate=rate),
                )
            )
    print(f"\nbatch {BATCH_SIZE}, 50 batches each, seed 0\n")
    print(
        markdown_table(
            ["corpus", "seq_len", "real (non-padding) tokens"],
            [(name, seq_len, f"{share:.1%}") for name, seq_len, share in rows],
        )
    )


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.pipeline", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--corpus", default=DEFAULT_CORPUS)
    parser.add_argument(
        "--seconds",
        type=float,
        default=60.0,
        help="timed window per measurement; at least a few "
        "epochs of the corpus for the raw-text pipeline.",
    )
    add_bench_python(parser)
    parser.add_argument("--seq_len", type=int, action="append", help="default: 128 and 512")
    parser.add_argument(
        "--mixing", action="store_true", help="report documents per batch instead of speed"
    )
    parser.add_argument(
        "--fill", action="store_true", help="report the share of real tokens per sequence"
    )
    parser.add_argument("--only", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fill:
        print_fill()
        return
    files = corpus_files(args.corpus)
    if args.mixing:
        print_mixing(files)
        return
    seq_lens = args.seq_len or [128, 512]

    if args.only == "hugging_face":  # the worker in the benchmark venv
        print(
            json.dumps(
                {
                    name: {s: bench_hugging_face(files, s, args.seconds, collate) for s in seq_lens}
                    for name, collate in ((HF_DOCUMENTED, True), (HF_FAST, False))
                }
            )
        )
        return

    import tempfile

    import tensorflow as tf

    import pipelines

    results = {}
    name = "pipelines, raw text (tokenize + NSP pairs + mask, every epoch)"
    for seq_len in seq_lens:
        results[(name, seq_len)] = bench_ours(files, seq_len, args.seconds)
    with tempfile.TemporaryDirectory() as shards:
        start = time.perf_counter()
        info = pipelines.write_tfrecord_shards(
            files, shards, VOCAB, corpus_format="text", num_shards=16
        )
        print(
            f"(keras_bert.data: {info['tokens']:,} tokens to shards in "
            f"{time.perf_counter() - start:.0f}s)",
            file=sys.stderr,
        )
        name = "pipelines, TFRecord shards (NSP pairs + mask, every epoch)"
        for seq_len in seq_lens:
            results[(name, seq_len)] = bench_ours(
                os.path.join(shards, "*.tfrecord"), seq_len, args.seconds, corpus_format="tfrecord"
            )
    name = "keras-hub BertMaskedLMPreprocessor (tokenize + mask, no NSP)"
    for seq_len in seq_lens:
        results[(name, seq_len)] = bench_keras_hub(files, seq_len, args.seconds)
    if os.path.exists(args.bench_python):
        worker = run_json(
            args.bench_python,
            "bench.pipeline",
            "--only",
            "hugging_face",
            "--corpus",
            args.corpus,
            "--seconds",
            args.seconds,
            *sum([["--seq_len", s] for s in seq_lens], []),
        )
        for name, by_len in worker.items():
            for seq_len, rates in by_len.items():
                results[(name, int(seq_len))] = rates
    else:
        print(f"(no {args.bench_python}: Hugging Face rows skipped)", file=sys.stderr)

    names = list(dict.fromkeys(name for name, _ in results))
    hf = results.get((HF_DOCUMENTED, seq_lens[0]))
    print(
        f"\n{len(files)} files from {args.corpus}, batch {BATCH_SIZE}, "
        f"{os.cpu_count()} CPU cores, tensorflow {tf.__version__}, "
        f"load average {os.getloadavg()[0]:.1f} at the end\n"
    )
    columns = [f"seq/s @ {s}" for s in seq_lens] + [f"seq per CPU-s @ {s}" for s in seq_lens]
    if hf:
        columns.append(f"vs HF collator @ {seq_lens[0]} (per CPU-s)")
    table = []
    for name in names:
        row = [results.get((name, s)) for s in seq_lens]
        cells = [f"{r['wall']:,.0f}" if r else "-" for r in row]
        cells += [f"{r['cpu']:,.0f}" if r else "-" for r in row]
        if hf:
            cells.append(f"{results[(name, seq_lens[0])]['cpu'] / hf['cpu']:.1f}x")
        table.append([name] + cells)
    print(markdown_table(["pipeline"] + columns, table))


if __name__ == "__main__":
    main()
