"""Fill-mask probes: what a pre-trained model puts at `[MASK]`.

A model that uses context ranks "states" first in "the president of the
united [MASK]"; one stuck on the unigram plateau answers "the , ." whatever
the sentence. The pre-training run prints this next to a freshly
initialised model's answers.
"""

import numpy as np

from pipelines.limits import FILL_MASK_TOP_K
from pipelines.tasks.features import tokenize_texts


def fill_mask(model, tokenizer, sentences, top_k=FILL_MASK_TOP_K, objective=None):
    """Top-`top_k` fillers for each `[MASK]` of each sentence.

    Args:
        model: a pre-training model with an `mlm` output, built by
            `objective` (a `BertPretrainer`; an `ElectraPretrainer`, whose
            generator answers).
        tokenizer: `pipelines.BertTokenizer` of the model's vocabulary.
        sentences: list of str, each with one or more literal `[MASK]`s
            (the text around them is tokenized as usual).
        top_k: int.
        objective: the `PretrainingObjective` that built `model`: it
            completes the probes' inputs (`fill_mask_inputs`). None: the
            model takes the probes' inputs alone (a `BertPretrainer`).

    Returns:
        One list per sentence, one entry per `[MASK]`: a list of
        `(token, probability)` pairs, best first.
    """
    if not sentences:
        return []
    inputs, positions = masked_sentence_inputs(tokenizer, sentences)
    if objective is not None:
        inputs = objective.fill_mask_inputs(inputs)
    outputs = model.predict_on_batch({key: inputs[key] for key in model.input})
    answers = []
    for logits, masks in zip(np.asarray(outputs["mlm"], "float32"), positions):  # (slots, V)
        logits = logits[: len(masks)]
        # The best `top_k` found by a partial sort, then ranked: a full
        # sort of the vocabulary per mask cost more than the forward pass.
        k = min(top_k, logits.shape[-1])
        best = np.argpartition(-logits, k - 1, axis=-1)[:, :k]
        best_logits = np.take_along_axis(logits, best, -1)
        order = np.argsort(-best_logits, axis=-1)
        best, best_logits = (np.take_along_axis(x, order, -1) for x in (best, best_logits))
        peak = logits.max(axis=-1, keepdims=True)
        log_total = np.log(np.exp(logits - peak).sum(axis=-1, keepdims=True)) + peak
        probabilities = np.exp(best_logits - log_total)
        answers.append(
            [
                [(tokenizer.id_to_token(int(i)), float(p)) for i, p in zip(ids, probs)]
                for ids, probs in zip(best, probabilities)
            ]
        )
    return answers


def masked_sentence_inputs(tokenizer, sentences, second=None, max_length=None):
    """`(inputs, positions)`: a pre-training model's inputs for `sentences`
    (list of str, each with one or more literal `[MASK]`s) in one padded
    batch, and each sentence's `[MASK]` places (a list of int each). Its
    length and mask slots are rounded up to a multiple of 8: each new shape
    would compile the model's forward pass again (seconds under JAX or
    XLA). `second`: a list of str, each sentence's second segment
    (`[CLS] sentence [SEP] second [SEP]`). With `max_length`, a row is at
    most that many tokens: a sentence longer is cut, and its `[MASK]`s past
    the cut have no place (`positions` holds those kept); a second segment
    takes the room left, and none is added when there is none."""
    # Every sentence's text between its masks, tokenized in one call.
    texts = [sentence.split("[MASK]") for sentence in sentences]
    flat = [text for pieces in texts for text in pieces] + list(second or [])
    flat = iter(tokenize_texts(tokenizer, flat))
    room = max_length - 1 if max_length else None  # Tokens before a [SEP].
    sequences, positions = [], []
    for pieces in texts:
        ids = [tokenizer.cls_id]
        masks = []
        for i in range(len(pieces)):
            if i:
                masks.append(len(ids))
                ids.append(tokenizer.mask_id)
            ids.extend(next(flat))
        sequences.append(ids[:room] + [tokenizer.sep_id])
        positions.append([place for place in masks if room is None or place < room])
    first_lengths = [len(ids) for ids in sequences]
    if second is not None:
        for ids in sequences:
            tokens = next(flat)
            if room is None:
                ids.extend(tokens + [tokenizer.sep_id])
            elif len(ids) < room:
                ids.extend(tokens[: room - len(ids)] + [tokenizer.sep_id])
    length = _round_up(max(len(ids) for ids in sequences))
    if max_length:
        length = min(length, max_length)
    slots = _round_up(max(len(masks) for masks in positions))
    token_ids = np.full((len(sentences), length), tokenizer.pad_id, "int32")
    segment_ids = np.zeros_like(token_ids)
    mask_positions = np.zeros((len(sentences), slots), "int32")
    for row, (ids, masks) in enumerate(zip(sequences, positions)):
        token_ids[row, : len(ids)] = ids
        segment_ids[row, first_lengths[row] : len(ids)] = 1
        mask_positions[row, : len(masks)] = masks
    inputs = {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": (token_ids != tokenizer.pad_id).astype("int32"),
        "mask_positions": mask_positions,
    }
    return inputs, positions


def _round_up(size, multiple=8):
    return max(multiple, -(-size // multiple) * multiple)
