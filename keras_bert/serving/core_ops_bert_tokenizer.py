"""BERT's WordPiece tokenizer written with core TensorFlow ops only.

Stock TF Serving does not register tensorflow-text's kernels
(`FastWordpieceTokenizeWithOffsets`, `NormalizeUTF8`, ...), so a SavedModel
that tokenizes with them fails to load there. This module rebuilds
google-research/bert `tokenization.py` (`BasicTokenizer` + greedy
longest-match `WordpieceTokenizer`) from `tf.strings`, hash tables, ragged
ops and no loop; Unicode properties come from tables computed by
`unicode_tables.py` at export time. It must not import tensorflow_text.

Shape legend: B batch rows, N decoded characters in the batch, M characters
after normalisation, W words in the batch, A words still being split, K the
longest vocabulary piece in characters, P pieces in the batch.

Invalid UTF-8 is decoded with each bad sequence replaced by U+FFFD, which
the cleaning step then deletes, exactly as `bytes.decode("utf-8",
"replace")` followed by the original tokenizer would.
"""

import tensorflow as tf

from keras_bert.errors import ExportError
from keras_bert.serving import unicode_tables as ut
from pipelines.text_files import read_text

MAX_CHARS_PER_WORD = 200
# Bits of a step count in a word's WordPiece walk (at most one step a char).
_WALK_BITS = MAX_CHARS_PER_WORD.bit_length()


def _shift_right(x, fill):
    """x[i - 1] at position i; `fill` at position 0."""
    return tf.concat([tf.fill([1], tf.cast(fill, x.dtype)), x[:-1]], axis=0)


def _num_ids(ids):
    """1 + the largest id in (N,) int64 `ids`; 0 when empty."""
    return tf.reduce_max(tf.concat([ids, [-1]], axis=0)) + 1


def _select(mask, *tensors):
    """The entries of each 1-D tensor where `mask` holds: one `Where` shared
    by all, where `tf.boolean_mask` adds a dozen shape ops per tensor."""
    index = tf.where(mask)[:, 0]
    return [tf.gather(x, index) for x in tensors]


def _int64_table(keys, values, default):
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(keys, tf.int64), tf.constant(values, tf.int64)
        ),
        default_value=tf.constant(default, tf.int64),
    )


class CoreOpsBertTokenizer(tf.Module):
    """Raw strings to BERT WordPiece ids, built from core TensorFlow ops.

    Produces the ids of google-research/bert `FullTokenizer` (and therefore
    of `pipelines.BertTokenizer`): clean (delete U+0000, U+FFFD and Cc/Cf
    controls; whitespace to spaces), isolate CJK ideographs, split on
    whitespace, lower-case + NFD + drop Mn marks when `lower_case`, split
    around punctuation, then greedy longest-match-first WordPiece with `##`
    continuation pieces; a word longer than 200 characters or without a
    full split becomes `[UNK]`. Byte offsets into the input come along so a
    span answer can be cut out of the original text.

    Args:
        vocabulary: str path to a `vocab.txt` (one token per line, id =
            line number) or a list of str tokens in id order.
        lower_case: bool. Uncased model. Defaults to True.
        unk_token: str. Defaults to `"[UNK]"`.

    Call `tokenize(text)` with a string tensor of shape (B,); returns a dict
    of ragged (B, None) tensors: `token_ids` int32, `start_offsets` and
    `end_offsets` int64 byte offsets of each piece in its input, and
    `word_index` int32, the whitespace-separated word (counted from 0 in its
    row) each piece came from, plus (B, None) `word_start_offsets` and
    `word_end_offsets` of those words.

    Example:
    >>> tokenizer = CoreOpsBertTokenizer(
    ...     ["[PAD]", "[UNK]", "hello", "world", "##s", "!"])
    >>> tokenizer.tokenize(tf.constant(["Hello worlds!"]))["token_ids"]
    <tf.RaggedTensor [[2, 3, 4, 5]]>
    """

    def __init__(self, vocabulary, lower_case=True, unk_token="[UNK]"):
        super().__init__(name="core_ops_bert_tokenizer")
        if isinstance(vocabulary, str):
            vocabulary = read_text(vocabulary, ExportError).splitlines()
        vocabulary = list(vocabulary)
        # load_vocab() strips each line; a later duplicate overwrites.
        index = {token.strip(): i for i, token in enumerate(vocabulary)}
        if unk_token not in index:
            raise ExportError(
                f"`vocabulary` must contain `unk_token`. Received: "
                f"unk_token={unk_token!r}, vocabulary of {len(vocabulary)} "
                f"tokens starting {vocabulary[:5]}"
            )
        self.vocabulary = vocabulary
        self.lower_case = lower_case
        self.unk_token = unk_token
        self.unk_id = index[unk_token]
        # Longest piece in characters, "##" excluded: no candidate is longer.
        self.max_piece_chars = min(
            MAX_CHARS_PER_WORD,
            max(len(t[2:] if t.startswith("##") else t) for t in index),
        )
        self.vocab_table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(list(index)),
                tf.constant(list(index.values()), tf.int64),
            ),
            default_value=tf.constant(-1, tf.int64),
        )
        tables = ut.unicode_tables()
        self.class_table = _int64_table(tables["class_keys"], tables["class_values"], 0)
        self.ccc_table = _int64_table(tables["ccc_keys"], tables["ccc_values"], 0)
        self.map_table = _int64_table(tables["map_keys"], range(len(tables["map_keys"])), -1)
        self.map_splits = tf.constant(tables["map_splits"], tf.int64)
        self.map_values = tf.constant(tables["map_values"], tf.int64)
        self.unidata_version = tables["unidata_version"]

    # --- Character level --------------------------------------------------

    def _flags(self, codepoints):
        return self.class_table.lookup(codepoints)

    def _is_cjk(self, codepoints):
        # One search over the ranges' sorted bounds: inside a range, the
        # count of bounds at or below a code point is odd.
        bounds = sorted(b for lo, hi in ut.CJK_RANGES for b in (lo, hi + 1))
        inside = tf.searchsorted(tf.constant(bounds, tf.int64), codepoints, side="right")
        return inside % 2 == 1

    def _final_sigmas(self, cp, word, flags):
        """True where U+03A3 lowers to final sigma (CPython's str.lower)."""
        solid = (flags & ut.CASE_IGNORABLE) == 0
        solid_positions = tf.where(solid)[:, 0]  # Non-ignorable chars, sorted.
        num_solid = tf.shape(solid_positions, out_type=tf.int64)[0]
        solid_positions = tf.concat([solid_positions, [0]], axis=0)
        solid_upto = tf.cumsum(tf.cast(solid, tf.int64))  # Inclusive count.
        solid_before = solid_upto - tf.cast(solid, tf.int64)
        cased = (flags & ut.CASED) != 0

        def neighbour(k):  # The k-th solid char, if inside the same word.
            ok = (k >= 0) & (k < num_solid)
            pos = tf.gather(solid_positions, tf.clip_by_value(k, 0, num_solid))
            pos = tf.where(ok, pos, 0)
            ok &= tf.gather(word, pos) == word
            return ok & tf.gather(cased, pos)

        prev_cased = neighbour(solid_before - 1)
        next_cased = neighbour(solid_upto)
        return (cp == ut.CAPITAL_SIGMA) & prev_cased & ~next_cased

    def _normalize(self, cp, src, word):
        """Lower-case, NFD, drop Mn: per char via the table, then reorder.

        Returns the normalised code points (M,) with, for each, the index of
        the source char and its word.
        """
        row = self.map_table.lookup(cp)  # (N,) -1 = maps to itself.
        mapped = row >= 0
        safe_row = tf.maximum(row, 0)
        begin = tf.where(mapped, tf.gather(self.map_splits, safe_row), 0)
        limit = tf.where(mapped, tf.gather(self.map_splits, safe_row + 1), begin + 1)
        take = tf.ragged.range(begin, limit)
        owner = take.value_rowids()  # (M,) index into the N chars.
        out_cp = tf.where(
            tf.gather(mapped, owner),
            tf.gather(self.map_values, take.flat_values),
            tf.gather(cp, owner),
        )
        out_src = tf.gather(src, owner)
        out_word = tf.gather(word, owner)
        # NFD's canonical ordering: within each run of marks (ccc > 0) of a
        # word, sort stably by combining class. Only matters for the few
        # marks that are not Mn (stripped next), e.g. U+302E, U+1D165.
        ccc = self.ccc_table.lookup(out_cp)
        keep = (self._flags(out_cp) & ut.NONSPACING_MARK) == 0

        def reorder():
            run_start = (ccc == 0) | (out_word != _shift_right(out_word, -1))
            run = tf.cumsum(tf.cast(run_start, tf.int64))
            order = tf.argsort(run * 256 + ccc, stable=True)
            return [tf.gather(x, order) for x in (out_cp, out_src, out_word, keep)]

        # The sort can only matter when a surviving mark exists.
        out_cp, out_src, out_word, keep = tf.cond(
            tf.reduce_any((ccc > 0) & keep),
            reorder,
            lambda: [out_cp, out_src, out_word, keep],
        )
        return _select(keep, out_cp, out_src, out_word)

    def _words(self, text):
        """Runs BasicTokenizer on a batch; words come back as char runs."""
        text = tf.convert_to_tensor(text, tf.string)
        decoded, starts = tf.strings.unicode_decode_with_offsets(
            text, "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        cp = tf.cast(decoded.flat_values, tf.int64)  # (N,)
        rows = decoded.value_rowids()
        starts = starts.flat_values
        # A char's end byte is where the next one in its row starts.
        next_rows = tf.concat([rows[1:], [-1]], axis=0)
        next_starts = tf.concat([starts[1:], [0]], axis=0)
        byte_lengths = tf.cast(tf.strings.length(text), tf.int64)
        ends = tf.where(next_rows == rows, next_starts, tf.gather(byte_lengths, rows))

        flags = self._flags(cp)
        keep = (flags & ut.DELETE) == 0
        cp, rows, starts, ends, flags = _select(keep, cp, rows, starts, ends, flags)
        space = (flags & ut.SPACE) != 0
        cjk = self._is_cjk(cp)
        # A word starts at a non-space char after a space, a row start, or a
        # CJK ideograph, and at every CJK ideograph (they stand alone).
        new_row = rows != _shift_right(rows, -1)
        word_start = ~space & (new_row | _shift_right(space, True) | _shift_right(cjk, True) | cjk)
        word = tf.cumsum(tf.cast(word_start, tf.int64)) - 1  # (N,) word id.
        solid = ~space
        cp, rows, starts, ends, flags, word = _select(solid, cp, rows, starts, ends, flags, word)
        src = tf.range(tf.shape(cp, out_type=tf.int64)[0])
        char_word = word
        if self.lower_case:
            cp = tf.cond(
                tf.reduce_any(cp == ut.CAPITAL_SIGMA),
                lambda: tf.where(
                    self._final_sigmas(cp, word, flags),
                    tf.constant(ut.FINAL_SIGMA, tf.int64),
                    cp,
                ),
                lambda: cp,
            )
            cp, src, word = self._normalize(cp, src, word)
        # Split around punctuation: each punctuation char is its own piece
        # of text. Words left empty by accent stripping vanish here.
        punct = (self._flags(cp) & ut.PUNCT) != 0
        split = (word != _shift_right(word, -1)) | punct | _shift_right(punct, False)
        piece_word = tf.cumsum(tf.cast(split, tf.int64)) - 1  # (M,)
        return {
            "text": text,
            "codepoints": cp,
            "piece_word": piece_word,
            "word": word,  # Whitespace word of each char (global id).
            "src": src,  # Source char of each char.
            # Per source char (N after cleaning and whitespace removal):
            "char_word": char_word,
            "rows": rows,
            "starts": starts,
            "ends": ends,
        }

    # --- WordPiece ----------------------------------------------------------

    def _wordpiece(self, words, num_chars):
        """Greedy longest-match-first split of each of W words.

        Returns flat (P,) tensors sorted by word then position: word index,
        vocabulary id, first char, end char (exclusive) within the word.
        """
        too_long = num_chars > MAX_CHARS_PER_WORD
        # Fast path: most words are a vocabulary entry as a whole, which is
        # then the longest match; only the rest are split.
        whole_id = self.vocab_table.lookup(words)
        whole = (whole_id >= 0) & ~too_long
        whole_idx = tf.where(whole)[:, 0]
        split_idx = tf.where(~whole & ~too_long & (num_chars > 0))[:, 0]  # (A,)
        split_word, ids, begin, end, failed = self._split(
            tf.gather(words, split_idx), tf.gather(num_chars, split_idx)
        )
        word_idx = tf.concat([whole_idx, tf.gather(split_idx, split_word)], 0)
        ids = tf.concat([tf.gather(whole_id, whole_idx), ids], 0)
        begin = tf.concat([tf.zeros_like(whole_idx), begin], 0)
        end = tf.concat([tf.gather(num_chars, whole_idx), end], 0)
        # A word with any unmatched piece, or too long, is a single [UNK].
        unk_words = tf.concat([tf.where(too_long)[:, 0], tf.gather(split_idx, failed)], 0)
        word_idx = tf.concat([word_idx, unk_words], 0)
        ids = tf.concat([ids, tf.fill(tf.shape(unk_words), tf.cast(self.unk_id, tf.int64))], 0)
        begin = tf.concat([begin, tf.zeros_like(unk_words)], 0)
        end = tf.concat([end, tf.gather(num_chars, unk_words)], 0)
        order = tf.argsort(word_idx * (MAX_CHARS_PER_WORD + 1) + begin, stable=True)
        return [tf.gather(x, order) for x in (word_idx, ids, begin, end)]

    def _split(self, words, lengths):
        """WordPiece of A words of 1..`MAX_CHARS_PER_WORD` characters, with
        no loop: a `tf.while_loop` step per piece cost more than the
        lookups (its control-flow nodes run per step and per loop
        variable), so every piece that may start at every character is
        looked up at once, and the greedy walk is read off by doubling.

        Returns `(word, id, begin, end, failed)`: flat (Q,) tensors of the
        pieces of the words that split fully, by word then position
        (`word` indexes the A words; `begin`/`end` are char positions), and
        the (F,) indices of the words that did not.
        """
        longest = tf.reduce_max(tf.concat([lengths, [0]], 0))  # L
        # Position L + 1 stands for a failed walk; positions at or past a
        # word's end stay where they are.
        failure = longest + 1
        positions = tf.range(longest + 2, dtype=tf.int64)  # (L + 2,)
        sizes = tf.range(
            1, tf.minimum(tf.constant(self.max_piece_chars, tf.int64), longest) + 1
        )  # (K,)
        remaining = lengths[:, None] - positions[None, :]  # (A, L + 2)
        # Every piece that fits in its word at every position, flat: (V, 3)
        # (word, position, size - 1).
        fits = tf.where(sizes[None, None, :] <= remaining[:, :, None])
        word, position, size = fits[:, 0], fits[:, 1], fits[:, 2] + 1
        candidates = tf.strings.substr(tf.gather(words, word), position, size, unit="UTF8_CHAR")
        candidates = tf.where(position > 0, tf.strings.join(["##", candidates]), candidates)
        ids = self.vocab_table.lookup(candidates)  # (V,)
        # The longest hit at each position and its id, as one max over
        # `size * 2**32 + id` (ids are below 2**31); 0: no hit.
        width = longest + 2
        best = tf.maximum(
            tf.math.unsorted_segment_max(
                tf.where(ids >= 0, tf.bitwise.left_shift(size, 32) + ids, 0),
                word * width + position,
                tf.size(lengths, out_type=tf.int64) * width,
            ),
            0,
        )
        best = tf.reshape(best, tf.stack([-1, width]))  # (A, L + 2)
        best_id = tf.bitwise.bitwise_and(best, 0xFFFFFFFF)
        best = tf.bitwise.right_shift(best, 32)
        step = tf.where(
            remaining <= 0,
            positions[None, :],
            tf.where(best > 0, positions[None, :] + best, failure),
        )  # (A, L + 2): where the walk goes next from each position.
        # jumps[k]: the walk's position after 2**k steps from each position.
        jumps = [step]
        for _ in range(1, _WALK_BITS):
            jumps.append(tf.gather(jumps[-1], jumps[-1], batch_dims=1))
        # walk[:, m]: the position after m steps from 0, m = 0..L (a word of
        # L chars is done, or failed, within L steps).
        steps = tf.range(longest + 1, dtype=tf.int64)
        walk = tf.zeros(tf.stack([tf.size(lengths, out_type=tf.int64), longest + 1]), tf.int64)
        for k, jump in enumerate(jumps):
            walk = tf.where(
                tf.bitwise.bitwise_and(steps[None, :], 1 << k) > 0,
                tf.gather(jump, walk, batch_dims=1),
                walk,
            )
        failed = walk[:, -1] == failure
        pieces = tf.where((walk[:, :-1] < lengths[:, None]) & ~failed[:, None])  # (Q, 2)
        begin = tf.gather_nd(walk, pieces)
        end = tf.gather_nd(walk[:, 1:], pieces)
        word = pieces[:, 0]
        ids = tf.gather_nd(best_id, tf.stack([word, begin], 1))
        return word, ids, begin, end, tf.where(failed)[:, 0]

    # --- Public -------------------------------------------------------------

    def tokenize(self, text, max_words_per_row=None):
        """Tokenizes a (B,) string tensor; see the class docstring.

        Args:
            text: string tensor (B,).
            max_words_per_row: optional int. Keep only each row's first
                words (after punctuation splitting); every word yields at
                least one piece, so `max_words_per_row = seq_len` bounds the
                WordPiece work of a 1 MB request without changing the
                first `seq_len` pieces.
        """
        w = self._words(text)
        batch = tf.shape(w["text"], out_type=tf.int64)[0]
        cp, piece_word = w["codepoints"], w["piece_word"]
        num_words = _num_ids(piece_word)
        chars = tf.RaggedTensor.from_value_rowids(
            cp, piece_word, nrows=num_words, validate=False
        )  # (W, None)
        first_char = chars.row_starts()  # (W,)
        word_src = tf.gather(w["src"], first_char)
        word_row = tf.gather(w["rows"], word_src)  # (W,)
        ws_word = tf.gather(w["word"], first_char)  # Whitespace word id.
        # Position of each word within its row, to cap the work per row.
        row_first_word = tf.math.unsorted_segment_min(
            tf.range(num_words), word_row, tf.cast(batch, tf.int32)
        )
        rank = tf.range(num_words) - tf.gather(row_first_word, word_row)
        if max_words_per_row is not None:
            kept = rank < max_words_per_row
        else:
            kept = tf.ones_like(rank, tf.bool)
        kept_idx = tf.where(kept)[:, 0]
        kept_chars = tf.gather(chars, kept_idx)
        strings = tf.strings.unicode_encode(tf.cast(kept_chars, tf.int32), "UTF-8")
        p_word, p_id, p_begin, p_end = self._wordpiece(strings, kept_chars.row_lengths())
        p_word = tf.gather(kept_idx, p_word)  # Back to ids over all W words.
        # Bytes each piece covers: the span of the source chars of its chars.
        base = tf.gather(first_char, p_word)
        p_chars = tf.ragged.range(base + p_begin, base + p_end)
        p_src = tf.gather(w["src"], p_chars)
        p_start = tf.reduce_min(tf.gather(w["starts"], p_src), axis=1)
        p_stop = tf.reduce_max(tf.gather(w["ends"], p_src), axis=1)
        p_row = tf.gather(word_row, p_word)

        # Whitespace words of each row, and each piece's index among them.
        ws_ids = w["char_word"]
        ws_count = _num_ids(ws_ids)
        ws_start = tf.math.unsorted_segment_min(w["starts"], ws_ids, tf.cast(ws_count, tf.int32))
        ws_end = tf.math.unsorted_segment_max(w["ends"], ws_ids, tf.cast(ws_count, tf.int32))
        ws_row = tf.math.unsorted_segment_min(w["rows"], ws_ids, tf.cast(ws_count, tf.int32))
        row_first_ws = tf.math.unsorted_segment_min(
            tf.range(ws_count), ws_row, tf.cast(batch, tf.int32)
        )
        p_ws = tf.gather(ws_word, p_word)
        p_ws_rank = p_ws - tf.gather(row_first_ws, p_row)

        def ragged(values, value_rowids):
            return tf.RaggedTensor.from_value_rowids(
                values, value_rowids, nrows=batch, validate=False
            )

        return {
            "token_ids": ragged(tf.cast(p_id, tf.int32), p_row),
            "start_offsets": ragged(p_start, p_row),
            "end_offsets": ragged(p_stop, p_row),
            "word_index": ragged(tf.cast(p_ws_rank, tf.int32), p_row),
            "word_start_offsets": ragged(ws_start, ws_row),
            "word_end_offsets": ragged(ws_end, ws_row),
        }
