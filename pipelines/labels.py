"""One spelling per class label, in a module that imports nothing, so that
the task readers and the configs that name classes (`data.label_names`,
checked before TensorFlow loads) agree on when two labels are one."""

import math


def canonical_label(value):
    """One spelling per label: surrounding blanks dropped and whole numbers
    written as integers (`1`, `1.0` and ` 1 ` are one class); None for a
    missing or blank label."""
    if value is None or isinstance(value, bool):
        return None if value is None else str(value).lower()
    text = str(value).strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        return text
    if math.isfinite(number) and number == int(number):
        return str(int(number))
    return text
