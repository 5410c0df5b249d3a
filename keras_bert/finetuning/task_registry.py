"""Task name → the class that handles it and its config file.

Every task of `python -m keras_bert.finetune --task` is listed here with
the module that implements it, so nothing hides where the code lives. Each
class provides `task.FinetuningTask` (`tests/finetuning/test_task.py`).
"""

from keras_bert.paths import CONFIGS
from keras_bert.registry import Registry

CONFIG_DIR = CONFIGS / "finetune"
_SENTENCE = "keras_bert.finetuning.sentence_task.SentenceTask"
_SQUAD = (
    "keras_bert.finetuning.squad_task.SquadTask",
    "squad.yaml",
    {"squad": "keras_bert.finetuning.squad_config.SquadConfig"},
)
# name: (handler class, default config in configs/finetune/[, the config
# sections of its own it reads, besides every task's: {YAML key: its
# Keras-free dataclass}])
_TASKS = {
    "sst2": (_SENTENCE, "glue.yaml"),
    "cola": (_SENTENCE, "glue.yaml"),
    "mrpc": (_SENTENCE, "glue.yaml"),
    "rte": (_SENTENCE, "glue.yaml"),
    "stsb": (_SENTENCE, "glue.yaml"),
    "qnli": (_SENTENCE, "glue.yaml"),
    "qqp": (_SENTENCE, "glue.yaml"),
    "mnli": (_SENTENCE, "glue.yaml"),
    "wnli": (_SENTENCE, "glue.yaml"),
    "classification": (_SENTENCE, "generic.yaml"),
    "pair_classification": (_SENTENCE, "generic.yaml"),
    "regression": (_SENTENCE, "generic.yaml"),
    "squad_v1": _SQUAD,
    "squad_v2": _SQUAD,
    "conll2003": ("keras_bert.finetuning.tagging_task.TaggingTask", "conll2003.yaml"),
    "swag": ("keras_bert.finetuning.choice_task.ChoiceTask", "swag.yaml"),
}
# Task name -> its `task.FinetuningTask` handler class.
TASKS = Registry({name: entry[0] for name, entry in _TASKS.items()})


def default_config_file(task):
    return CONFIG_DIR / _TASKS[task][1]


def own_sections(task):
    """The config sections `task` reads of its own (`squad` for the SQuAD
    tasks), besides every task's."""
    entry = _TASKS.get(task, ())
    return tuple(entry[2]) if len(entry) > 2 else ()


# Section name -> its dataclass, for the sections only some tasks read:
# every fine-tuning config has each (`FinetuneConfig.task_sections`), and
# one is refused to a task that does not read it.
TASK_SECTIONS = Registry(
    {name: path for entry in _TASKS.values() if len(entry) > 2 for name, path in entry[2].items()}
)
