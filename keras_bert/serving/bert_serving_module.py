"""The `tf.Module` that becomes a TF Serving SavedModel.

Shape legend: B batch rows, T `seq_len`, C classes or choices, P `[MASK]`
slots (`max_masks`), K `top_k`, H hidden size.

Everything here is built under the TensorFlow backend, so the model's
forward pass traces to core TensorFlow ops; the tokenizer and packer are
core ops too. Signatures:

* `serving_default`: raw UTF-8 strings `text_a` and `text_b` (B,); an
  empty `text_b` row means a single segment. Multiple choice takes
  `text_b` of shape (B, C); a tagger takes `text_a` only.
* `serve_text`: `text_a` alone (single-segment requests); absent where
  `serving_default` already takes only `text_a` or needs `text_b`.
* `serve_token_ids`: `token_ids`, `segment_ids`, `padding_mask` int32
  (B, T) ((B, C, T) for multiple choice; pretrainers add `mask_positions`
  (B, P)); returns the Keras model's own outputs. An id outside its table
  ([0, vocabulary_size), [0, num_segments), padding 0/1, positions [0, T))
  fails the request (InvalidArgumentError); nothing is clipped or wrapped.
"""

import functools

import tensorflow as tf

from keras_bert.serving import task_adapters
from keras_bert.serving.core_ops_bert_tokenizer import CoreOpsBertTokenizer
from keras_bert.serving.fused_backbone import fused_forward
from pipelines import limits, packing

MASK_IN_TEXT = "[MASK]"
# The inputs of every model's `serve_token_ids`, in this order.
ID_INPUTS = ("token_ids", "segment_ids", "padding_mask")


def _function(fn):
    # No AutoGraph: nothing here branches on tensors in Python, and
    # converting Keras' call stack costs seconds per signature.
    return tf.function(fn, autograph=False)


PIECE_FEATURES = ("token_ids", "start_offsets", "end_offsets", "word_index")


def _whole_words(segment, budget):
    """Per-piece ragged features cut before the first word that overflows.

    Words are runs of increasing `word_index`, so a word fits entirely iff
    its index is below that of the piece at position `budget`.
    """
    word = segment["word_index"]  # (B, None)
    cut = word.to_tensor(default_value=tf.int32.max, shape=[None, budget + 1])
    keep = word < cut[:, budget][:, None]
    return {
        k: tf.ragged.boolean_mask(v, keep) if k in PIECE_FEATURES else v for k, v in segment.items()
    }


class BertServingModule(tf.Module):
    """Tokenizer + packer + model + task post-processing, as tf.functions.

    Args:
        model: a Keras model built under the TensorFlow backend: a
            `BertBackbone`, `BertPretrainer` or a task model with a
            `.backbone` (see `task_adapters.ADAPTERS`).
        vocabulary: list of str, the WordPiece vocabulary in id order.
        vocab_file: str path of that vocabulary; becomes the SavedModel
            asset `vocab.txt` (and backs the id-to-token table).
        lower_case: bool. Uncased tokenization.
        seq_len: int T. Requests are truncated to it.
        top_k: int. Fill-mask candidates per `[MASK]`. Defaults to 5.
        max_masks: int P. `[MASK]` tokens answered per row. Defaults to 20.
        max_answer_length: int. Longest span answer in pieces. Defaults to
            30, as in the original `run_squad.py`.
        max_query_length: int. Span labelers keep this many question
            pieces; the context fills the rest of each window. Defaults to
            64.
        doc_stride: int. Span labelers start a new context window this
            many pieces after the previous one. Defaults to 128.
        n_best_size: int. Start and end candidates per window for span
            labelers. Defaults to 20.
        jit_compile: bool. The model's forward pass compiled by XLA (the
            tokenizer and the task's post-processing are not). Faster on
            CPUs, most for a small model, whose time the per-op overhead
            dominates; stock TF Serving then needs
            `--xla_cpu_compilation_enabled=true`, and fails the first request
            without it. Defaults to False.

    The SQuAD settings are those fine-tuning evaluated with (`run_squad.py`
    defaults); a span labeler's export keeps them, with `seq_len`, as the
    int64 variables `squad_settings[name]` of the SavedModel.
    """

    def __init__(
        self,
        model,
        vocabulary,
        vocab_file,
        lower_case,
        seq_len,
        top_k=limits.FILL_MASK_TOP_K,
        max_masks=limits.FILL_MASK_MAX_MASKS,
        max_answer_length=limits.SQUAD_MAX_ANSWER_LENGTH,
        max_query_length=limits.SQUAD_MAX_QUERY_LENGTH,
        doc_stride=limits.SQUAD_DOC_STRIDE,
        n_best_size=limits.SQUAD_N_BEST_SIZE,
        jit_compile=False,
    ):
        super().__init__(name="bert_serving")
        # Not tracked: saving a tracked Keras model would also trace and save
        # its own call functions. `signatures()` tracks the tf.Variables the
        # traced graphs capture instead (as keras' ExportArchive does); the
        # Keras wrappers would be saved as separate, unrestored copies that
        # the TF1-style loaders of TF Serving and saved_model_cli reject.
        object.__setattr__(self, "model", model)
        # The backbone as a graph the runtime fuses (`fused_backbone`).
        forward = fused_forward(model)
        if jit_compile:
            forward = tf.function(forward, jit_compile=True, autograph=False)
        # Untracked too, for the same reason: traced into each signature.
        object.__setattr__(self, "forward", forward)
        self.adapter = task_adapters.adapter_for(model)
        self.tokenizer = CoreOpsBertTokenizer(vocabulary, lower_case=lower_case)
        # One traced tokenizer shared by every signature (tracing is slow).
        self.tokenize = tf.function(
            autograph=False,
            func=functools.partial(
                self.tokenizer.tokenize,
                max_words_per_row=None if self.adapter.whole_text else seq_len,
            ),
            input_signature=[tf.TensorSpec([None], tf.string)],
        )
        self.vocab_asset = tf.saved_model.Asset(vocab_file)
        self.id_to_token = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(
                self.vocab_asset,
                key_dtype=tf.int64,
                key_index=tf.lookup.TextFileIndex.LINE_NUMBER,
                value_dtype=tf.string,
                value_index=tf.lookup.TextFileIndex.WHOLE_LINE,
            ),
            default_value="",
        )
        index = {token: i for i, token in enumerate(vocabulary)}
        self.special_ids = {
            name: index[token]
            for name, token in (
                ("pad", "[PAD]"),
                ("cls", "[CLS]"),
                ("sep", "[SEP]"),
                ("mask", "[MASK]"),
            )
            if token in index
        }
        self.seq_len = seq_len
        self.top_k = top_k
        self.max_masks = max_masks
        self.max_answer_length = max_answer_length
        self.max_query_length = max_query_length
        self.doc_stride = doc_stride
        self.n_best_size = n_best_size
        self.lower_case = lower_case
        if self.adapter.text_inputs == "question_context":
            # Readable from the SavedModel, to check against the fine-tuning
            # config; the graph itself uses the Python ints.
            self.squad_settings = {
                name: tf.Variable(value, dtype=tf.int64, trainable=False, name=name)
                for name, value in (
                    ("seq_len", seq_len),
                    ("max_query_length", max_query_length),
                    ("doc_stride", doc_stride),
                    ("max_answer_length", max_answer_length),
                    ("n_best_size", n_best_size),
                )
            }

    # --- Preprocessing ------------------------------------------------------

    def _tokenize(self, texts, split_masks=False):
        """(N,) strings -> dict of ragged (N, None) per-piece features."""
        if not split_masks:
            return self.tokenize(texts)
        # A literal "[MASK]" in a fill-mask request is the mask token; the
        # text between masks is tokenized as usual.
        parts = tf.strings.split(texts, sep=MASK_IN_TEXT)  # (N, S)
        pieces = self.tokenize(parts.flat_values)["token_ids"]  # (sum S, None)
        # Every segment but the last of its row is followed by a [MASK].
        segment = tf.range(tf.size(parts.flat_values, out_type=tf.int64))
        is_last = segment == tf.gather(parts.row_limits() - 1, parts.value_rowids())
        mask_ids = tf.RaggedTensor.from_row_lengths(
            tf.fill(
                [tf.reduce_sum(tf.cast(~is_last, tf.int32))],
                tf.constant(self.special_ids["mask"], tf.int32),
            ),
            tf.cast(~is_last, tf.int64),
            validate=False,
        )
        joined = tf.concat([pieces, mask_ids], axis=1)
        ids = tf.RaggedTensor.from_row_splits(joined, parts.row_splits, validate=False)
        return {"token_ids": ids.merge_dims(1, 2)}

    def preprocess(
        self,
        text_a,
        text_b=None,
        split_masks=False,
        extras=(),
        whole_words=False,
    ):
        """Raw strings (B,) -> packed dense (B, T) features.

        Args:
            text_a, text_b: string (B,); text_b None for single segments.
            split_masks: bool. A literal "[MASK]" is the mask token.
            extras: names of tokenizer features to pack alongside the ids
                (`start_offsets`, `end_offsets`, `word_index`).
            whole_words: bool. Cut single segments at a word boundary, as
                the tagging reader does (a word that does not fit is
                dropped with all that follows).
        """
        text_a = tf.convert_to_tensor(text_a, tf.string)
        batch = tf.shape(text_a)[0]
        if text_b is None:
            seg_a = self._tokenize(text_a, split_masks)
            seg_b, has_b = None, None
        else:
            both = self._tokenize(tf.concat([text_a, text_b], 0), split_masks)
            seg_a = {k: v[:batch] for k, v in both.items()}
            seg_b = {k: v[batch:] for k, v in both.items()}
            has_b = tf.strings.length(text_b) > 0
        if whole_words:
            seg_a = _whole_words(seg_a, self.seq_len - 2)
        features = self.pack(seg_a, seg_b, has_b, extras)
        if "word_index" in extras:  # Taggers answer per word of text A.
            for name in ("word_start_offsets", "word_end_offsets"):
                features[name] = seg_a[name].to_tensor(default_value=-1, shape=[None, self.seq_len])
        return features

    def pack(self, seg_a, seg_b, has_b, extras=(), max_len_a=None):
        """Ragged per-piece segments (B, None) -> packed dense (B, T).

        Args:
            seg_a, seg_b: dicts with `token_ids` and the `extras`; seg_b
                None for single segments.
            has_b: bool (B,): rows that are pairs (ignored without seg_b).
            extras: names packed alongside the ids, -1 on special tokens
                and padding.
            max_len_a: optional int. SQuAD truncation (question first).
        """
        fills = {
            "token_ids": (
                self.special_ids["cls"],
                self.special_ids["sep"],
                self.special_ids["pad"],
            )
        }
        for name in extras:
            fills[name] = (-1, -1, -1)
        features = packing.pack(
            {k: seg_a[k] for k in fills},
            None if seg_b is None else {k: seg_b[k] for k in fills},
            has_b,
            self.seq_len,
            fills,
            max_len_a=max_len_a,
        )
        features["token_ids"] = tf.cast(features["token_ids"], tf.int32)
        return features

    def checked_ids(self, inputs):
        """`serve_token_ids` inputs, each id checked against its table.

        A request with an id outside [0, size) fails with
        InvalidArgumentError naming the input: an embedding gather would
        otherwise read token -5 as V - 5, silently.
        """
        backbone = getattr(self.model, "backbone", self.model)
        # name -> (table size, how the error names it)
        sizes = {
            "token_ids": (backbone.vocabulary_size, backbone.vocabulary_size),
            "segment_ids": (backbone.num_segments, backbone.num_segments),
            "padding_mask": (2, 2),
            "mask_positions": (tf.shape(inputs["token_ids"])[-1], "T"),
        }
        checks = []
        for name, value in inputs.items():
            size, shown = sizes[name]
            message = f"{name} must be in [0, {shown})"
            checks.append(tf.debugging.assert_non_negative(value, message))
            checks.append(tf.debugging.assert_less(value, tf.cast(size, value.dtype), message))
        with tf.control_dependencies(checks):
            return {name: tf.identity(value) for name, value in inputs.items()}

    def token_id_function(self, checked):
        """The concrete function of `serve_token_ids`: the id inputs
        (`ID_INPUTS`, and `mask_positions` for pretrainers) to the model's
        outputs; `checked` refuses an id outside its table
        (`checked_ids`)."""
        ids = tf.TensorSpec(self.adapter.ids_shape, tf.int32)
        specs = {name: ids for name in ID_INPUTS}
        if self.adapter.mask_positions:
            specs["mask_positions"] = tf.TensorSpec([None, None], tf.int32)

        def serve_ids(**inputs):
            return self.adapter.serve_ids(self, self.checked_ids(inputs) if checked else inputs)

        return _function(serve_ids).get_concrete_function(**specs)

    def model_inputs(self, features):
        return {name: features[name] for name in ID_INPUTS}

    # --- Signatures ---------------------------------------------------------

    def signatures(self):
        """dict signature name -> concrete function."""
        text = tf.TensorSpec([None], tf.string)
        kind = self.adapter.text_inputs
        signatures = {}
        if kind == "pair":
            signatures["serving_default"] = _function(
                lambda text_a, text_b: self.adapter.serve_text(self, text_a, text_b)
            ).get_concrete_function(text_a=text, text_b=text)
            signatures["serve_text"] = _function(
                lambda text_a: self.adapter.serve_text(self, text_a, None)
            ).get_concrete_function(text_a=text)
        elif kind == "question_context":
            signatures["serving_default"] = _function(
                lambda text_a, text_b: self.adapter.serve_text(self, text_a, text_b)
            ).get_concrete_function(text_a=text, text_b=text)
        elif kind == "single":
            signatures["serving_default"] = _function(
                lambda text_a: self.adapter.serve_text(self, text_a, None)
            ).get_concrete_function(text_a=text)
        elif kind == "choices":
            signatures["serving_default"] = _function(
                lambda text_a, text_b: self.adapter.serve_text(self, text_a, text_b)
            ).get_concrete_function(text_a=text, text_b=tf.TensorSpec([None, None], tf.string))
        signatures["serve_token_ids"] = self.token_id_function(checked=True)
        captured = {}
        for function in signatures.values():
            for variable in function.variables:
                captured.setdefault(id(variable), variable)
        self.captured_variables = list(captured.values())
        return signatures
