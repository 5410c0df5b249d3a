"""Character tables that let core TensorFlow ops replay BERT's normaliser.

google-research/bert `tokenization.py` cleans, lower-cases, NFD-normalises
and strips accents with Python's `unicodedata`. Core TensorFlow has no
Unicode property or normalisation op (those live in tensorflow-text), so
the export computes every property the tokenizer needs here, once, from the
`unicodedata` of the exporting Python, and bakes them into lookup tables.

Everything is keyed by code point. A code point absent from a table has
the default: no flags, canonical combining class 0, maps to itself.
"""

import functools
import unicodedata

import numpy as np

# Flags in the class table. A code point may carry several.
DELETE = 1  # U+0000, U+FFFD, Cc/Cf except \t \n \r: removed while cleaning.
SPACE = 2  # Splits words: \t \n \r, Zs, and whatever str.split() splits on.
PUNCT = 4  # ASCII 33-47, 58-64, 91-96, 123-126 and Unicode P*.
NONSPACING_MARK = 8  # Category Mn: removed after NFD when lower-casing.
CASED = 16  # Unicode Cased, for str.lower()'s final-sigma rule.
CASE_IGNORABLE = 32  # Unicode Case_Ignorable, same rule.

CAPITAL_SIGMA = 0x03A3
FINAL_SIGMA = 0x03C2

# The original `_is_chinese_char` blocks, inclusive.
CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_punctuation(cp, category):
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return category.startswith("P")


def _case_properties(ch):
    """(cased, case_ignorable) as CPython's `str.lower` sees them.

    `unicodedata` does not expose Cased/Case_Ignorable, so read them off the
    final-sigma rule itself: U+03A3 lowers to the final form iff the nearest
    non-ignorable character before it is cased and the nearest one after it
    (if any) is not.
    """
    before = ("A" + ch + "\u03a3").lower().endswith("\u03c2")  # ign or cased
    after = ("A\u03a3" + ch).lower()[1] == "\u03c2"  # ign or not cased
    ignorable = before and after
    return (before and not ignorable), ignorable


@functools.lru_cache(maxsize=None)
def unicode_tables():
    """Returns a dict of numpy arrays describing every assigned code point.

    Keys:
        class_keys, class_values: code point -> OR of the flags above.
        map_keys, map_splits, map_values: code point -> NFD(ch.lower()) as
            code points `map_values[map_splits[i]:map_splits[i + 1]]`, only
            where that differs from the character itself. Marks are kept;
            the tokenizer reorders and strips them, because NFD's canonical
            ordering runs across characters.
        ccc_keys, ccc_values: code point -> canonical combining class > 0.
    """
    class_keys, class_values = [], []
    map_keys, map_splits, map_values = [], [0], []
    ccc_keys, ccc_values = [], []
    for cp in range(0x110000):
        ch = chr(cp)
        category = unicodedata.category(ch)
        if category in ("Cn", "Co", "Cs"):  # Unassigned, private, surrogate.
            continue
        flags = 0
        if cp in (0, 0xFFFD) or (category in ("Cc", "Cf") and ch not in "\t\n\r"):
            flags |= DELETE
        elif ch in " \t\n\r" or category == "Zs" or ch.isspace():
            flags |= SPACE
        if _is_punctuation(cp, category):
            flags |= PUNCT
        if category == "Mn":
            flags |= NONSPACING_MARK
        cased, ignorable = _case_properties(ch)
        flags |= (CASED if cased else 0) | (CASE_IGNORABLE if ignorable else 0)
        if flags:
            class_keys.append(cp)
            class_values.append(flags)
        ccc = unicodedata.combining(ch)
        if ccc:
            ccc_keys.append(cp)
            ccc_values.append(ccc)
        if not flags & (DELETE | SPACE):
            mapped = unicodedata.normalize("NFD", ch.lower())
            if mapped != ch:
                map_keys.append(cp)
                map_values.extend(ord(c) for c in mapped)
                map_splits.append(len(map_values))
    as_int = functools.partial(np.asarray, dtype=np.int64)
    return {
        "class_keys": as_int(class_keys),
        "class_values": as_int(class_values),
        "map_keys": as_int(map_keys),
        "map_splits": as_int(map_splits),
        "map_values": as_int(map_values),
        "ccc_keys": as_int(ccc_keys),
        "ccc_values": as_int(ccc_values),
        "unidata_version": unicodedata.unidata_version,
    }
