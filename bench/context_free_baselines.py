"""How far a masked LM gets without learning much context: n-gram baselines.

    PYTHONPATH=. .venv/bin/python bench/context_free_baselines.py

On the held-out files of the bundled corpus (`pipelines.split_files`, 5%,
seed 0), the share of up to 3,000 random positions per file whose token is
predicted by: the corpus' most frequent token (unigram), the most frequent
follower of the left neighbour (bigram), and the most frequent token between
both neighbours, all counted on the training files. Positions see their
neighbours unmasked, so these are upper bounds for such models under BERT's
masking. A pre-trained model stuck at the unigram level scores 12-14% held-out
MLM accuracy (it copies the 10% unchanged tokens); beating the two-neighbour
figure needs wider context. Never run by tests.
"""

import collections

import numpy as np
import tensorflow as tf

import pipelines

VOCAB = "data/vocab/bert_uncased_vocab.txt"


def token_ids(tokenizer, files):
    for path in files:
        with open(path, encoding="utf-8", errors="ignore") as f:
            yield tokenizer(tf.constant([f.read()])).flat_values.numpy()


def main():
    train, held_out = pipelines.split_files("data/corpus/*/*.txt", 0.05, seed=0,
                                            corpus_format="text")
    tokenizer = pipelines.BertTokenizer(VOCAB)
    unigram = collections.Counter()
    after = collections.defaultdict(collections.Counter)
    between = collections.defaultdict(collections.Counter)
    for ids in token_ids(tokenizer, train):
        unigram.update(ids.tolist())
        for i in range(1, len(ids) - 1):
            after[ids[i - 1]][ids[i]] += 1
            between[(ids[i - 1], ids[i + 1])][ids[i]] += 1
    top = unigram.most_common(1)[0][0]

    def best(counter, fallback):
        return counter.most_common(1)[0][0] if counter else fallback

    rng = np.random.default_rng(0)
    hits, total = np.zeros(3), 0
    for ids in token_ids(tokenizer, held_out):
        positions = rng.choice(np.arange(1, len(ids) - 1),
                               size=min(3000, len(ids) - 2), replace=False)
        for i in positions:
            left = best(after.get(ids[i - 1]), top)
            guesses = (top, left, best(between.get((ids[i - 1], ids[i + 1])), left))
            hits += [ids[i] == g for g in guesses]
            total += 1
    print(f"{len(held_out)} held-out files, {total} positions: unigram "
          f"{hits[0] / total:.1%}, left neighbour {hits[1] / total:.1%}, "
          f"both neighbours {hits[2] / total:.1%}")


if __name__ == "__main__":
    main()
