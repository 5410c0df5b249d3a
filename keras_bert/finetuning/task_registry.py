"""Task name → the class that handles it and its config file.

Every task of `python -m keras_bert.finetune --task` is listed here with
the module that implements it, so nothing hides where the code lives. Each
class provides `task.FinetuningTask` (`tests/finetuning/test_task.py`).
"""

from keras_bert.finetuning.choice_task import ChoiceTask
from keras_bert.finetuning.config import CONFIG_DIR
from keras_bert.finetuning.sentence_task import SentenceTask
from keras_bert.finetuning.squad_task import SquadTask
from keras_bert.finetuning.tagging_task import TaggingTask
from keras_bert.finetuning.task import FinetuningTask

# name: (handler class, default config in configs/finetune/)
TASKS: dict[str, tuple[type[FinetuningTask], str]] = {
    "sst2": (SentenceTask, "glue.yaml"),
    "cola": (SentenceTask, "glue.yaml"),
    "mrpc": (SentenceTask, "glue.yaml"),
    "rte": (SentenceTask, "glue.yaml"),
    "stsb": (SentenceTask, "glue.yaml"),
    "qnli": (SentenceTask, "glue.yaml"),
    "qqp": (SentenceTask, "glue.yaml"),
    "mnli": (SentenceTask, "glue.yaml"),
    "wnli": (SentenceTask, "glue.yaml"),
    "classification": (SentenceTask, "generic.yaml"),
    "pair_classification": (SentenceTask, "generic.yaml"),
    "regression": (SentenceTask, "generic.yaml"),
    "squad_v1": (SquadTask, "squad.yaml"),
    "squad_v2": (SquadTask, "squad.yaml"),
    "conll2003": (TaggingTask, "conll2003.yaml"),
    "swag": (ChoiceTask, "swag.yaml"),
}


def default_config_file(task):
    return CONFIG_DIR / TASKS[task][1]
