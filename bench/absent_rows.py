"""Do the embedding rows of tokens a pre-training corpus never shows collapse?

With the masked-LM decoder tied to the token embeddings, every vocabulary
row whose token never occurs in the corpus gets only the softmax's push-down
gradient (p_i * h for each prediction), the same direction for all of them,
and no other. The hypothesis (issue 30): those rows drift together and lose
the distinctness of random init; a task whose words are absent from the
corpus then starts from rows that cannot tell its words apart.

    KERAS_BACKEND=jax PYTHONPATH=. .venv/bin/python bench/absent_rows.py \
        --config budget --backbone runs/pretrain_budget/backbone.keras

Prints, for the tokens absent from the config's training files and for the
present ones: their number, the mean pairwise cosine similarity of their
rows and the mean row norm, in a fresh random init of the same size and in
the pre-trained backbone; and the share of SST-2 and CoNLL-2003 token
occurrences (train and dev) whose token is absent; and the cosine of a few
sentiment word pairs (antonyms and synonyms), which a masked LM sees in the
same contexts. `--write_reset PATH` saves a copy of the backbone whose
absent rows are back at their random init: the rows that leaving absent
tokens out of the masked-LM softmax would have kept (weight decay aside),
to measure that remedy without pre-training again. Never run by the test suite.
"""

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data")


def mean_pairwise_cosine(rows):
    """Mean cosine similarity over all pairs i != j, in O(n d)."""
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    n, total = len(unit), unit.sum(axis=0)
    return float((total @ total - n) / (n * (n - 1)))


def token_counts(texts, tokenizer, vocabulary_size):
    import tensorflow as tf

    counts = np.zeros(vocabulary_size, np.int64)
    for start in range(0, len(texts), 4096):
        ids = tokenizer(tf.constant(texts[start:start + 4096])).flat_values.numpy()
        counts += np.bincount(ids, minlength=vocabulary_size)
    return counts


def corpus_counts(config, tokenizer, vocabulary_size):
    """Token counts over the config's training files, read as training reads them."""
    import pipelines
    from keras_bert.pretraining.pretraining import split_corpus

    train_files, _ = split_corpus(config.data)
    documents = pipelines.corpus.documents_dataset(
        train_files, tokenizer, corpus_format=config.data.corpus_format,
        shuffle=False)
    counts = np.zeros(vocabulary_size, np.int64)
    for document in documents:
        counts += np.bincount(document.flat_values.numpy(), minlength=vocabulary_size)
    return counts


WORD_PAIRS = [("good", "bad"), ("great", "terrible"), ("best", "worst"),
              ("funny", "boring"), ("beautiful", "ugly"), ("good", "great"),
              ("bad", "awful"), ("film", "movie")]


def task_texts(data_dir):
    """`{task: texts}` of SST-2 and CoNLL-2003 train + dev."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pipelines.tasks as tasks

    glue = tasks.glue_data_dir("sst2", os.path.join(data_dir, "glue"))
    sst2 = [e.text_a for split in ("train", "dev")
            for e in tasks.read_glue("sst2", os.path.join(glue, f"{split}.tsv"))]
    conll = [w for split in ("train", "valid")
             for s in tasks.read_conll(os.path.join(data_dir, "conll2003", f"{split}.txt"))
             for w in s.words]
    return {"SST-2": sst2, "CoNLL-2003": conll}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="the pre-training config")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--backbone", required=True, help="its pre-trained .keras")
    parser.add_argument("--data_dir", default=DATA)
    parser.add_argument("--write_reset", metavar="PATH",
                        help="save the backbone with its absent rows reset here")
    args = parser.parse_args()
    sys.path.insert(0, ROOT)
    import keras

    import pipelines
    from keras_bert.models import BertBackbone
    from keras_bert.pretraining import load_pretraining_config

    config = load_pretraining_config(args.config, args.set)
    tokenizer = pipelines.BertTokenizer(config.data.vocab_file,
                                        lower_case=config.data.lower_case)
    model = keras.saving.load_model(args.backbone, compile=False)
    trained = getattr(model, "backbone", model)
    size = trained.vocabulary_size
    keras.utils.set_random_seed(config.data.seed)
    fresh = BertBackbone.from_config(trained.get_config())
    table = {name: keras.ops.convert_to_numpy(backbone.token_embedding.embeddings)
             for name, backbone in (("random init", fresh), ("pre-trained", trained))}
    counts = corpus_counts(config, tokenizer, size)
    special = np.array([t.startswith("[") and t.endswith("]") for t in tokenizer.vocabulary])
    absent = (counts == 0) & ~special
    present = (counts > 0) & ~special
    print(f"\n{args.config}: {absent.sum():,} of {size:,} tokens never occur in its "
          f"training files ({counts.sum():,} tokens)\n")
    print("| rows | tokens | mean pairwise cosine: random init | pre-trained | "
          "mean norm: random init | pre-trained |")
    print("|---|---|---|---|---|---|")
    groups = [("absent from the corpus", absent)] + [
        (f"seen {low:,}-{high - 1:,} times", ~special & (counts >= low) & (counts < high))
        for low, high in ((1, 10), (10, 100), (100, 1000))]
    groups.append(("seen 1,000+ times", ~special & (counts >= 1000)))
    for name, rows in groups + [("present (all)", present)]:
        if rows.sum() < 2:
            continue
        cells = [f"{mean_pairwise_cosine(table[k][rows]):.3f}" for k in table]
        cells += [f"{np.linalg.norm(table[k][rows], axis=1).mean():.3f}" for k in table]
        print(f"| {name} | {rows.sum():,} | " + " | ".join(cells) + " |")
    print("\n| task (train + dev) | token occurrences | share whose token is absent | "
          "distinct tokens absent |")
    print("|---|---|---|---|")
    for task, texts in task_texts(args.data_dir).items():
        task_counts = token_counts(texts, tokenizer, size)
        used = task_counts > 0
        print(f"| {task} | {task_counts.sum():,} | "
              f"{task_counts[absent].sum() / task_counts.sum():.1%} | "
              f"{(used & absent).sum():,} of {used.sum():,} |")
    index = {token: i for i, token in enumerate(tokenizer.vocabulary)}
    print("\n| word pair | cosine: random init | pre-trained |\n|---|---|---|")
    for first, second in WORD_PAIRS:
        cells = []
        for rows in table.values():
            a, b = rows[index[first]], rows[index[second]]
            cells.append(f"{a @ b / np.linalg.norm(a) / np.linalg.norm(b):.2f}")
        print(f"| {first} / {second} | " + " | ".join(cells) + " |")
    if args.write_reset:
        reset = np.where(absent[:, None], table["random init"], table["pre-trained"])
        trained.token_embedding.embeddings.assign(reset)
        trained.save(args.write_reset)
        print(f"\nwrote {args.write_reset}: {absent.sum():,} absent rows reset")


if __name__ == "__main__":
    main()
