"""Evaluation and prediction with a fine-tuning run's folder: its task,
settings, `model.keras` and `vocab.txt`, no training.

`run_evaluation` scores a labelled file with the task's official metric;
`run_prediction` writes predictions for a file without labels, in chunks
behind a progress bar, to a temporary name renamed into place at the end.
"""

import hashlib
import logging
import os
import time

from keras_bert.errors import FinetuneError
from keras_bert.file_io import (
    FILE_ERRORS,
    is_dir,
    is_file,
    makedirs,
    write_atomically,
    write_json_atomically,
)
from keras_bert.finetuning.config import load_saved_config
from keras_bert.finetuning.run_kind import (
    CONFIG,
    EVAL_FILES,
    FINETUNING_RUN,
    MODEL,
    VOCABULARY,
)
from keras_bert.finetuning.runner import load_keras_model
from keras_bert.finetuning.task_registry import TASKS
from keras_bert.runs.output_guard import check_output, claimed_output
from keras_bert.runs.run_folder import RunFolder
from keras_bert.runtime.progress import StderrProgbar
from pipelines.vocabulary import infer_lower_case

logger = logging.getLogger(__name__)

# Examples predicted (and written) at a time: memory stays bounded on a
# large input, and the progress bar moves.
CHUNK = 2048
# GLUE leaderboard file names; MNLI's depend on the test file (below).
SUBMISSION_NAMES = {
    "cola": "CoLA",
    "sst2": "SST-2",
    "mrpc": "MRPC",
    "stsb": "STS-B",
    "qqp": "QQP",
    "qnli": "QNLI",
    "rte": "RTE",
    "wnli": "WNLI",
}


def load_run(model_dir, input_file=None):
    """`(task, handler, model)` for the fine-tuning run in `model_dir`, the
    handler holding its tokenizer and the model's label names, once
    `check_run_parts` found its config, model and vocabulary to belong
    together. `input_file`, when given, is checked to exist before the
    model loads (a folder is left to the task's reader)."""
    import pipelines

    RunFolder(model_dir, FINETUNING_RUN).refuse_unfinished_rerun()
    task, config = load_saved_config(model_dir)
    # A folder may be a table (a `datasets` save_to_disk folder): the task's reader judges it.
    if input_file is not None and not (is_file(input_file) or is_dir(input_file)):
        raise FinetuneError(f"{input_file}: no such file")
    model_path = os.path.join(model_dir, MODEL)
    model = load_keras_model(model_path)
    vocab_path = os.path.join(model_dir, VOCABULARY)
    vocabulary = pipelines.load_vocabulary(vocab_path)
    lower_case = config.data.lower_case
    if lower_case is None:
        lower_case = infer_lower_case(vocabulary)
    tokenizer = pipelines.BertTokenizer(vocab_path, lower_case=lower_case)
    handler = check_run_parts(model_dir, task, config, model, tokenizer)
    handler.use_model(model)
    return task, handler, model


def check_run_parts(model_dir, task, config, model, tokenizer):
    """The task's handler (with `tokenizer`), once `model_dir`'s parts are found to belong
    together: `config.yaml` names a known task, `model.keras` holds that
    task's model (with the task's classes, for GLUE), fit for the config's
    `max_seq_length`, and `vocab.txt` is the vocabulary the model was
    fine-tuned with. Anything else is a `FinetuneError` naming what was
    found and what was expected.

    The model carries its vocabulary (a token a row of its embeddings): a
    `vocab.txt` that differs is refused rather than replaced by it, since
    it means the folder's files come from different runs, and its config
    may too.
    """
    config_path = os.path.join(model_dir, CONFIG)
    model_path = os.path.join(model_dir, MODEL)
    vocab_path = os.path.join(model_dir, VOCABULARY)
    if task not in TASKS:
        raise FinetuneError(
            f"{config_path}: task {task!r} is not a fine-tuning task; "
            f"expected one of {', '.join(sorted(TASKS))}"
        )
    handler = TASKS[task](task, config, None, tokenizer)
    expected = handler.model_class
    if not isinstance(model, expected):
        raise FinetuneError(
            f"{model_path}: holds a {type(model).__name__}, but {config_path} "
            f"names task {task!r}, whose model is a {expected.__name__}"
        )
    task_labels = getattr(handler, "label_names", None)
    model_labels = getattr(model, "label_names", None)
    if task_labels and model_labels and list(task_labels) != list(model_labels):
        raise FinetuneError(
            f"{model_path}: classifies into {list(model_labels)}, but task "
            f"{task!r} (named in {config_path}) has the classes {list(task_labels)}"
        )
    backbone = model.backbone
    if config.data.max_seq_length > backbone.max_sequence_length:
        raise FinetuneError(
            f"{config_path}: data.max_seq_length={config.data.max_seq_length} "
            f"exceeds {model_path}'s max_sequence_length={backbone.max_sequence_length}"
        )
    vocabulary = list(tokenizer.vocabulary)
    if len(vocabulary) != backbone.vocabulary_size:
        raise FinetuneError(
            f"{vocab_path}: {len(vocabulary)} tokens, but {model_path} has "
            f"{backbone.vocabulary_size} token embeddings; the files come from different runs"
        )
    own = list(backbone.vocabulary or [])
    if own and own != vocabulary:
        row = next(i for i, (a, b) in enumerate(zip(own, vocabulary)) if a != b)
        raise FinetuneError(
            f"{vocab_path}: is not the vocabulary {model_path} was fine-tuned "
            f"with (token {row} is {vocabulary[row]!r}, the model's is "
            f"{own[row]!r}); the files come from different runs"
        )
    return handler


def _makedirs(path, flag):
    try:
        makedirs(path)
    except FILE_ERRORS as error:
        raise FinetuneError(f"{flag} {path}: cannot write: {error}") from None


def run_evaluation(model_dir, eval_file, output_dir=None, overwrite=False):
    """Scores the fine-tuned model in `model_dir` on `eval_file`, a labelled
    file of its task, with the task's official metric.

    Writes `eval_results.json` and the task's predictions file into
    `output_dir` (default: `<model_dir>/eval_<file name>_<digest>/`, the
    digest of the file's absolute path: two `dev.tsv` from different
    folders get two folders); an existing one of these files is replaced
    only with `overwrite`. Returns the results dict.
    """
    task, handler, model = load_run(model_dir, eval_file)
    defaulted = output_dir is None
    output_dir = output_dir or default_eval_dir(model_dir, eval_file)
    if is_file(output_dir):
        raise FinetuneError(f"--output {output_dir}: is a file, not a folder")

    def check():
        for name in EVAL_FILES:
            check_output(
                "--output",
                os.path.join(output_dir, name),
                inputs=[eval_file],
                overwrite=overwrite,
                error=FinetuneError,
            )

    check()
    handler.use_eval_file(eval_file, model)
    _makedirs(output_dir, "--output")
    results_file = os.path.join(output_dir, "eval_results.json")
    with claimed_output(results_file, check, "evaluate", FinetuneError):
        logger.info("Scoring %s (%s)", eval_file, task)
        start = time.time()
        results, predictions_path = handler.evaluate(model, output_dir)
        results.update(
            task=task,
            eval_file=eval_file,
            eval_seconds=round(time.time() - start, 1),
            predictions_file=os.path.basename(predictions_path),
        )
        write_json_atomically(results, results_file)
    if defaulted:  # A rerun sets it aside with the model it scored.
        RunFolder(model_dir, FINETUNING_RUN).record_outputs([os.path.basename(output_dir)])
    return results


def default_eval_dir(model_dir, eval_file):
    """`<model_dir>/eval_<file name>_<8 hex digits>/`, the digits a hash of
    the file's absolute path (its URL when remote)."""
    where = eval_file if "://" in eval_file else os.path.abspath(eval_file)
    digest = hashlib.sha256(where.encode("utf-8")).hexdigest()[:8]
    name = os.path.basename(eval_file).replace(".", "_")
    return os.path.join(model_dir, f"eval_{name}_{digest}")


def submission_name(task, input_file):
    """The GLUE leaderboard's file name for predictions of `input_file`."""
    if task == "mnli":
        name = os.path.basename(input_file).lower()
        if "diagnostic" in name or name.startswith("ax"):
            return "AX.tsv"
        return "MNLI-mm.tsv" if "mismatched" in name else "MNLI-m.tsv"
    return SUBMISSION_NAMES[task] + ".tsv"


def run_prediction(model_dir, input_file, output=None, glue_submission=False, overwrite=False):
    """Predicts every example of `input_file` (the task's format, labels
    not needed) with the fine-tuned model in `model_dir`.

    Writes, by task family: JSONL, a row per example (classification: the
    label and every class's probability; regression: the score; SWAG: the
    chosen ending); CoNLL text, `word tag` a line (NER); for SQuAD the
    official `{id: answer}` JSON and, beside it, `<name>.offsets.jsonl`
    with each answer's character offsets. `glue_submission`: the GLUE
    leaderboard's `index<TAB>prediction` file under its expected name. An
    existing output file is replaced only with `overwrite`; the input and
    the run's own files never are.

    Returns:
        `{"task", "input_file", "examples", "output"}` (and `"offsets"`).
    """
    task, handler, model = load_run(model_dir, input_file)
    from pipelines.tasks import GLUE_TASKS

    if glue_submission and task not in GLUE_TASKS:
        raise FinetuneError(f"--glue_submission: {task} is not a GLUE task")
    examples = handler.read_unlabelled(input_file)
    if not examples:
        raise FinetuneError(f"{input_file}: no examples")
    if glue_submission:
        if not all(e.guid.isdigit() for e in examples):
            raise FinetuneError(
                f"{input_file}: not an official GLUE test file (its first "
                "column, 'index', numbers the examples the leaderboard "
                "scores)"
            )
        default = os.path.join(model_dir, "glue_submission", submission_name(task, input_file))
        write, companions = _write_submission, lambda path: []
    else:
        stem = os.path.splitext(os.path.basename(input_file))[0]
        prediction_format = handler.prediction_format
        write, companions = prediction_format.write, prediction_format.companions
        default = os.path.join(model_dir, f"predictions_{stem}{prediction_format.extension}")
    defaulted = output is None
    output = output or default
    written = [output, *companions(output)]

    def check():
        for path in written:
            check_output("--output", path, [input_file], overwrite, error=FinetuneError)

    check()
    folder = os.path.dirname(output) or os.curdir
    _makedirs(folder, "--output")
    with claimed_output(output, check, "predict", FinetuneError):
        progress = StderrProgbar(len(examples), unit_name="example")
        rows = []
        for start in range(0, len(examples), CHUNK):
            chunk = examples[start : start + CHUNK]
            rows += handler.predict(model, chunk, progress=False)
            progress.add(len(chunk))
        files = write(rows, output)
    if defaulted:  # A rerun sets it aside with the model that predicted it.
        RunFolder(model_dir, FINETUNING_RUN).record_outputs(
            [os.path.relpath(p, model_dir).split(os.sep)[0] for p in written]
        )
    return {"task": task, "input_file": input_file, "examples": len(examples), **files}


def _write_submission(rows, path):
    def write(f):
        f.write("index\tprediction\n")
        for row in rows:
            f.write(f"{row['guid']}\t{row['prediction']}\n")

    write_atomically(path, write)
    return {"output": path}
