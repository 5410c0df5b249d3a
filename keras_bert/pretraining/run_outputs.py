"""What a finished pre-training run leaves: its models, exported as the
objective says (`export_models`), and the fill-mask report."""

import os
import time

import keras
import tensorflow as tf

from keras_bert.file_io import atomic_directory, remove, save_keras_atomically
from keras_bert.pretraining.fill_mask import fill_mask
from keras_bert.pretraining.run_setup import build_backbone
from pipelines import BertTokenizer


def fill_mask_report(pretraining):
    """Prints the top-5 fillers of `config.fill_mask_probes` by the trained
    model and by a freshly initialised one (the objective's masked LM: for
    ELECTRA the generator's); returns both."""
    config = pretraining.config
    tokenizer = BertTokenizer(config.data.vocab_file, lower_case=config.data.lower_case)
    untrained = pretraining.objective.build_model(build_backbone(config))
    report = {
        name: fill_mask(model, tokenizer, config.fill_mask_probes, objective=pretraining.objective)
        for name, model in (("trained", pretraining.model), ("untrained", untrained))
    }
    note = pretraining.objective.fill_mask_note
    print(
        f"Fill-mask, top 5{f' ({note} masked LM)' if note else ''} "
        "(trained model | freshly initialised model):",
        flush=True,
    )
    for i, sentence in enumerate(config.fill_mask_probes):
        print(f"  {sentence}")
        for name in ("trained", "untrained"):
            for fillers in report[name][i]:
                words = ", ".join(f"{t} {p:.3f}" for t, p in fillers)
                print(f"    {name:>9}: {words}")
    return report


def export_models(pretraining, model_dir):
    """What the objective exports (`PretrainingObjective.exports`: for the
    masked LM `backbone.keras` and `pretrainer.keras`) and, where the
    backend can, their SavedModels under `saved_model/<name>`.

    Each is written to a hidden temporary sibling and moved into place; a
    run killed mid-export leaves those siblings, removed here when the
    rerun exports again."""
    leftovers = tf.io.gfile.glob(os.path.join(model_dir, ".*.tmp.keras")) + tf.io.gfile.glob(
        os.path.join(model_dir, "saved_model", ".tmp-*")
    )
    for path in leftovers:
        remove(path)
    start = time.time()
    exports = pretraining.objective.exports(pretraining.model)
    print(f"Exporting {' and '.join(exports)} to {model_dir} ...", flush=True)
    for name, (model, _) in exports.items():
        save_keras_atomically(model, os.path.join(model_dir, f"{name}.keras"))
    if keras.backend.backend() == "torch":
        print(
            "SavedModel export needs the tensorflow or jax backend; wrote the .keras files only.",
            flush=True,
        )
        return
    kwargs = {}
    for name, (model, with_saved_model) in exports.items():
        if not with_saved_model:
            continue
        if keras.backend.backend() == "jax":
            # jax2tf cannot trace keras-hub's PositionEmbedding with a
            # symbolic sequence length: export at the longest phase's.
            seq_len = max(p.seq_len for p in pretraining.config.phases)
            kwargs["input_signature"] = [
                {
                    key: tf.TensorSpec(
                        (None, None if key == "mask_positions" else seq_len), tf.int32, name=key
                    )
                    for key in model.input
                }
            ]
        with atomic_directory(
            os.path.join(model_dir, "saved_model", name), last="saved_model.pb"
        ) as temp:
            model.export(temp, format="tf_saved_model", verbose=False, **kwargs)
    served = [name for name, (_, with_saved_model) in exports.items() if with_saved_model]
    print(
        f"Exported {' and '.join(exports)} (.keras; SavedModel: {', '.join(served)}) to "
        f"{model_dir} in {time.time() - start:.0f}s.",
        flush=True,
    )
