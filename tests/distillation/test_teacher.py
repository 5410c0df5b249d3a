"""The teacher: a fine-tuning run folder that labels the transfer set."""

import numpy as np
import pytest
import yaml

from keras_bert.distillation.teacher import Teacher
from pipelines.transfer_set import length_batches, sentence_batches, word_batches


@pytest.mark.backend_independent
def test_the_fingerprint_changes_with_every_setting_the_outputs_depend_on(fine_tuned):
    # Issue 82 item 13: it hashed model.keras alone, so a rerun after the
    # teacher's recorded sequence length or casing changed kept its labels.
    run, _ = fine_tuned("sst2")
    config_path = run / "config.yaml"
    recorded = yaml.safe_load(config_path.read_text())
    fingerprints = [Teacher(str(run)).fingerprint]
    for key, value in [("max_seq_length", 64), ("lower_case", False)]:
        recorded["data"][key] = value
        config_path.write_text(yaml.safe_dump(recorded))
        fingerprints.append(Teacher(str(run)).fingerprint)
    assert len(set(fingerprints)) == 3
    assert Teacher(str(run)).fingerprint == fingerprints[-1]  # The same run, the same hash.


SENTENCES = [
    "a good film",
    "the worst film of the year , by far",
    "good",
    "a film that is neither good nor bad , but long , very long , and dull",
    "bad",
    "an unbelievably good film",
    "not good",
]


@pytest.mark.parametrize("task", ["sst2", "conll2003"])
def test_each_row_is_labelled_as_the_model_labels_it_alone_unpadded(fine_tuned, task):
    # Issue 79 item 2: the rows are batched by length in tokens, not in
    # their order; each must get the outputs of its own forward pass, with
    # no padding, and every row exactly once.
    teacher = Teacher(str(fine_tuned(task)[0]))
    if teacher.tagging:
        rows = [{"words": s.split()} for s in SENTENCES]
        tokenized = word_batches([r["words"] for r in rows], teacher.tokenizer, 128, 1)
    else:
        rows = [{"text_a": s, "text_b": None} for s in SENTENCES]
        tokenized = sentence_batches(SENTENCES, [None] * len(rows), teacher.tokenizer, 128, 1)
    labelled = {}
    for indices, outputs in teacher.batch_outputs(rows, batch_size=3):
        for index, values in zip(indices, outputs):
            assert index not in labelled
            labelled[index] = values
    assert sorted(labelled) == list(range(len(rows)))
    for index, batch in enumerate(tokenized.as_numpy_iterator()):
        inputs, first = batch if teacher.tagging else (batch, None)
        length = int(inputs["padding_mask"].sum())
        alone = teacher.model.predict_on_batch({k: v[:, :length] for k, v in inputs.items()})
        alone = np.asarray(alone, np.float32)[0]
        if teacher.tagging:
            starts = first[0, : len(rows[index]["words"])]
            assert labelled[index]["is_target"] == (starts >= 0).astype(int).tolist()
            alone = alone[np.maximum(starts, 0)]
        np.testing.assert_allclose(labelled[index]["teacher"], alone.reshape(-1), atol=1e-5)


def test_length_batches_cut_each_batch_to_its_longest_row_and_fill_the_last():
    lengths = np.array([5, 1, 9, 3, 2, 17, 4])
    mask = (np.arange(20)[None, :] < lengths[:, None]).astype(np.int32)
    inputs = {"token_ids": mask * np.arange(1, 8)[:, None], "padding_mask": mask}
    batches = list(length_batches(inputs, batch_size=3, multiple=8))
    assert [list(indices) for indices, _ in batches] == [[1, 4, 3], [6, 0, 2], [5]]
    assert [b["token_ids"].shape for _, b in batches] == [(3, 8), (3, 16), (3, 20)]
    # The last batch is its row three times: one shape a length.
    assert (batches[2][1]["token_ids"] == inputs["token_ids"][[5, 5, 5], :20]).all()
    assert (batches[1][1]["token_ids"] == inputs["token_ids"][[6, 0, 2], :16]).all()
