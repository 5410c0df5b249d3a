"""The fine-tuning tests' fixtures: a tiny backbone, the task files and
one fine-tuned run per task family, the teachers here."""

from tests.finetuning.conftest import checkpoint, fine_tuned, fixtures  # noqa: F401
