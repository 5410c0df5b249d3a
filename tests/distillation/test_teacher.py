"""The teacher: a fine-tuning run folder that labels the transfer set."""

import pytest
import yaml

from keras_bert.distillation.teacher import Teacher


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
