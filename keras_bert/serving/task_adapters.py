"""Per-model serving adapters: what goes in, what comes out.

Shape legend: B batch rows, T `seq_len`, C classes or choices, P `[MASK]`
slots, K `top_k`, H hidden size, N tag labels.

An adapter is looked up by the model's class name (walking its MRO, so a
subclass of `BertClassifier` serves as a classifier) and says which text
inputs `serving_default` takes and how raw model outputs become answers:

==================  ================  =======================================
model               text inputs       `serving_default` outputs
==================  ================  =======================================
BertBackbone        text_a, text_b    pooled_output, sequence_output,
                                      padding_mask, token_ids
BertPretrainer      text_a, text_b    top-k fill-mask tokens per "[MASK]",
                                      next-sentence probabilities
BertClassifier      text_a, text_b    probabilities, label, label_id,
                                      label_names
BertRegressor       text_a, text_b    score
BertSpanLabeler     question (text_a) answer, start_offset, end_offset
                    context (text_b)  (UTF-8 byte offsets in text_b), score;
                                      best span over doc-stride windows
BertTokenClassifier text_a            words, labels, label_ids, word
                                      offsets, one row slot per word
BertMultipleChoice  text_a (B,),      probabilities, choice, choice_text
                    text_b (B, C)
==================  ================  =======================================
"""

import dataclasses

import tensorflow as tf

from keras_bert.errors import ExportError
from keras_bert.serving import squad_windows


def _float32(outputs):
    return tf.nest.map_structure(
        lambda x: tf.cast(x, tf.float32) if x.dtype.is_floating else x, outputs
    )


def _label_names(model, count):
    names = getattr(model, "label_names", None) or [str(i) for i in range(count)]
    return tf.constant(names)


def _call(module, inputs):
    return _float32(module.forward(inputs))


# --- Backbone -----------------------------------------------------------------


def _backbone_text(module, text_a, text_b):
    features = module.preprocess(text_a, text_b)
    outputs = _call(module, module.model_inputs(features))
    return {
        "pooled_output": outputs["pooled_output"],  # (B, H)
        "sequence_output": outputs["sequence_output"],  # (B, T, H)
        "padding_mask": features["padding_mask"],  # (B, T)
        "token_ids": features["token_ids"],  # (B, T)
    }


# --- Pre-trainer: fill-mask ---------------------------------------------------


def _fill_mask_text(module, text_a, text_b):
    features = module.preprocess(text_a, text_b, split_masks=True)
    token_ids = features["token_ids"]  # (B, T)
    positions = tf.broadcast_to(tf.range(module.seq_len, dtype=tf.int32), tf.shape(token_ids))
    is_mask = token_ids == module.special_ids["mask"]
    positions = tf.ragged.boolean_mask(positions, is_mask)[:, : module.max_masks]
    mask_positions = positions.to_tensor(
        default_value=-1, shape=[None, module.max_masks]
    )  # (B, P), -1 = no [MASK] in this slot.
    valid = mask_positions >= 0
    inputs = module.model_inputs(features)
    inputs["mask_positions"] = tf.maximum(mask_positions, 0)
    outputs = _call(module, inputs)
    probabilities = tf.nn.softmax(outputs["mlm"])  # (B, P, V)
    top = tf.math.top_k(probabilities, k=module.top_k)  # (B, P, K)
    top_ids = tf.where(valid[:, :, None], top.indices, -1)
    return {
        "mask_positions": mask_positions,
        "top_k_token_ids": top_ids,
        "top_k_tokens": module.id_to_token.lookup(tf.cast(top_ids, tf.int64)),
        "top_k_probabilities": tf.where(valid[:, :, None], top.values, 0.0),
        "next_sentence_probabilities": tf.nn.softmax(outputs["nsp"]),  # (B, 2)
        "token_ids": token_ids,
    }


# --- Classifier and regressor -------------------------------------------------


def _classifier_text(module, text_a, text_b):
    features = module.preprocess(text_a, text_b)
    logits = _call(module, module.model_inputs(features))  # (B, C)
    names = _label_names(module.model, module.model.num_classes)  # (C,)
    label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return {
        "probabilities": tf.nn.softmax(logits),
        "label_id": label_id,
        "label": tf.gather(names, label_id),
        "label_names": tf.tile(names[None, :], [tf.shape(logits)[0], 1]),
    }


def _regressor_text(module, text_a, text_b):
    features = module.preprocess(text_a, text_b)
    score = _call(module, module.model_inputs(features))
    return {"score": tf.reshape(score, [-1])}  # (B,)


# --- Span labeler (SQuAD) -----------------------------------------------------


def _span_text(module, question, context):
    """`run_squad.py` evaluation in the graph: doc-stride windows, one model
    batch of every window of every request, the best n-best span with its
    start in its max-context window (see `squad_windows`)."""
    batch = tf.shape(question)[0]
    pieces = module.tokenize(tf.concat([question, context], 0))
    names = ("token_ids", "start_offsets", "end_offsets")
    query = {k: pieces[k][:batch] for k in names}  # (B, None)
    doc = {k: pieces[k][batch:] for k in names}
    doc_len = doc["token_ids"].row_lengths()  # (B,)
    query_len = tf.minimum(query["token_ids"].row_lengths(), module.max_query_length)
    windows = squad_windows.doc_windows(query_len, doc_len, module.seq_len, module.doc_stride)
    request = windows["request"]  # (N,)
    # Window n: its request's question, then context pieces
    # [start, start + length), gathered from the flat pieces of the batch.
    first = tf.gather(doc["token_ids"].row_starts(), request) + windows["start"]
    flat_index = tf.ragged.range(first, first + windows["length"])  # (N, None)
    features = module.pack(
        {k: tf.gather(v, request) for k, v in query.items()},
        {k: tf.gather(v.flat_values, flat_index) for k, v in doc.items()},
        has_b=tf.ones_like(request, tf.bool),  # [SEP] closes even no context.
        extras=("start_offsets", "end_offsets"),
        max_len_a=module.max_query_length,
    )  # (N, T) each.
    outputs = _call(module, module.model_inputs(features))
    starts = features["start_offsets"]  # (N, T), -1 for special tokens.
    ends = features["end_offsets"]
    in_context = (features["segment_ids"] == 1) & (starts >= 0)
    best_context = squad_windows.max_context(
        windows, query_len, doc_len, module.seq_len, module.doc_stride
    )  # (N, T)
    best = squad_windows.best_spans(
        outputs["start_logits"],
        outputs["end_logits"],
        in_window=features["padding_mask"] == 1,
        start_allowed=in_context & best_context,
        end_allowed=in_context,
        request=request,
        num_requests=batch,
        n_best_size=module.n_best_size,
        max_answer_length=module.max_answer_length,
    )
    found = best["found"]
    window = best["window"]  # (B,)
    start = tf.gather_nd(starts, tf.stack([window, best["start"]], 1))
    end = tf.gather_nd(ends, tf.stack([window, best["end"]], 1))
    start = tf.where(found, start, -1)
    end = tf.where(found, end, -1)
    answer = tf.strings.substr(context, tf.maximum(start, 0), tf.maximum(end - start, 0))
    return {
        "answer": tf.where(found, answer, ""),
        "start_offset": start,  # UTF-8 bytes into text_b; -1 = no answer.
        "end_offset": end,  # Exclusive.
        "score": best["score"],  # Start + end logit; 0 = no answer.
    }


# --- Token classifier (tagger) ------------------------------------------------


def _tagger_text(module, text_a, text_b):
    del text_b  # Taggers read one segment.
    features = module.preprocess(text_a, extras=("word_index",), whole_words=True)
    logits = _call(module, module.model_inputs(features))  # (B, T, N)
    label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)  # (B, T)
    word = features["word_index"]  # (B, T), -1 for special tokens.
    # A word is labelled by its first piece, as in fine-tuning (BERT §5.3).
    previous = tf.pad(word[:, :-1], [[0, 0], [1, 0]], constant_values=-1)
    first = (word >= 0) & (word != previous) & (word < module.seq_len)
    at = tf.where(first)  # (n, 2): (row, position).
    slot = tf.stack([at[:, 0], tf.cast(tf.gather_nd(word, at), tf.int64)], 1)
    shape = tf.shape(word, out_type=tf.int64)
    word_label = (
        tf.scatter_nd(slot, tf.gather_nd(label_ids, at) + 1, shape) - 1
    )  # (B, T) over word slots, -1 = no label.
    num_words = tf.reduce_max(
        tf.where(first, word + 1, 0), axis=1, keepdims=True
    )  # (B, 1): words up to the last one that fits in seq_len.
    in_row = tf.range(module.seq_len)[None, :] < num_words
    starts = tf.where(in_row, features["word_start_offsets"], -1)
    ends = tf.where(in_row, features["word_end_offsets"], -1)
    text = tf.broadcast_to(text_a[:, None], tf.shape(word))
    words = tf.strings.substr(text, tf.maximum(starts, 0), tf.maximum(ends - starts, 0))
    names = _label_names(module.model, module.model.num_labels)
    labels = tf.gather(names, tf.maximum(word_label, 0))
    return {
        "words": tf.where(in_row, words, ""),  # (B, T) word slots.
        "labels": tf.where(in_row & (word_label >= 0), labels, ""),
        "label_ids": tf.where(in_row, word_label, -1),
        "word_start_offsets": starts,  # UTF-8 bytes into text_a.
        "word_end_offsets": ends,
        "num_words": num_words[:, 0],
    }


# --- Multiple choice ----------------------------------------------------------


def _multiple_choice_text(module, text_a, text_b):
    num_choices = module.model.num_choices
    tf.debugging.assert_equal(
        tf.shape(text_b)[1],
        num_choices,
        message=f"text_b must have {num_choices} choices per row",
    )
    flat_b = tf.reshape(text_b, [-1])  # (B * C,)
    features = module.preprocess(tf.repeat(text_a, num_choices), flat_b)
    inputs = {
        k: tf.reshape(v, [-1, num_choices, module.seq_len])  # (B, C, T)
        for k, v in module.model_inputs(features).items()
    }
    logits = _call(module, inputs)  # (B, C)
    choice = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return {
        "probabilities": tf.nn.softmax(logits),
        "choice": choice,
        "choice_text": tf.gather(text_b, choice, batch_dims=1),
    }


# --- Token-id signature -------------------------------------------------------


def _ids_outputs(name):
    def serve_ids(module, inputs):
        outputs = _call(module, inputs)
        return outputs if isinstance(outputs, dict) else {name: outputs}

    return serve_ids


@dataclasses.dataclass(frozen=True)
class TaskAdapter:
    """How one model class is served.

    Attributes:
        text_inputs: "pair" (text_a, text_b), "question_context", "single"
            (text_a) or "choices" (text_a (B,), text_b (B, C)).
        serve_text: fn(module, text_a, text_b) -> dict of outputs.
        serve_ids: fn(module, inputs) -> dict of outputs.
        ids_shape: shape of each id input of `serve_token_ids`.
        mask_positions: bool. `serve_token_ids` also takes mask_positions.
        whole_text: bool. Tokenize every word of a request (doc-stride
            windows read the whole context); otherwise tokenization stops
            after `seq_len` words, all one window can hold.
    """

    text_inputs: str
    serve_text: object
    serve_ids: object
    ids_shape: tuple = (None, None)
    mask_positions: bool = False
    whole_text: bool = False


ADAPTERS = {
    "BertBackbone": TaskAdapter("pair", _backbone_text, _ids_outputs("")),
    "BertPretrainer": TaskAdapter("pair", _fill_mask_text, _ids_outputs(""), mask_positions=True),
    "BertClassifier": TaskAdapter("pair", _classifier_text, _ids_outputs("logits")),
    "BertRegressor": TaskAdapter("pair", _regressor_text, _ids_outputs("score")),
    "BertSpanLabeler": TaskAdapter(
        "question_context", _span_text, _ids_outputs(""), whole_text=True
    ),
    "BertTokenClassifier": TaskAdapter("single", _tagger_text, _ids_outputs("logits")),
    "BertMultipleChoice": TaskAdapter("choices", _multiple_choice_text, _ids_outputs("logits")),
}


def adapter_for(model):
    """The `TaskAdapter` for `model`'s class or its nearest base class."""
    for cls in type(model).__mro__:
        if cls.__name__ in ADAPTERS:
            adapter = ADAPTERS[cls.__name__]
            if cls.__name__ == "BertMultipleChoice":
                adapter = dataclasses.replace(adapter, ids_shape=(None, model.num_choices, None))
            return adapter
    raise ExportError(
        "`model` must be one of " + ", ".join(sorted(ADAPTERS)) + " (or a "
        f"subclass). Received: model of class {type(model).__name__}"
    )
