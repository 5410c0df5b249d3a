"""Rebuilds data/corpus/ from ../shared/data/corpus/nltk_2007.

    python data/bundle_corpus.py [SOURCE_DIR]

Copies every document (one per file), decodes Latin-1 files to UTF-8 and
strips Project Gutenberg licence headers/footers with
`pipelines.corpus.strip_gutenberg_boilerplate`. The corpus README is not a
document and is left out.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pipelines.corpus import strip_gutenberg_boilerplate  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main(source):
    for sub in sorted(os.listdir(source)):
        src_dir = os.path.join(source, sub)
        dst_dir = os.path.join(HERE, "corpus", sub)
        os.makedirs(dst_dir, exist_ok=True)
        for name in sorted(os.listdir(src_dir)):
            if not name.endswith(".txt"):
                continue
            raw = open(os.path.join(src_dir, name), "rb").read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("latin-1")
            text = text.replace("\r\n", "\n")
            if sub == "gutenberg":
                text = strip_gutenberg_boilerplate(text)
            with open(os.path.join(dst_dir, name), "w", encoding="utf-8") as f:
                f.write(text)


if __name__ == "__main__":
    main(
        sys.argv[1]
        if len(sys.argv) > 1
        else os.path.join(HERE, "..", "..", "shared", "data", "corpus", "nltk_2007")
    )
