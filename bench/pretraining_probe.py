"""What a pre-trained model has learned, against a random twin (issue 6).

Probes of a `pretrainer.keras` written by `python -m keras_bert.pretrain`,
after a check of the data it was trained on (the 80/10/10 split at the
chosen positions of one pipeline batch):

* fill-mask: the top tokens for `[MASK]` in a few sentences (does the model
  use context, or predict frequent tokens everywhere?);
* embedding direction: the norm of the mean of the unit-length token
  embedding rows (0 = spread in all directions, 1 = all rows alike), over
  all rows and split by whether the corpus contains the token;
* `[CLS]` spread: per-feature standard deviation of the last layer's
  `[CLS]` vector across sentences, relative to its overall deviation.

The random twin is the same config freshly initialised. Never run by tests.

    KERAS_BACKEND=jax PYTHONPATH=. .venv/bin/python bench/pretraining_probe.py \
        /tmp/s3/mini_pt/pretrainer.keras \
        --sentences ../shared/data/glue/SST-2/dev.tsv
"""

import argparse
import glob

import numpy as np

PROBES = [
    "the president of the united [MASK] said",
    "he went to the [MASK] and bought some bread .",
    "i have not seen him for many [MASK] .",
]


def direction_norm(rows):
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return float(np.linalg.norm(unit.mean(axis=0)))


def cls_spread(backbone, token_ids, padding_mask):
    out = backbone.predict({"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
                            "padding_mask": padding_mask}, verbose=0)
    cls = out["sequence_output"][:, 0]
    return float(cls.std(axis=0).mean() / cls.std())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pretrainer", help="pretrainer.keras from keras_bert.pretrain")
    parser.add_argument("--corpus", default="data/corpus/*/*.txt")
    parser.add_argument("--vocab", default="data/vocab/bert_uncased_vocab.txt")
    parser.add_argument("--sentences", required=True,
                        help="TSV whose first column is a sentence (header skipped)")
    parser.add_argument("--num_sentences", type=int, default=256)
    args = parser.parse_args()

    import keras

    import keras_bert
    from pipelines.bert_tokenizer import BertTokenizer
    from pipelines.pretraining import pretraining_dataset
    from keras_bert.pretraining.fill_mask import fill_mask
    from pipelines.tasks.features import pack_pair, tokenize_texts

    model = keras.saving.load_model(args.pretrainer, compile=False)
    backbone = model.backbone
    tokenizer = BertTokenizer(args.vocab)
    vocab = tokenizer.vocabulary
    mask_id, cls_id, sep_id = tokenizer.mask_id, tokenizer.cls_id, tokenizer.sep_id

    # The data: what the chosen positions of one pipeline batch hold.
    features, labels, weights = next(iter(pretraining_dataset(
        args.corpus, args.vocab, corpus_format="text", seed=0)))
    chosen = weights["mlm"].numpy() > 0
    shown = np.take_along_axis(features["token_ids"].numpy(),
                               features["mask_positions"].numpy(), axis=1)[chosen]
    kept = shown == labels["mlm"].numpy()[chosen]
    masked = shown == mask_id
    print(f"one batch: {chosen.sum()} chosen tokens, [MASK] {masked.mean():.3f}, "
          f"kept {kept.mean():.3f}, random {(~masked & ~kept).mean():.3f}")

    for sentence, (fillers,) in zip(PROBES, fill_mask(model, tokenizer, PROBES, top_k=8)):
        print(f"fill-mask {sentence!r}: {[token for token, _ in fillers]}")

    counts = np.zeros(len(vocab), np.int64)
    for path in sorted(glob.glob(args.corpus)):
        with open(path, errors="ignore") as f:
            for ids in tokenize_texts(tokenizer, f.read().splitlines()):
                counts += np.bincount(ids, minlength=len(vocab))
    seen = counts > 0
    twin = keras_bert.BertBackbone.from_config(backbone.get_config())
    for name, net in (("pre-trained", backbone), ("random", twin)):
        rows = keras.ops.convert_to_numpy(net.token_embedding.embeddings)
        print(f"{name}: embedding direction norm all {direction_norm(rows):.3f}, "
              f"in corpus {direction_norm(rows[seen]):.3f}, "
              f"not in corpus ({(~seen).sum()} tokens) {direction_norm(rows[~seen]):.3f}")

    with open(args.sentences) as f:
        texts = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
    rows = tokenize_texts(tokenizer, texts[: args.num_sentences])
    length = 64
    token_ids = np.full((len(rows), length), tokenizer.pad_id, "int32")
    for i, ids in enumerate(rows):
        packed, _ = pack_pair(ids, None, length, cls_id, sep_id)
        token_ids[i, : len(packed)] = packed
    padding_mask = (token_ids != tokenizer.pad_id).astype("int32")
    for name, net in (("pre-trained", backbone), ("random", twin)):
        print(f"{name}: [CLS] spread across {len(rows)} sentences "
              f"{cls_spread(net, token_ids, padding_mask):.3f}")


if __name__ == "__main__":
    main()
