"""A student init for bench.distillation: a random BERT-Tiny backbone whose
token embeddings are its teacher's, reduced to the student's width.

    KERAS_BACKEND=jax python -m bench.teacher_embeddings \
        --teacher runs/minilm.keras --out runs/pca_tiny/backbone.keras

The teacher's token embedding matrix (vocabulary x its width), centred,
projected on its top principal components (as many as the student's
width), then scaled to the student's initial std, so the embedding
LayerNorm sees the token and the (random) position embeddings at the scale
it was built for. Everything else is BERT-Tiny's random init, seed 0; the
vocabulary is the teacher's. Pass the file as a cell's init:
`pca=runs/pca_tiny/backbone.keras:logits:text`.
"""

import argparse

import numpy as np


def main():
    parser = argparse.ArgumentParser(
        prog="python -m bench.teacher_embeddings", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--teacher", required=True, help="the teacher's backbone, as --init_checkpoint takes it"
    )
    parser.add_argument("--out", required=True, help="the student backbone to write (.keras)")
    parser.add_argument("--config", default="bert_tiny", help="the student's model config")
    args = parser.parse_args()

    import keras

    from keras_bert.finetuning.runner import load_backbone
    from keras_bert.model_configs import load_model_config
    from keras_bert.models import BertBackbone

    teacher = load_backbone(args.teacher)
    embeddings = np.asarray(teacher.token_embedding.embeddings)
    keras.utils.set_random_seed(0)
    student = BertBackbone(
        **{**load_model_config(args.config), "vocabulary_size": embeddings.shape[0]}
    )
    width = student.token_embedding.embeddings.shape[1]
    centred = embeddings - embeddings.mean(0)
    _, singular, components = np.linalg.svd(centred, full_matrices=False)
    reduced = centred @ components[:width].T
    scale = np.std(np.asarray(student.token_embedding.embeddings)) / reduced.std()
    student.token_embedding.embeddings.assign((reduced * scale).astype("float32"))
    student.vocabulary = teacher.vocabulary
    student.save(args.out)
    kept = (singular[:width] ** 2).sum() / (singular**2).sum()
    print(f"{args.out}: {width} of {embeddings.shape[1]} dimensions, {kept:.1%} of the variance")


if __name__ == "__main__":
    main()
