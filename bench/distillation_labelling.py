"""How fast a teacher labels a transfer set: `Teacher.batch_outputs` (the
rows tokenized together, batched by length in tokens, each batch padded
to a multiple of 8) against the labelling before it (the rows sorted by
length in characters, batched, each batch padded to a multiple of 16),
side by side in one process. With `--masked_lm`, also a shard of
TinyBERT-augmented copies made and labelled (`TransferSet.rows`, then
the teacher), its masked LM's best pieces ranked in the compiled forward
pass (what `distill` does) against the fill before it (the whole
vocabulary's logits at every mask slot ranked in numpy); both must make
the same copies.

    KERAS_BACKEND=jax python -m bench.distillation_labelling \
        --teacher runs/distill_sst2_t10/teacher_all \
        --sentences runs/distill_sst2_t10/data_1000/unlabelled.txt \
        [--masked_lm runs/pretrain_default/pretrainer.keras] \
        [--count 4096] [--batch_size 64] [--rounds 3]

`--teacher`: a fine-tuning run folder (a sentence task, or a tagger);
`--sentences`: a sentence a line (a tagger's: its words). A warm-up pass
of each path first (tracing, compilation per padded length), then
`--rounds` alternating rounds; the best round of each in sentences a
second, the share of the tokens computed that are real (not padding), and
the ratios. Never run by the test suite.
"""

import argparse
import time

import numpy as np

from keras_bert.distillation.config import TransferConfig
from keras_bert.distillation.masked_lm_words import MaskedLmAndNeighbourWords, MaskedLmWords
from keras_bert.distillation.neighbour_words import NeighbourWords
from keras_bert.distillation.teacher import Teacher
from keras_bert.distillation.transfer_set import TransferSet
from keras_bert.pretraining.fill_mask import masked_sentence_inputs
from pipelines.transfer_set import length_batches, sentence_batches, word_batches


def teacher_batches(teacher, rows, batch_size):
    """The teacher's packed inputs for `rows` in their order, `batch_size`
    a batch, each padded to its longest row rounded up to
    `LENGTH_MULTIPLE` tokens."""
    if teacher.tagging:
        return word_batches(
            [r["words"] for r in rows], teacher.tokenizer, teacher.max_seq_length, batch_size
        ).map(lambda inputs, first: inputs)
    return sentence_batches(
        [r["text_a"] for r in rows],
        [None] * len(rows),
        teacher.tokenizer,
        teacher.max_seq_length,
        batch_size,
    )


def labelled_before(teacher, rows, batch_size):
    """The labelling before `length_batches`: rows sorted by characters,
    batched in that order. Returns the tokens computed and the real ones."""
    rows = sorted(rows, key=lambda r: len(r.get("text_a") or " ".join(r["words"])))
    computed = real = 0
    for inputs in teacher_batches(teacher, rows, batch_size).as_numpy_iterator():
        np.asarray(teacher.model.predict_on_batch(inputs))
        computed += inputs["padding_mask"].size
        real += int(inputs["padding_mask"].sum())
    return computed, real


def labelled_now(teacher, rows, batch_size):
    for _ in teacher.batch_outputs(rows, batch_size):
        pass


class MaskedLmWordsBefore(MaskedLmWords):
    """`MaskedLmWords` ranking as it did before: the pretrainer's (B, P, V)
    logits at every mask slot brought back to numpy, each place's best
    pieces found there (without `fill_mask`'s probabilities and tokens,
    which it paid for too: the ratio is a lower bound)."""

    def ranked_pieces(self, sentences):
        inputs, positions = masked_sentence_inputs(self.tokenizer, sentences)
        logits = np.asarray(self.model.predict_on_batch(inputs)["mlm"], "float32")  # (B, P, V)
        logits = np.concatenate([row[: len(masks)] for row, masks in zip(logits, positions)])
        best = np.argpartition(-logits, self.asked - 1, axis=-1)[:, : self.asked]  # (N, asked)
        order = np.argsort(-np.take_along_axis(logits, best, -1), axis=-1)
        return np.take_along_axis(best, order, -1)


def augmented_labelling(teacher, sources, masked_lm_words):
    """A labelling path that makes as many TinyBERT-augmented copies of
    `sources` (rows: 20 copies after each, the bench's `+aug20+tinybert`)
    as it is given rows, with `masked_lm_words`, has the teacher label
    them, and returns them."""
    transfer = TransferConfig(
        copies=20, replace_probability=0.4, mask_probability=0, ngram_probability=0
    )
    neighbours = NeighbourWords(teacher.model.backbone, teacher.tokenizer, transfer.replace_top_k)
    replacer = MaskedLmAndNeighbourWords(masked_lm_words, neighbours)
    transfer_set = TransferSet(sources, [], transfer, 0, replacer)

    def label(teacher, rows, batch_size):
        made = transfer_set.rows(0, len(rows))
        for _ in teacher.batch_outputs(made, batch_size):
            pass
        return made

    return label


def real_share_now(teacher, rows, batch_size):
    """The share of real tokens in what `length_batches` computes."""
    inputs = next(teacher_batches(teacher, rows, len(rows)).as_numpy_iterator())
    computed = sum(b["padding_mask"].size for _, b in length_batches(inputs, batch_size))
    return int(inputs["padding_mask"].sum()) / computed


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.distillation_labelling", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--teacher", required=True, help="a fine-tuning run folder")
    parser.add_argument("--sentences", required=True, help="a sentence (its words) a line")
    parser.add_argument(
        "--masked_lm", help="also augmented copies, this pretrainer.keras filling their words"
    )
    parser.add_argument("--count", type=int, default=4096, help="the first COUNT lines")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    teacher = Teacher(args.teacher)
    with open(args.sentences, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()][: args.count]
    if teacher.tagging:
        rows = [{"words": line.split(), "labels": None} for line in lines]
    else:
        rows = [{"text_a": line, "text_b": None, "label": None} for line in lines]
    paths = {"before": labelled_before, "by token length": labelled_now}
    if args.masked_lm:
        for name, words in (
            ("copies, fill before", MaskedLmWordsBefore),
            ("copies", MaskedLmWords),
        ):
            paths[name] = augmented_labelling(
                teacher, rows, words(args.masked_lm, 15, args.batch_size)
            )
        if paths["copies"](teacher, rows, args.batch_size) != paths["copies, fill before"](
            teacher, rows, args.batch_size
        ):
            raise SystemExit("the two fills made different copies")
    best = dict.fromkeys(paths, 0.0)
    for round_ in range(args.rounds + 1):  # Round 0 warms up.
        for name, label in paths.items():
            start = time.perf_counter()
            label(teacher, rows, args.batch_size)
            speed = len(rows) / (time.perf_counter() - start)
            best[name] = max(best[name], speed) if round_ else 0.0
    computed, real = labelled_before(teacher, rows, args.batch_size)
    for name, speed in best.items():
        print(f"{name}: {speed:.0f} sentences/s (best of {args.rounds})")
    print(
        f"real tokens of those computed: before {real / computed:.2f}, by token length "
        f"{real_share_now(teacher, rows, args.batch_size):.2f}"
    )
    ratio = best["by token length"] / best["before"]
    print(
        f"by token length / before: {ratio:.2f}x ({len(rows)} sentences, batch {args.batch_size})"
    )
    if args.masked_lm:
        ratio = best["copies"] / best["copies, fill before"]
        print(f"copies made and labelled, ranked in the pass / fill before: {ratio:.2f}x")


if __name__ == "__main__":
    main()
