"""Tiny BERT checkpoints for the conversion tests, built from ORIGINAL names.

The variable list below is written out from google-research/bert's
`modeling.py` scopes, independently of `keras_bert.conversion.bert_name_map`,
so a wrong entry in the map cannot hide behind the same wrong fixture.
"""

import json
import os

import keras
import numpy as np

# BertBackbone arguments of the tiny model every test uses.
TINY = dict(
    vocabulary_size=40,
    num_layers=2,
    num_heads=2,
    hidden_dim=8,
    intermediate_dim=16,
    dropout=0.0,
    attention_dropout=None,
    max_sequence_length=16,
    num_segments=2,
    hidden_activation="gelu",
    layer_norm_epsilon=1e-12,
)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    f"tok{i}" for i in range(TINY["vocabulary_size"] - 5)
]


def bert_config_json(config=TINY):
    """The original `bert_config.json` for a `BertBackbone` config."""
    return {
        "attention_probs_dropout_prob": config["dropout"],
        "hidden_act": "gelu",
        "hidden_dropout_prob": config["dropout"],
        "hidden_size": config["hidden_dim"],
        "initializer_range": 0.02,
        "intermediate_size": config["intermediate_dim"],
        "max_position_embeddings": config["max_sequence_length"],
        "num_attention_heads": config["num_heads"],
        "num_hidden_layers": config["num_layers"],
        "type_vocab_size": config["num_segments"],
        "vocab_size": config["vocabulary_size"],
    }


def original_shapes(config=TINY, heads=True, pooler=True):
    """{original name: shape} of BERT as google-research/bert names it."""
    h, i, v = (
        config["hidden_dim"],
        config["intermediate_dim"],
        config["vocabulary_size"],
    )
    shapes = {
        "bert/embeddings/word_embeddings": (v, h),
        "bert/embeddings/token_type_embeddings": (config["num_segments"], h),
        "bert/embeddings/position_embeddings": (
            config["max_sequence_length"],
            h,
        ),
        "bert/embeddings/LayerNorm/gamma": (h,),
        "bert/embeddings/LayerNorm/beta": (h,),
    }
    for layer in range(config["num_layers"]):
        s = f"bert/encoder/layer_{layer}"
        for part in ("query", "key", "value"):
            shapes[f"{s}/attention/self/{part}/kernel"] = (h, h)
            shapes[f"{s}/attention/self/{part}/bias"] = (h,)
        shapes[f"{s}/attention/output/dense/kernel"] = (h, h)
        shapes[f"{s}/attention/output/dense/bias"] = (h,)
        shapes[f"{s}/attention/output/LayerNorm/gamma"] = (h,)
        shapes[f"{s}/attention/output/LayerNorm/beta"] = (h,)
        shapes[f"{s}/intermediate/dense/kernel"] = (h, i)
        shapes[f"{s}/intermediate/dense/bias"] = (i,)
        shapes[f"{s}/output/dense/kernel"] = (i, h)
        shapes[f"{s}/output/dense/bias"] = (h,)
        shapes[f"{s}/output/LayerNorm/gamma"] = (h,)
        shapes[f"{s}/output/LayerNorm/beta"] = (h,)
    if pooler:
        shapes["bert/pooler/dense/kernel"] = (h, h)
        shapes["bert/pooler/dense/bias"] = (h,)
    if heads:
        shapes.update(
            {
                "cls/predictions/transform/dense/kernel": (h, h),
                "cls/predictions/transform/dense/bias": (h,),
                "cls/predictions/transform/LayerNorm/gamma": (h,),
                "cls/predictions/transform/LayerNorm/beta": (h,),
                "cls/predictions/output_bias": (v,),
                "cls/seq_relationship/output_weights": (2, h),
                "cls/seq_relationship/output_bias": (2,),
            }
        )
    return shapes


def random_weights(shapes, seed=0):
    """Seeded random float32 arrays; LayerNorm gammas near 1."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in shapes.items():
        value = rng.normal(0.0, 0.5, shape)
        if name.endswith("/gamma"):
            value = 1.0 + 0.2 * value
        weights[name] = value.astype("float32")
    return weights


def write_google_checkpoint(folder, weights, config=TINY, vocab=VOCAB, slots=False):
    """Writes `bert_model.ckpt`, `bert_config.json`, `vocab.txt` (TF1 names)."""
    import tensorflow as tf

    os.makedirs(folder, exist_ok=True)
    with tf.Graph().as_default():
        variables = {
            name: tf.compat.v1.Variable(value, name=name.replace("/", "_"))
            for name, value in weights.items()
        }
        if slots:  # What run_pretraining.py leaves next to the weights.
            variables["global_step"] = tf.compat.v1.Variable(np.int64(1000), name="global_step")
            for name, value in weights.items():
                for slot in ("adam_m", "adam_v"):
                    variables[f"{name}/{slot}"] = tf.compat.v1.Variable(
                        np.zeros_like(value),
                        name=f"{name}_{slot}".replace("/", "_"),
                    )
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(
                session,
                os.path.join(folder, "bert_model.ckpt"),
                write_meta_graph=False,
                write_state=False,
            )
    with open(os.path.join(folder, "bert_config.json"), "w") as f:
        json.dump(bert_config_json(config), f)
    if vocab is not None:
        with open(os.path.join(folder, "vocab.txt"), "w") as f:
            f.write("".join(t + "\n" for t in vocab))
    return os.path.join(folder, "bert_model.ckpt")


def run_model(model, inputs, mask_positions=None):
    """Numpy outputs of a keras_bert model (backbone or pretrainer)."""
    features = dict(inputs)
    if mask_positions is not None:
        features["mask_positions"] = mask_positions
    outputs = model(features, training=False)
    return {k: keras.ops.convert_to_numpy(v) for k, v in outputs.items()}
