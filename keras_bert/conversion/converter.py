"""`convert(src, dst)`: a BERT checkpoint to `.keras` or Hugging Face.

Sources: an original Google checkpoint, a Hugging Face folder, a keras-hub
`BertBackbone` (`.keras`, `.weights.h5`, preset folder) or a keras_bert
`.keras`. Destinations: a keras_bert `.keras` archive, or a Hugging Face
folder. Everything passes through one `BertCheckpoint` and one keras_bert
model, so every conversion gets the same name and shape checks. Writes are
atomic: the output appears under its name only once it is complete.

A fine-tuned model (a fine-tuning run folder, or a transformers folder of
a task head's class) converts a layer up, in
`keras_bert.finetuning.transformers_runs`, with the checks and the
destination handling here (`check_request`, `write_converted`); the
`convert` command (`keras_bert.convert.convert`) takes both.
"""

import os
import shutil
import tempfile

from keras_bert.conversion.bert_checkpoint import BertCheckpoint
from keras_bert.conversion.google_checkpoint import (
    google_checkpoint_prefix,
    read_google_checkpoint,
)
from keras_bert.conversion.hugging_face import (
    HUGGING_FACE_FILES,
    is_hugging_face_folder,
    read_hugging_face,
    write_hugging_face,
)
from keras_bert.conversion.keras_hub_checkpoint import (
    keras_archive_class,
    read_keras_hub,
)
from keras_bert.conversion.task_head import fine_tuned_architecture
from keras_bert.conversion.vocabulary import read_vocabulary
from keras_bert.errors import CheckpointError
from keras_bert.file_io import (
    chmod_as_created,
    save_keras_atomically,
)
from keras_bert.layers.bert_encoder_block import ACTIVATIONS
from keras_bert.paths import normal_path
from keras_bert.runs.output_guard import check_output, claimed_output

_ACTIVATION_FORMS = {
    "gelu": "exact GELU, x * Phi(x) with erf",
    "gelu_approximate": "tanh approximation of GELU",
}

_OURS = ("keras_bert>BertBackbone", "keras_bert>BertPretrainer")


def _read_keras_bert(path):
    import keras

    try:
        model = keras.saving.load_model(path)
    except Exception as error:  # keras raises many types for bad archives.
        message = str(error).strip().splitlines()[0]
        raise CheckpointError(f"{path}: cannot load: {message}") from None
    checkpoint = BertCheckpoint.from_model(model, source=f"keras_bert archive {path}")
    count = len(checkpoint.vocabulary or ())
    checkpoint.notes.append(f"vocab: {count} tokens from the archive" if count else "vocab: none")
    return checkpoint


def read_checkpoint(src):
    """`BertCheckpoint` from any supported source, found by its files."""
    src = os.fspath(src)
    if src.endswith(".bin"):
        raise CheckpointError(
            f"{src}: pickle-based .bin files run code while loading and are "
            "not opened. Re-save as safetensors (transformers: "
            "`save_pretrained(out)`) and convert that folder."
        )
    if src.endswith(".safetensors"):
        src = os.path.dirname(src) or "."
    if os.path.isdir(src):
        if is_hugging_face_folder(src):
            return read_hugging_face(src)
        if os.path.isfile(os.path.join(src, "model.weights.h5")):
            return read_keras_hub(src)
        if google_checkpoint_prefix(src):
            return read_google_checkpoint(src)
        raise CheckpointError(
            f"{src}: no BERT checkpoint here (looked for config.json + "
            "model.safetensors, bert_model.ckpt.index, model.weights.h5)."
        )
    if src.endswith(".keras") and os.path.isfile(src):
        name, _ = keras_archive_class(src)
        if name in _OURS:
            return _read_keras_bert(src)
        if name and name.startswith("keras_bert>"):
            raise CheckpointError(
                f"{src}: holds a keras_bert {name.split('>', 1)[1]}; convert the fine-tuning "
                "run folder that holds it (config.yaml, model.keras, vocab.txt) to write its "
                "transformers class"
            )
        return read_keras_hub(src)
    if src.endswith(".weights.h5") and os.path.isfile(src):
        return read_keras_hub(src)
    if google_checkpoint_prefix(src):
        return read_google_checkpoint(src)
    raise CheckpointError(f"{src}: no such checkpoint file or folder.")


def _check_replaceable(dst, files, folder_kind):
    """Refuses an existing `dst` that overwrite must not replace: overwrite
    swaps out only what this converter writes (`files`, for a folder of
    `folder_kind`), never the user's files."""
    if dst.endswith(".keras"):
        if os.path.isdir(dst):
            raise CheckpointError(f"{dst}: is a folder, not a .keras file; not replaced.")
        return
    if not os.path.isdir(dst):
        raise CheckpointError(f"{dst}: is a file, not a {folder_kind} folder; not replaced.")
    foreign = sorted(set(os.listdir(dst)) - set(files))
    if foreign:
        raise CheckpointError(
            f"{dst}: not replaced: --overwrite replaces only a folder holding "
            f"{', '.join(files)}; it also holds "
            f"{', '.join(foreign)}."
        )


def write_folder(dst, fill):
    """Calls `fill(folder)` on a new hidden folder beside `dst`, then
    renames it to `dst` (setting a previous `dst` aside until then); returns
    what `fill` returns. `dst` holds all of it or is left as it was."""
    dst = os.path.abspath(dst)
    parent = os.path.dirname(dst)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(dst)}.", dir=parent)
    old = None
    try:
        result = fill(tmp)
        # safetensors writes 0600 files, mkdtemp a 0700 folder.
        for name in os.listdir(tmp):
            chmod_as_created(os.path.join(tmp, name))
        chmod_as_created(tmp)
        if os.path.exists(dst):  # Only with overwrite=True.
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(dst)}.old.", dir=parent)
            os.rmdir(old)
            os.rename(dst, old)
        try:
            os.rename(tmp, dst)
        except OSError:
            if old:  # Put the previous output back rather than lose it.
                os.rename(old, dst)
            raise
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
        if old and os.path.exists(old):
            shutil.rmtree(old)
    return result


def activation_line(checkpoint, hidden_activation, read_from="the source's config"):
    """Sets the backbone's GELU and says which one it is and why.

    Every Google `bert_config.json` says `"gelu"`, yet google-research/bert
    computed it with erf until February 2019 (BERT-Base/Large, multilingual,
    Chinese) and with the tanh approximation afterwards (the 24 compact
    models of 2020): the word alone cannot tell, so the caller may.
    """
    if hidden_activation is None:
        name = checkpoint.config["hidden_activation"]
        why = f"from {read_from}"
    else:
        checkpoint.config["hidden_activation"] = name = hidden_activation
        why = "as requested"
    return f"activation: {name} ({_ACTIVATION_FORMS[name]}), {why}"


def convert(src, dst, heads=None, vocab=None, overwrite=False, hidden_activation=None):
    """Converts the checkpoint at `src` and writes it to `dst`.

    Args:
        src: path of a Google checkpoint (prefix, `.index` or folder), a
            Hugging Face folder, a keras-hub `.keras` / `.weights.h5` /
            preset folder, or a keras_bert `.keras`. A fine-tuned model (a
            keras_bert fine-tuning run folder, or a transformers folder of
            a task head's class) is refused here: `keras_bert.convert.convert`
            converts it.
        dst: a path ending in `.keras` (a keras_bert `BertBackbone`, or
            `BertPretrainer` when there are heads) or any other path (a
            Hugging Face folder: `config.json`, `model.safetensors`,
            `vocab.txt`).
        heads: None keeps the source's heads (initialising a missing one),
            True always writes both heads, False writes the encoder only.
        vocab: optional `vocab.txt` replacing (or supplying) the source's.
        overwrite: replace an existing `dst`: a `.keras` file, or a
            folder holding nothing but the files written here (anything
            else there is the user's, and the conversion is refused).
        hidden_activation: None (the source config's: `"gelu"` is read as
            the exact erf form), `"gelu"` (erf) or `"gelu_approximate"`
            (tanh). Google checkpoints say `"gelu"` for both; those
            trained with google-research/bert from February 2019 on (the
            compact models of 2020) used tanh, BERT-Base/Large erf.

    Returns:
        The report: a list of lines (source, config, weights, heads, vocab).

    Raises:
        CheckpointError: for a bad source, config, weights or destination.
    """
    src, dst = normal_path(src), normal_path(dst)
    check_request(src, dst, vocab, hidden_activation)
    folder = source_folder(src)
    if os.path.isdir(folder) and is_hugging_face_folder(folder):
        architecture = fine_tuned_architecture(folder)
        if architecture:
            raise CheckpointError(
                f"{src}: a fine-tuned {architecture}, which converts to a keras_bert "
                "fine-tuning run: python -m keras_bert.convert (from Python, "
                "keras_bert.convert.convert)"
            )

    def write(dst):
        return _convert_and_write(src, dst, heads, vocab, hidden_activation)

    return write_converted(src, dst, vocab, overwrite, HUGGING_FACE_FILES, "Hugging Face", write)


def check_request(src, dst, vocab=None, hidden_activation=None):
    """Refuses, before anything is read, what no conversion takes: a remote
    path, an unknown GELU, a single weights file as the destination. `src`
    and `dst` are spelt by `paths.normal_path`."""
    # The command's parser spells them so already; callers from Python too,
    # or `hf/` would put the claim at `hf/..lock`.
    for path in (src, dst, *([os.fspath(vocab)] if vocab else [])):
        if "://" in path:
            raise CheckpointError(
                f"{path}: convert reads and writes local paths only; copy it here first "
                "(e.g. gcloud storage cp -r)."
            )
    if hidden_activation is not None and hidden_activation not in ACTIVATIONS:
        raise CheckpointError(
            f"`hidden_activation` must be one of {sorted(ACTIVATIONS)}. "
            f"Received: hidden_activation={hidden_activation!r}"
        )
    if dst.endswith((".h5", ".safetensors", ".bin", ".ckpt", ".json")):
        raise CheckpointError(
            f"{dst}: the destination is a `.keras` file or a folder (for "
            "Hugging Face), not a single weights file."
        )


def source_folder(src):
    """The folder a source is read from: `src`, or a `.safetensors` file's."""
    return (os.path.dirname(src) or ".") if src.endswith(".safetensors") else src


def write_converted(src, dst, vocab, overwrite, files, folder_kind, write, whole_folder=False):
    """Calls `write(dst)` under a claim on `dst`, once `dst` is found
    writable and replaceable, and returns what it returns.

    Args:
        src, vocab: what the conversion reads; never overwritten.
        overwrite: replace an existing `dst` holding only `files`.
        files: the names a destination folder receives: all that overwrite
            may replace.
        folder_kind: what a destination folder is, for the messages.
        write: `write(dst)`, with a link at `dst` resolved.
        whole_folder: `dst` is a run folder, written whole: a new one must
            not lie inside another run's files.
    """
    if os.path.islink(dst):  # Replace what it points to; the link stays.
        dst = os.path.realpath(dst)
    parent = os.path.dirname(os.path.abspath(dst))
    # As predict and evaluate do: a new folder for the output is made, not asked for.
    os.makedirs(parent, exist_ok=True)
    # Checked before the (slow) read; the write itself needs the parent.
    if not os.access(parent, os.W_OK):
        raise CheckpointError(f"{dst}: parent folder {parent} is not writable.")

    def check_destination():
        exists = os.path.exists(dst)
        if exists:
            if not overwrite:
                raise CheckpointError(f"{dst}: already exists; pass --overwrite to replace it")
            _check_replaceable(dst, files, folder_kind)
        # Never the source, nor a run folder's own files (`output_guard.check_output`).
        inputs = [src, *([vocab] if vocab else [])]
        inputs += [os.path.join(src, name) for name in HUGGING_FACE_FILES]
        if dst.endswith(".keras"):
            targets = [dst]
        elif whole_folder:
            # A run folder: its own files are what is written. What holds
            # only them is replaced whole (`_check_replaceable`); a new one
            # must not lie inside another run's files.
            targets = [] if exists else [dst]
        else:
            targets = [os.path.join(dst, n) for n in files]
        for target in targets:
            check_output("", target, inputs, overwrite=True, error=CheckpointError)

    # Of two conversions onto one new destination, the second is refused.
    with claimed_output(dst, check_destination, "conversion", error=CheckpointError):
        return write(dst)


def replace_vocabulary(checkpoint, vocab, src):
    """Replaces the checkpoint's vocabulary by the file `vocab`."""
    tokens, note = read_vocabulary(vocab)
    if tokens is None:
        raise CheckpointError(f"{vocab}: no such vocabulary file.")
    rows = checkpoint.config["vocabulary_size"]
    if len(tokens) != rows:
        raise CheckpointError(
            f"{vocab}: {len(tokens)} tokens, but {src} has {rows} token "
            "embeddings; export and fine-tuning need one per token "
            "(wrong vocab.txt?)."
        )
    checkpoint.vocabulary = tokens
    checkpoint.notes = [n for n in checkpoint.notes if not n.startswith("vocab:")]
    checkpoint.notes.append(note)


def report_lines(checkpoint, activation, count, status):
    """The report's lines on what was read: source, config, GELU, weights
    (with the reader's notes), parts, vocabulary."""
    report = [
        f"source:  {checkpoint.source}",
        f"config:  {checkpoint.describe()}",
        activation,
        f"weights: {count} tensors checked and loaded",
    ]
    report += [f"         {note}" for note in checkpoint.notes if not note.startswith("vocab:")]
    report.append("parts:   " + "; ".join(f"{part} {state}" for part, state in status.items()))
    report += [note for note in checkpoint.notes if note.startswith("vocab:")]
    return report


def _convert_and_write(src, dst, heads, vocab, hidden_activation):
    checkpoint = read_checkpoint(src)
    if vocab is not None:
        replace_vocabulary(checkpoint, vocab, src)
    activation = activation_line(checkpoint, hidden_activation)
    model = checkpoint.to_model(heads)
    report = report_lines(
        checkpoint, activation, len(checkpoint.weights), checkpoint.part_status(heads)
    )
    if dst.endswith(".keras"):
        save_keras_atomically(model, dst)
        report.append(f"wrote:   {dst} (keras_bert {type(model).__name__})")
    else:
        written = BertCheckpoint.from_model(model)
        architecture = write_folder(dst, lambda folder: write_hugging_face(written, folder))
        report.append(f"wrote:   {dst} (Hugging Face {architecture})")
    return report
