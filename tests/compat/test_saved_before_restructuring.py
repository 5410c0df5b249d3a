"""Archives written by keras_bert before the layout restructuring (issue 39,
commit 527605f) load and run after it: the serialized class names are
permanent (`register_keras_serializable(package="keras_bert")`), whatever
module a class lives in.

Made at 527605f with a 1-layer, 16-wide backbone and the fine-tuning
fixture vocabulary: `pretraining/` by a 9-step pre-training run,
`sst2_run/` by `python -m keras_bert.finetune --task sst2` on
`tests/finetuning/fixtures/glue` (2 steps, `data.max_seq_length=32`).
"""

import json
import shutil
from pathlib import Path

import keras
import numpy as np

import keras_bert  # noqa: F401  (registers the classes for load_model)
from keras_bert.evaluate import main as evaluate

SAVED = Path(__file__).resolve().parent / "saved_before_restructuring"
FIXTURES = Path(__file__).resolve().parents[1] / "finetuning" / "fixtures"


def test_backbone_and_pretrainer_load_and_agree():
    backbone = keras.saving.load_model(SAVED / "pretraining" / "backbone.keras")
    pretrainer = keras.saving.load_model(SAVED / "pretraining" / "pretrainer.keras", compile=False)
    assert type(backbone).__name__ == "BertBackbone"
    assert type(pretrainer).__name__ == "BertPretrainer"
    inputs = {
        "token_ids": np.array([[2, 5, 9, 3, 0, 0]]),
        "segment_ids": np.zeros((1, 6), "int32"),
        "padding_mask": np.array([[1, 1, 1, 1, 0, 0]]),
    }
    # The exported backbone is the pretrainer's own: same sequence output.
    alone = keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    inside = keras.ops.convert_to_numpy(pretrainer.backbone(inputs)["sequence_output"])
    np.testing.assert_allclose(alone, inside, atol=1e-6)


def test_compiled_pretrainer_loads_with_its_schedule_and_step():
    pretrainer = keras.saving.load_model(SAVED / "pretraining" / "pretrainer.keras")
    schedule = pretrainer.optimizer._learning_rate
    assert type(schedule).__name__ == "WarmupLinearDecay"
    assert int(pretrainer.optimizer.iterations) == 9


def test_fine_tuning_run_folder_is_evaluated_as_when_it_was_trained(tmp_path):
    run = tmp_path / "sst2_run"
    shutil.copytree(SAVED / "sst2_run", run)
    trained = json.loads((run / "eval_results.json").read_text())
    out = tmp_path / "scored"
    assert (
        evaluate(
            [
                "--model_dir",
                str(run),
                "--input",
                str(FIXTURES / "glue" / "SST-2" / "dev.tsv"),
                "--output_dir",
                str(out),
            ]
        )
        == 0
    )
    scored = json.loads((out / "eval_results.json").read_text())
    assert scored["eval_examples"] == trained["eval_examples"]
    assert abs(scored["accuracy"] - trained["accuracy"]) < 1e-6
