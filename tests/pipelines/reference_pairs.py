"""The original `create_instances_from_document` in plain Python.

Written from its description in google-research/bert
`create_pretraining_data.py`, used to compare statistics with the vectorised
`pipelines.next_sentence.create_pairs`.
"""


def truncate_pair(a, b, max_num_tokens, rng):
    a, b = list(a), list(b)
    while len(a) + len(b) > max_num_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()
    return a, b


def instances_from_document(documents, index, max_seq_len, short_seq_prob, rng):
    """Returns a list of `(tokens_a, tokens_b, is_random_next)`."""
    document = documents[index]
    max_num_tokens = max_seq_len - 3
    target = max_num_tokens
    if rng.random() < short_seq_prob:
        target = rng.randint(2, max_num_tokens)
    out = []
    chunk, length, i = [], 0, 0
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i])
        if i == len(document) - 1 or length >= target:
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            a = [t for s in chunk[:a_end] for t in s]
            b = []
            if len(chunk) == 1 or rng.random() < 0.5:
                is_random = True
                target_b = target - len(a)
                other = index
                for _ in range(10):
                    other = rng.randint(0, len(documents) - 1)
                    if other != index:
                        break
                random_doc = documents[other]
                start = rng.randint(0, len(random_doc) - 1)
                for j in range(start, len(random_doc)):
                    b.extend(random_doc[j])
                    if len(b) >= target_b:
                        break
                i -= len(chunk) - a_end
            else:
                is_random = False
                b = [t for s in chunk[a_end:] for t in s]
            a, b = truncate_pair(a, b, max_num_tokens, rng)
            out.append((a, b, is_random))
            chunk, length = [], 0
        i += 1
    return out
