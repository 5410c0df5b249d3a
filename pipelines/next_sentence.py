"""Next-sentence pairs as in the original `create_pretraining_data.py`.

The original walks each document once, sentence by sentence:

    target = max_num_tokens, or with prob. short_seq_prob randint(2, max_num_tokens)
    chunk = sentences from the current one until their length >= target
            (or the document ends)
    a_end = randint(1, len(chunk) - 1)            (1 if the chunk has 1 sentence)
    A = chunk[:a_end]
    NotNext (always for a 1-sentence chunk, else with prob. 0.5):
        B = sentences of a random other document from a random start, until
            len(B) >= target - len(A); chunk[a_end:] are put back, i.e. the
            next chunk starts at chunk[a_end]
    IsNext: B = chunk[a_end:]; the next chunk starts after the chunk
    truncate: while len(A) + len(B) > max_num_tokens, drop one token from the
        longer side (B on a tie), from the front or the back with prob. 0.5

Here the same happens for a group of documents at once, without a Python or
per-token loop:

* Every quantity of a chunk depends only on the sentence it starts at, so the
  chunk end, `a_end`, the NotNext coin and the next start are computed for
  *every* sentence as a vector. Random numbers are drawn per start sentence,
  which is the same distribution as drawing them per step because the walk
  only moves forward and never starts twice at the same sentence.
* The walk itself is the chain `0, next(0), next(next(0)), ...`; its k-th
  element is found for all k at once by pointer doubling (log2(sentences)
  vectorised gathers). Since a chunk never crosses a document end, one chain
  over the concatenated sentences of the group walks every document in turn.
* Every segment is a contiguous slice of the group's token array, so the
  truncation is arithmetic on slice bounds: the final lengths follow in closed
  form from the longer-side rule, and the number of front deletions of a side
  is Binomial(deleted, 0.5), exactly the distribution of the original's coin
  flips.
* The random segment for NotNext is drawn per pair, uniformly from the rows
  of the group whose `doc_ids` differ from A's. A row is a document or, as
  `pipelines.pretraining_dataset` feeds it, a piece of one, and groups come
  from a corpus-wide shuffle of pieces, so this is a random span of another
  document without tokenizing anything twice. Only a group whose rows all
  share one document id (a one-document corpus) takes B from another row of
  the same document, as the original does when it cannot find another.

All random draws are stateless, from the `seed` tensor, so a given seed
gives the same pairs.
"""

import tensorflow as tf


def _uniform(seed, shape, salt):
    return tf.random.stateless_uniform(
        shape, tf.random.experimental.stateless_fold_in(seed, salt), dtype=tf.float32
    )


def _randint(seed, shape, salt, low, high):
    """Integers uniform in [low, high] (inclusive, elementwise)."""
    u = _uniform(seed, shape, salt)
    span = tf.cast(high - low + 1, tf.float32)
    return low + tf.minimum(tf.cast(tf.floor(u * span), high.dtype), high - low)


def _chain_from_zero(next_index):
    """Returns `c[k] = next^k(0)` for k in [0, n] by pointer doubling.

    `next_index` is `[n + 1]` int32 with `next_index[n] == n` (absorbing end)
    and `next_index[i] > i` for `i < n`.
    """
    n_plus_1 = tf.shape(next_index)[0]
    steps = tf.range(n_plus_1)

    def body(bit, jump, current):
        take = tf.bitwise.bitwise_and(tf.bitwise.right_shift(steps, bit), 1) > 0
        current = tf.where(take, tf.gather(jump, current), current)
        return bit + 1, tf.gather(jump, jump), current

    _, _, current = tf.while_loop(
        lambda bit, jump, current: tf.bitwise.left_shift(1, bit) < n_plus_1,
        body,
        (tf.constant(0), next_index, tf.zeros_like(next_index)),
    )
    return current


def _final_lengths(len_a, len_b, max_num_tokens):
    """Lengths after the original `truncate_seq_pair` (longer side first)."""
    m = max_num_tokens
    fits = len_a + len_b <= m
    # Both sides cut: they end up equal, A one longer if m is odd.
    both_a, both_b = (m + 1) // 2, m // 2
    a_longer = len_a > len_b
    # A longer: only A is cut while it stays >= B.
    a_if_a_longer = tf.where(2 * len_b <= m, m - len_b, both_a)
    b_if_a_longer = tf.where(2 * len_b <= m, len_b, both_b)
    # B longer or equal: only B is cut while it stays >= A - 1 (ties cut B).
    a_if_b_longer = tf.where(2 * len_a - 1 <= m, len_a, both_a)
    b_if_b_longer = tf.where(2 * len_a - 1 <= m, m - len_a, both_b)
    new_a = tf.where(fits, len_a, tf.where(a_longer, a_if_a_longer, a_if_b_longer))
    new_b = tf.where(fits, len_b, tf.where(a_longer, b_if_a_longer, b_if_b_longer))
    return new_a, new_b


def create_pairs(
    documents,
    seed,
    *,
    seq_len,
    short_seq_prob,
    cls_id,
    sep_id,
    pad_id,
    doc_ids=None,
    next_sentence_rate=0.5,
):
    """Makes packed next-sentence pairs from a group of documents.

    Args:
        documents: ragged int32 `[G, S, T]`, G >= 1 documents, each with at
            least one sentence, each sentence with at least one token.
        seed: int32 or int64 `[2]`, the stateless seed for this group.
        seq_len: int, packed length; A and B share `seq_len - 3` tokens.
        short_seq_prob: float, chance that a document targets a random
            shorter length in `[2, seq_len - 3]`.
        cls_id, sep_id, pad_id: int, special token ids.
        doc_ids: int64 `[G]` or None, the source document of each row; a
            NotNext B never comes from A's document when the group holds
            another. None: every row is its own document.
        next_sentence_rate: float, chance that a chunk of two or more
            sentences takes a random B (NotNext); 0.5 in BERT. 0 keeps text
            contiguous (no NSP task, as in RoBERTa): a sentence that fills
            the target alone gets the next sentence as B, so only the last
            sentence of a document, alone in its chunk, takes a random B.

    Returns:
        A dict of dense tensors, K pairs:
        `token_ids` int32 `[K, seq_len]` (`[CLS] A [SEP] B [SEP]` then
        padding), `segment_ids` int32 `[K, seq_len]` (0 for `[CLS] A [SEP]`,
        1 for `B [SEP]`, 0 for padding), `next_sentence_label` int32 `[K]`
        (0 = IsNext, 1 = NotNext, as in the original).
    """
    max_num_tokens = seq_len - 3
    seed = tf.cast(seed, tf.int64)
    num_docs = tf.cast(documents.nrows(), tf.int32)
    sentences = documents.values  # [N, T] ragged
    tokens = sentences.values  # [M]
    sent_len = tf.cast(sentences.row_lengths(), tf.int32)  # [N]
    n = tf.shape(sent_len)[0]
    doc_of_sent = tf.cast(documents.value_rowids(), tf.int32)  # [N]
    doc_first = tf.cast(documents.row_starts(), tf.int32)  # [G]
    doc_last = tf.cast(documents.row_limits(), tf.int32) - 1  # [G]
    # Token offset of each sentence start; cum[N] is the total token count.
    cum = tf.concat([[0], tf.cumsum(sent_len)], axis=0)  # [N + 1]

    # Per document target length (the original draws it once per document).
    max_tokens = tf.fill([num_docs], max_num_tokens)
    short = _uniform(seed, [num_docs], 1) < short_seq_prob
    short_target = _randint(seed, [num_docs], 2, tf.fill([num_docs], 2), max_tokens)
    target = tf.gather(tf.where(short, short_target, max_tokens), doc_of_sent)

    # For every possible chunk start s: the chunk is sentences [s, end].
    starts = tf.range(n)
    reach = (
        tf.searchsorted(cum, tf.gather(cum, starts) + target, side="left", out_type=tf.int32) - 1
    )
    last_of_doc = tf.gather(doc_last, doc_of_sent)  # [N]
    end = tf.minimum(reach, last_of_doc)  # [N]
    if next_sentence_rate == 0:
        # Contiguous text only: a sentence that fills the target alone takes
        # the next one as B (truncated) instead of a random B.
        end = tf.maximum(end, tf.minimum(starts + 1, last_of_doc))
    chunk_size = end - starts + 1
    a_sentences = tf.where(
        chunk_size >= 2,
        _randint(seed, [n], 3, tf.ones_like(chunk_size), tf.maximum(chunk_size - 1, 1)),
        1,
    )
    random_next = tf.logical_or(chunk_size == 1, _uniform(seed, [n], 4) < next_sentence_rate)
    next_start = tf.where(random_next, starts + a_sentences, end + 1)

    # The walk through the group: pair k starts at chain[k].
    chain = _chain_from_zero(tf.concat([next_start, [n]], axis=0))
    pair_start = tf.boolean_mask(chain, chain < n)  # [K]
    k = tf.shape(pair_start)[0]
    is_random = tf.gather(random_next, pair_start)
    a_lo = tf.gather(cum, pair_start)
    a_hi = tf.gather(cum, pair_start + tf.gather(a_sentences, pair_start))
    b_next_hi = tf.gather(cum, tf.gather(end, pair_start) + 1)

    # NotNext: a random start sentence in a random other document, then
    # sentences until B reaches target - len(A) (at least one sentence).
    if doc_ids is None:
        doc_ids = tf.range(num_docs, dtype=tf.int64)
    own_row = tf.gather(doc_of_sent, pair_start)  # [K]
    own_doc = tf.gather(doc_ids, own_row)  # [K]
    # A uniform draw over the rows of other documents: uniform scores in
    # [0, 1), +4 on those rows, +2 on every row but A's own, argmax. With no
    # other document, another row of A's (or A's own, if it is alone).
    other_doc = tf.cast(doc_ids[tf.newaxis, :] != own_doc[:, tf.newaxis], tf.float32)  # [K, G]
    other_row = 1.0 - tf.one_hot(own_row, num_docs)  # [K, G]
    score = _uniform(seed, [k, num_docs], 5) + 4.0 * other_doc + 2.0 * other_row
    random_doc = tf.argmax(score, axis=1, output_type=tf.int32)  # [K]
    r_first = tf.gather(doc_first, random_doc)
    r_last = tf.gather(doc_last, random_doc)
    r_start = _randint(seed, [k], 6, r_first, r_last)
    target_b = tf.gather(target, pair_start) - (a_hi - a_lo)
    r_lo = tf.gather(cum, r_start)
    r_end = tf.searchsorted(cum, r_lo + tf.maximum(target_b, 1), side="left", out_type=tf.int32) - 1
    r_end = tf.minimum(r_end, r_last)
    b_lo = tf.where(is_random, r_lo, a_hi)
    b_hi = tf.where(is_random, tf.gather(cum, r_end + 1), b_next_hi)

    # Truncation: final lengths, then how many of the deleted tokens of each
    # side came off the front.
    len_a, len_b = a_hi - a_lo, b_hi - b_lo
    new_a, new_b = _final_lengths(len_a, len_b, max_num_tokens)
    cut_a, cut_b = len_a - new_a, len_b - new_b
    binomial_seed = tf.random.experimental.stateless_fold_in(seed, 7)
    front = tf.random.stateless_binomial(
        [2, k],
        binomial_seed,
        counts=tf.cast(tf.stack([cut_a, cut_b]), tf.float32),
        probs=0.5,
        output_dtype=tf.int32,
    )
    a_lo, b_lo = a_lo + front[0], b_lo + front[1]

    # Packing: [CLS] A [SEP] B [SEP] [PAD]...                         # (K, T)
    pos = tf.range(seq_len)[tf.newaxis, :]
    new_a_, new_b_ = new_a[:, tf.newaxis], new_b[:, tf.newaxis]
    in_a = (pos >= 1) & (pos <= new_a_)
    in_b = (pos >= new_a_ + 2) & (pos < new_a_ + 2 + new_b_)
    sep = (pos == new_a_ + 1) | (pos == new_a_ + new_b_ + 2)
    source = tf.where(in_a, a_lo[:, tf.newaxis] + pos - 1, b_lo[:, tf.newaxis] + pos - new_a_ - 2)
    source = tf.clip_by_value(source, 0, tf.maximum(tf.shape(tokens)[0] - 1, 0))
    token_ids = tf.where(in_a | in_b, tf.gather(tokens, source), pad_id)
    token_ids = tf.where(sep, sep_id, token_ids)
    token_ids = tf.where(pos == 0, cls_id, token_ids)
    segment_ids = tf.cast((pos >= new_a_ + 2) & (pos <= new_a_ + new_b_ + 2), tf.int32)
    return {
        "token_ids": tf.ensure_shape(token_ids, [None, seq_len]),
        "segment_ids": tf.ensure_shape(segment_ids, [None, seq_len]),
        "next_sentence_label": tf.cast(is_random, tf.int32),
    }
