"""Checks that transformers loads keras_bert's Hugging Face exports.

Not part of the test suite (it needs torch and transformers): run it with
the reference venv described in `make_minilm_reference.py`, on folders
written by `python -m keras_bert.convert`:

    .venv-ref/bin/python tests/conversion/check_with_transformers.py FOLDER \
        [--expect minilm_reference.npz]

Loads FOLDER with the class named in its config (`BertModel` or
`BertForPreTraining`), fails on any missing or unexpected weight, and with
`--expect` compares the encoder outputs with a reference `.npz`.
"""

import argparse
import json
import os

import numpy as np
import torch
import transformers


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--expect", help="reference .npz (make_minilm_reference.py)")
    args = parser.parse_args()

    with open(os.path.join(args.folder, "config.json")) as f:
        (architecture,) = json.load(f)["architectures"]
    model_class = getattr(transformers, architecture)
    model, info = model_class.from_pretrained(
        args.folder, output_loading_info=True, attn_implementation="eager"
    )
    problems = {k: v for k, v in info.items() if v}
    if problems:
        raise SystemExit(f"{architecture}: loading problems {problems}")
    tokenizer = transformers.BertTokenizer(os.path.join(args.folder, "vocab.txt"))
    print(
        f"{architecture}: loaded with no missing/unexpected weights; "
        f"tokenizer has {len(tokenizer)} tokens"
    )
    if args.expect:
        reference = np.load(args.expect)
        encoder = model if architecture == "BertModel" else model.bert
        model.eval()
        with torch.no_grad():
            out = encoder(
                input_ids=torch.from_numpy(reference["token_ids"]).long(),
                token_type_ids=torch.from_numpy(reference["segment_ids"]).long(),
                attention_mask=torch.from_numpy(reference["padding_mask"]).long(),
            )
        for key, value in (
            ("sequence_output", out.last_hidden_state),
            ("pooled_output", out.pooler_output),
        ):
            diff = np.abs(value.numpy() - reference[key]).max()
            print(f"{key}: max |diff| {diff:.3g}")
            assert diff < 1e-4, key


if __name__ == "__main__":
    main()
