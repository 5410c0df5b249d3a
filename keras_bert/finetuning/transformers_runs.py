"""Fine-tuned models both ways: a keras_bert fine-tuning run folder <-> a
transformers folder of its head's class (`convert_fine_tuned`; the
`convert` command, `keras_bert.convert.convert`, sends such a source here
and any other checkpoint to `conversion.converter.convert`).

Out: the run (`config.yaml`, `model.keras`, `vocab.txt`, read as `predict`
reads it) becomes `BertForSequenceClassification` (`num_labels`,
`id2label`/`label2id` from the run's label names, `problem_type`),
`BertForTokenClassification`, `BertForQuestionAnswering` or
`BertForMultipleChoice` (`task_head.HEADS`), with the vocabulary and a
`tokenizer_config.json` saying the run's case, so that transformers'
`pipeline` tokenizes as the run does.

In: such a folder becomes a fine-tuning run folder for a task (`--task`;
by default the head's usual one, `TaskHead.default_task`): the task's own
config with the checkpoint's sequence length and case, a `model.keras`
that the task's handler built (`FinetuningTask.build_model`) and the
folder's weights fill, the vocabulary, and the empty outputs record a run
starts with. The encoder goes through `BertCheckpoint`, the head through
`TaskHead.weight_map`: every name and shape is checked.
"""

import json
import math
import os
import unicodedata

import numpy as np

from keras_bert.conversion.bert_checkpoint import (
    OPTIONAL_PARTS,
    BertCheckpoint,
    non_finite_weights,
    weight_mismatches,
)
from keras_bert.conversion.config_json import json_from_backbone_config
from keras_bert.conversion.converter import (
    activation_line,
    check_request,
    read_checkpoint,
    replace_vocabulary,
    report_lines,
    source_folder,
    write_converted,
    write_folder,
)
from keras_bert.conversion.hugging_face import (
    HUGGING_FACE_FILES,
    TOKENIZER_CONFIG,
    hugging_face_tensors,
    is_hugging_face_folder,
    write_hugging_face_files,
)
from keras_bert.conversion.task_head import (
    HEADS,
    architecture_named,
    fine_tuned_architecture,
    read_config_json,
)
from keras_bert.errors import CheckpointError, ConfigError
from keras_bert.finetuning.config import SCHEMA, load_finetune_config
from keras_bert.finetuning.inference import load_run
from keras_bert.finetuning.run_kind import CONFIG, FINETUNING_RUN, MODEL, VOCABULARY
from keras_bert.finetuning.task_registry import TASKS
from keras_bert.paths import normal_path
from keras_bert.runs.run_folder import RUN_RECORD, RunFolder, read_run_config
from pipelines.tasks import GLUE_TASKS

# What a conversion writes into a fine-tuning run folder (a run's own
# files, `FinetuningRun.files`): all that overwrite may replace.
CONVERTED_RUN_FILES = (CONFIG, MODEL, VOCABULARY, RUN_RECORD)
# What a fine-tuned transformers folder is written with.
FINE_TUNED_FILES = (*HUGGING_FACE_FILES, TOKENIZER_CONFIG)
# The ids transformers reads a classifier's outputs with when id2label is absent.
_DEFAULT_NUM_LABELS = 2
_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# What a source is, besides a checkpoint: a fine-tuning run folder, or a
# transformers folder of a fine-tuned head.
RUN, FINE_TUNED = "fine-tuning run", "fine-tuned transformers folder"


def source_kind(src):
    """`RUN`, `FINE_TUNED`, or None for a checkpoint
    (`conversion.converter.read_checkpoint`)."""
    folder = source_folder(normal_path(src))
    if not os.path.isdir(folder):
        return None
    if is_fine_tuning_run(folder):
        return RUN
    if is_hugging_face_folder(folder) and fine_tuned_architecture(folder):
        return FINE_TUNED
    return None


def convert_fine_tuned(
    src, dst, kind, heads=None, vocab=None, overwrite=False, hidden_activation=None, task=None
):
    """Converts the fine-tuned model at `src`, a source of `kind`
    (`source_kind`), and writes it to the folder `dst`: a fine-tuning run
    becomes the transformers folder of its head's class (`config.json`,
    `model.safetensors`, `vocab.txt`, `tokenizer_config.json`), a
    transformers folder of such a class a run folder (`config.yaml`,
    `model.keras`, `vocab.txt`, `outputs.json`).

    Args:
        heads: must be None: a fine-tuned model has a task head, not BERT's
            pre-training heads.
        vocab: optional `vocab.txt` replacing (or supplying) a transformers
            folder's (not for a fine-tuning run, which has its own).
        overwrite, hidden_activation: as `conversion.converter.convert`'s;
            `hidden_activation` not for a fine-tuning run, whose backbone
            says which GELU it computes.
        task: for a transformers source only: the fine-tuning task of the
            run written (a key of `task_registry.TASKS` whose model is the
            head's); None: the head's usual task (`classification`,
            `regression`, `conll2003`, `swag`; a question-answering head
            needs `squad_v1` or `squad_v2` named).

    Returns:
        The report: a list of lines (source, config, weights, heads, vocab,
        task and tokenizer).

    Raises:
        CheckpointError: for a bad source, config, weights, option or
            destination.
        FinetuneError: for a fine-tuning run folder that `predict` would
            refuse.
    """
    src, dst = normal_path(src), normal_path(dst)
    check_request(src, dst, vocab, hidden_activation)
    _check_options(kind, src, dst, heads, vocab, hidden_activation, task)
    if kind == RUN:
        return write_converted(
            src, dst, vocab, overwrite, FINE_TUNED_FILES, "Hugging Face", lambda dst: _out(src, dst)
        )

    def write(dst):
        return _in(src, dst, vocab, hidden_activation, task)

    return write_converted(
        src, dst, vocab, overwrite, CONVERTED_RUN_FILES, "fine-tuning run", write, whole_folder=True
    )


def _check_options(kind, src, dst, heads, vocab, hidden_activation, task):
    """Refuses, before anything is read, what a source of `kind` cannot take."""
    if heads is not None:
        flag = "--with_heads" if heads else "--without_heads"
        raise CheckpointError(
            f"{flag}: a {kind} has a task head, not BERT's pre-training heads; "
            f"{src} converts with its task head"
        )
    if dst.endswith(".keras"):
        other = "a transformers folder" if kind == RUN else "a keras_bert fine-tuning run folder"
        raise CheckpointError(
            f"{dst}: {src} is a {kind}, which converts to {other}; give DST as a "
            "folder, not a .keras file"
        )
    if kind == RUN:
        for flag, given, why in (
            ("--vocab", vocab, "it carries its vocab.txt"),
            ("--hidden_activation", hidden_activation, "its backbone says which GELU it computes"),
            ("--task", task, "its config.yaml names its task"),
        ):
            if given is not None:
                raise CheckpointError(f"{flag}: {src} is a {kind}, and {why}")


def _out(src, dst):
    """The run `src` written as a transformers folder at `dst`; the report."""
    checkpoint, tensors, config, tokenizer_config, lines = run_to_hugging_face(src)
    status = {"pooler": "carried" if "bert.pooler.dense.weight" in tensors else "dropped"}
    activation = activation_line(checkpoint, None, "the run's backbone")
    report = report_lines(checkpoint, activation, len(tensors), status) + lines

    def write(folder):
        return write_fine_tuned_hugging_face(folder, checkpoint, tensors, config, tokenizer_config)

    architecture = write_folder(dst, write)
    return report + [f"wrote:   {dst} (Hugging Face {architecture})"]


def _in(src, dst, vocab, hidden_activation, task):
    """The transformers folder `src` written as a run folder at `dst`; the report."""
    checkpoint = read_checkpoint(src)
    if vocab is not None:
        replace_vocabulary(checkpoint, vocab, src)
    activation = activation_line(checkpoint, hidden_activation)
    count = len(checkpoint.weights)
    task, config, model, lines = hugging_face_to_run(checkpoint, src, task)
    report = report_lines(checkpoint, activation, count, checkpoint.part_status(False)) + lines
    source = os.path.abspath(src)
    write_folder(dst, lambda folder: write_run_folder(folder, config, model, source))
    return report + [f"wrote:   {dst} (keras_bert fine-tuning run, task {task})"]


def is_fine_tuning_run(folder):
    """Whether `folder` holds a keras_bert fine-tuning run: its
    `config.yaml` names a task (and is no pre-training run's)."""
    return FINETUNING_RUN.holds(read_run_config(folder))


# === Out: a keras_bert run -> transformers ===


def run_to_hugging_face(run_dir):
    """Reads the fine-tuning run in `run_dir` for transformers.

    Returns:
        `(checkpoint, tensors, config, tokenizer_config, lines)`: the
        encoder as a `BertCheckpoint` (with the run's vocabulary; a pooler
        the head's class lacks taken out, in its notes), every tensor under
        its transformers name (head included), `config.json`'s and
        `tokenizer_config.json`'s dicts, and the report's lines about the
        task and the tokenizer.

    Raises:
        FinetuneError: the folder is no run `predict` would take.
        CheckpointError: its model or backbone has no transformers form.
    """
    task, handler, model = load_run(run_dir)
    name = type(model).__name__
    head = HEADS.get(name)
    if head is None:
        raise CheckpointError(
            f"{run_dir}: its model.keras holds a {name}, which no transformers class "
            f"holds; convertible heads: {', '.join(HEADS)}"
        )
    checkpoint = BertCheckpoint.from_model(
        model.backbone, source=f"keras_bert fine-tuning run {run_dir} (task {task})"
    )
    checkpoint.vocabulary = list(handler.tokenizer.vocabulary)
    if not head.pooler:
        pooler = OPTIONAL_PARTS["pooler"]
        checkpoint.weights = {
            n: v for n, v in checkpoint.weights.items() if not n.startswith(pooler)
        }
        checkpoint.notes.append(
            f"pooler dropped: {head.architecture} has none ({name} does not use it)"
        )
    tensors = hugging_face_tensors(checkpoint, "bert.")
    for mapping in head.weight_map(model):
        tensors[mapping.name] = np.ascontiguousarray(mapping.from_keras())
    config = json_from_backbone_config(checkpoint.config, head.architecture)
    config.update(_head_config(model, head))
    lower_case = handler.tokenizer.lower_case
    max_seq_length = handler.config.data.max_seq_length
    tokenizer_config = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": lower_case,
        # What `predict` truncates to: a pipeline called with truncation=True cuts the same.
        "model_max_length": max_seq_length,
    }
    lines = [
        f"task:    {task} ({name}) -> {head.architecture}{_labels_line(config)}",
        f"tokenizer: {'lower case' if lower_case else 'cased'}, "
        f"model_max_length {max_seq_length} (the run's data.max_seq_length)",
    ]
    return checkpoint, tensors, config, tokenizer_config, lines


def _head_config(model, head):
    """`config.json` keys of the head: its labels, `problem_type`, and the
    dropout on its input."""
    config = {}
    if head.model_class in ("BertClassifier", "BertTokenClassifier", "BertRegressor"):
        count = model.output_dense.units
        names = getattr(model, "label_names", None) or [f"LABEL_{i}" for i in range(count)]
        config.update(
            num_labels=count,
            id2label={str(i): label for i, label in enumerate(names)},
            label2id={label: i for i, label in enumerate(names)},
        )
    if head.model_class == "BertClassifier":
        config["problem_type"] = "single_label_classification"
    elif head.model_class == "BertRegressor":
        config["problem_type"] = "regression"
    if getattr(model, "dropout", None) is not None:
        config["classifier_dropout"] = model.dropout
    return config


def _labels_line(config):
    names = list(config.get("id2label", {}).values())
    problem = f", problem_type {config['problem_type']}" if "problem_type" in config else ""
    return f" (id2label {names}{problem})" if names else ""


def write_fine_tuned_hugging_face(folder, checkpoint, tensors, config, tokenizer_config):
    """Writes what `run_to_hugging_face` read into the empty `folder`;
    returns the transformers class."""
    write_hugging_face_files(folder, tensors, config, checkpoint.vocabulary, tokenizer_config)
    return config["architectures"][0]


# === In: transformers -> a keras_bert run ===


def hugging_face_to_run(checkpoint, folder, task=None):
    """The fine-tuning run of the fine-tuned transformers folder `folder`,
    whose encoder and head tensors `checkpoint` holds (`read_hugging_face`,
    the head under its transformers names).

    Args:
        checkpoint: `BertCheckpoint`. The head's tensors are taken out of it.
        folder: str. The transformers folder (its `config.json` and
            tokenizer files are read).
        task: str or None. A fine-tuning task whose model is the head's
            keras_bert class; None: `TaskHead.default_task`.

    Returns:
        `(task, config, model, lines)`: the task, its `FinetuneConfig`, the
        filled task model (its backbone carrying the vocabulary) and the
        report's lines about the task, its labels and the tokenizer (what
        the head's tensors were is in the checkpoint's notes).

    Raises:
        CheckpointError: a head or task keras_bert cannot hold, or a missing,
            unexpected, mis-shaped or non-finite tensor.
    """
    config_json = read_config_json(folder)
    architecture = architecture_named(config_json)
    # Only a classifier's and a tagger's outputs are named (QA: start and
    # end; multiple choice: the choices).
    named = architecture in ("BertForSequenceClassification", "BertForTokenClassification")
    labels = _label_names(config_json, folder, architecture) if named else []
    head = _head(architecture, config_json, len(labels), folder)
    chosen, why = _task(head, task, folder, TASKS)
    head_tensors = {
        name: checkpoint.weights.pop(name)
        for name in list(checkpoint.weights)
        if name.startswith(f"{head.layer}.")
    }
    if checkpoint.has_heads():
        extra = sorted(
            checkpoint.source_names.get(n, n) for n in checkpoint.weights if n.startswith("cls/")
        )
        raise CheckpointError(
            f"{folder}: a {head.architecture} with pre-training head tensors "
            f"({', '.join(extra)}); keras_bert's fine-tuned models have none"
        )
    if checkpoint.vocabulary is None:
        raise CheckpointError(
            f"{folder}: no vocab.txt or WordPiece tokenizer.json; a fine-tuning run needs "
            "its vocabulary: pass --vocab vocab.txt"
        )
    missing = [t for t in _SPECIAL_TOKENS if t not in checkpoint.vocabulary]
    if missing:
        raise CheckpointError(
            f"{folder}: the vocabulary lacks {', '.join(missing)}, which keras_bert's "
            "tokenizer needs"
        )
    if len(checkpoint.vocabulary) != checkpoint.config["vocabulary_size"]:
        raise CheckpointError(
            f"{folder}: the vocabulary has {len(checkpoint.vocabulary)} tokens but the model "
            f"{checkpoint.config['vocabulary_size']} embeddings; a fine-tuning run needs one "
            "embedding per token (wrong vocab.txt?)"
        )
    backbone = checkpoint.to_model(heads=False)
    lower_case, case_source, max_length = _tokenizer_settings(folder)
    config = _finetune_config(chosen, backbone, lower_case, max_length, folder)
    handler = TASKS[chosen](chosen, config, None, None)
    label_line, rows = _use_labels(handler, head, labels, chosen, folder)
    # The model's class j is the folder's id rows[j] (a tensor of another
    # size is left for `_fill_head` to report).
    if rows is not None and all(len(v) == len(labels) for v in head_tensors.values()):
        head_tensors = {name: value[rows] for name, value in head_tensors.items()}
    model = handler.build_model(backbone)
    _fill_head(head, model, head_tensors, checkpoint.source)
    checkpoint.notes.append(f"head: {', '.join(sorted(head_tensors))} checked and loaded")
    if not head.pooler:
        checkpoint.notes.append(
            f"{head.architecture} has no pooler; {type(model).__name__} does not use one"
        )
    case = {True: "lower case", False: "cased", None: "case inferred from the vocabulary"}
    lines = [
        f"task:    {chosen} ({why}) -> {type(model).__name__}",
        *label_line,
        f"tokenizer: {case[lower_case]}{case_source}; data.max_seq_length "
        f"{config.data.max_seq_length}",
    ]
    return chosen, config, model, lines


def _label_names(config_json, folder, architecture):
    """The class names in id order: `id2label`'s, else `LABEL_<i>` for
    `num_labels` ids, as transformers names them. A name must be text that
    keeps a prediction on its line: no control characters, and a tagger's
    no white space either (`predict` writes `word label` lines)."""
    id2label = config_json.get("id2label")
    if not id2label:
        count = config_json.get("num_labels", _DEFAULT_NUM_LABELS)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise CheckpointError(
                f"{folder}/config.json: `num_labels` must be a whole number >= 1. "
                f"Received: num_labels={count!r}"
            )
        return [f"LABEL_{i}" for i in range(count)]
    # JSON keys are text: {"0": "negative", "1": "positive"}.
    by_id = {}
    if isinstance(id2label, dict):
        for key, name in id2label.items():
            by_id[int(key) if str(key).isdigit() else -1] = name
    if sorted(by_id) != list(range(len(id2label))):
        raise CheckpointError(
            f"{folder}/config.json: `id2label` must map the ids 0..n-1 to names. "
            f"Received: id2label={id2label!r}"
        )
    names = [by_id[i] for i in range(len(by_id))]
    tagger = architecture == "BertForTokenClassification"
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            rule = "non-empty text"
        elif tagger and any(c.isspace() or unicodedata.category(c) == "Cc" for c in name):
            rule = "free of white space and control characters (predict writes `word label` lines)"
        elif any(unicodedata.category(c) == "Cc" or c in "\u2028\u2029" for c in name):
            rule = "free of control characters and line breaks"
        else:
            continue
        raise CheckpointError(
            f"{folder}/config.json: `id2label` names must be {rule}. Received: id {i} named {name!r}"
        )
    if len(set(names)) != len(names):
        raise CheckpointError(
            f"{folder}/config.json: `id2label` names a class twice; keras_bert names its "
            f"predictions by class. Received: id2label={id2label!r}"
        )
    return names


def _head(architecture, config_json, num_labels, folder):
    """The `TaskHead` of the folder's class, a sentence head chosen by
    `problem_type` and `num_labels` as transformers chooses its loss."""
    candidates = [h for h in HEADS.values() if h.architecture == architecture]
    if len(candidates) == 1:
        return candidates[0]
    problem = config_json.get("problem_type")
    where = f"{folder}: a {architecture} with num_labels={num_labels}, problem_type={problem!r}"
    if problem == "multi_label_classification":
        raise CheckpointError(
            f"{where}: keras_bert has no multi-label head (a sigmoid a class); its "
            "classifiers pick one class"
        )
    if problem == "regression" or (problem is None and num_labels == 1):
        if num_labels != 1:
            raise CheckpointError(f"{where}: keras_bert's BertRegressor predicts one score")
        return HEADS["BertRegressor"]
    if problem not in (None, "single_label_classification"):
        raise CheckpointError(
            f"{where}: `problem_type` must be one of 'single_label_classification', "
            "'regression' or null"
        )
    if num_labels < 2:
        raise CheckpointError(f"{where}: a classifier needs at least 2 classes")
    return HEADS["BertClassifier"]


def _task_model_class(task, tasks):
    return tasks[task](task, load_finetune_config(task), None, None).model_class.__name__


def _task(head, task, folder, tasks):
    """`(task, why)`: `task` once checked against the head, or the head's
    default; refused with the tasks that fit where none is given and the
    head alone cannot tell."""
    fitting = [t for t in sorted(tasks) if _task_model_class(t, tasks) == head.model_class]
    if task is None:
        if head.default_task is None:
            raise CheckpointError(
                f"{folder}: a {head.architecture} serves the tasks {', '.join(fitting)}; "
                "pass --task to say which"
            )
        others = [t for t in fitting if t != head.default_task]
        why = f"the default for a {head.architecture}" + (
            f"; --task picks another of {', '.join(others)}" if others else ""
        )
        return head.default_task, why
    if task not in tasks:
        raise CheckpointError(
            f"--task {task}: not a fine-tuning task; expected one of {', '.join(sorted(tasks))}"
        )
    if task not in fitting:
        raise CheckpointError(
            f"--task {task}: fine-tunes a {_task_model_class(task, tasks)}, but {folder} holds "
            f"a {head.architecture} (keras_bert's {head.model_class}); tasks for it: "
            f"{', '.join(fitting)}"
        )
    return task, "as requested"


def _use_labels(handler, head, labels, task, folder):
    """Gives `handler` the folder's classes as a training file would
    (`FinetuningTask.__init__`). A GLUE task keeps its own classes: the
    folder's are read as a `datasets` export's labels are
    (`pipelines.tasks.GLUE_TASKS`): by name, the task's or `datasets`' own,
    in any case; transformers' unnamed `LABEL_<id>` by id in `datasets`'
    order, the one its GLUE models are trained in. Any other name is
    refused: a generic task keeps it.

    Returns:
        `(lines, rows)`: the report's lines, and for each of the model's
        classes the folder's id of it (None: the same order).
    """
    if head.model_class not in ("BertClassifier", "BertTokenClassifier"):
        return [], None
    fixed = getattr(handler, "label_names", None)
    if not fixed:
        handler.label_names = labels
        return [f"labels:  {labels} (id2label)"], None
    spec = GLUE_TASKS[task]
    known = {theirs.lower(): ours for theirs, ours in spec.export_labels}
    known.update((name.lower(), name) for name in spec.label_names)
    # transformers' name for an unnamed class, `LABEL_<id>`: by id.
    by_id = {f"label_{i}": ours for i, (_, ours) in enumerate(spec.export_labels)}
    read = [known.get(name.strip().lower(), by_id.get(name.lower())) for name in labels]
    if sorted(read, key=str) != sorted(fixed):
        raise CheckpointError(
            f"--task {task}: has the classes {list(fixed)}, but {folder} classifies into "
            f"{labels} (id2label); name a generic task (--task classification or "
            "pair_classification) to keep its own"
        )
    rows = [read.index(name) for name in fixed]
    order = "" if rows == sorted(rows) else f", rows reordered to {list(fixed)}"
    return [f"labels:  id2label {labels} read as {task}'s classes {read}{order}"], rows


def _tokenizer_settings(folder):
    """`(lower_case or None, where it was read, model_max_length or None)`:
    `do_lower_case` of the folder's `tokenizer_config.json`, else the
    `lowercase` of its `tokenizer.json`'s BERT normalizer (None when
    neither says); the length transformers' tokenizer truncates to, when
    the config names a real one."""
    lower_case, where, max_length = None, "", None
    for name, case in (
        ("tokenizer.json", lambda c: (c.get("normalizer") or {}).get("lowercase")),
        (TOKENIZER_CONFIG, lambda c: c.get("do_lower_case")),
    ):
        path = os.path.join(folder, name)
        try:
            with open(path) as f:
                settings = json.load(f)
            value = case(settings)
        except (OSError, json.JSONDecodeError, AttributeError):
            continue
        if isinstance(value, bool):  # tokenizer_config.json's, read last, wins.
            lower_case, where = value, f" ({name})"
        length = settings.get("model_max_length") if name == TOKENIZER_CONFIG else None
        # transformers writes 1e30 for "no limit".
        if isinstance(length, int) and not isinstance(length, bool) and 0 < length < 10**6:
            max_length = length
    return lower_case, where, max_length


def _finetune_config(task, backbone, lower_case, max_length, folder):
    """The task's own config, with the checkpoint's case and dropout and a
    sequence length it holds: the task's, or the positions or the
    tokenizer's `model_max_length` when shorter."""
    config = load_finetune_config(task)
    config.data.max_seq_length = min(
        config.data.max_seq_length, backbone.max_sequence_length, max_length or math.inf
    )
    config.data.lower_case = lower_case
    config.training.dropout = backbone.dropout
    try:
        SCHEMA.check(config)
    except ConfigError as error:
        raise CheckpointError(f"{folder}: cannot be a {task} run: {error}") from None
    return config


def _fill_head(head, model, tensors, source):
    """Assigns the head's tensors to `model`, once every name, shape and
    value is found right; else one error listing all that is not."""
    mappings = {m.name: m for m in head.weight_map(model)}
    missing = set(mappings) - set(tensors)
    problems = weight_mismatches(mappings, tensors, missing, str, "model")
    if problems:
        raise CheckpointError(
            f"{source}: the head does not match a {head.architecture} of "
            f"{type(model).__name__}: " + "; ".join(problems) + "."
        )
    non_finite_weights(source, tensors, str)
    for name, mapping in mappings.items():
        mapping.variable.assign(mapping.to_keras(tensors[name]))


def write_run_folder(folder, config, model, source):
    """Writes the fine-tuning run into the empty `folder`: `config.yaml`
    (the config, the task, `source` as its init_checkpoint, no data_dir),
    `vocab.txt`, `model.keras` and the run's record; then loads it
    as `predict` does (`inference.load_run`), so that a folder that
    command would refuse is never put in place."""
    run_folder = RunFolder(folder, FINETUNING_RUN)
    FINETUNING_RUN.write_config(run_folder, config, source, data_dir=None)
    FINETUNING_RUN.write_vocabulary(run_folder, model.backbone.vocabulary)
    FINETUNING_RUN.save_model(run_folder, model)
    load_run(folder)
