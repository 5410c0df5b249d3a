"""Words a masked LM predicts in context, for augmented copies."""

import re

import numpy as np
import pytest

from keras_bert.distillation.augmentation import TO_REPLACE, augmented_words
from keras_bert.distillation.config import TransferConfig, load_distill_config
from keras_bert.distillation.masked_lm_words import MaskedLmAndNeighbourWords, MaskedLmWords
from keras_bert.distillation.neighbour_words import NeighbourWords
from keras_bert.errors import ConfigError, FinetuneError
from keras_bert.pretraining.fill_mask import fill_mask

pytestmark = pytest.mark.backend_independent


def test_marked_words_become_the_masked_lms_whole_words_in_context(masked_lm):
    words = MaskedLmWords(masked_lm, top_k=3, batch_size=2)
    rows = [
        {"text_a": f"john {TO_REPLACE}lives in [MASK] city", "text_b": None, "label": None},
        {"words": ["paris", TO_REPLACE + "new", "york"], "labels": None},
        {"text_a": "nothing to replace", "text_b": None, "label": None},
    ]
    filled = words.fill([dict(r) for r in rows], [np.random.default_rng(i) for i in range(3)])
    # What the masked LM ranks at each place, its whole words only: no `##`
    # continuation, no special token ("[" and "]" are words, as punctuation).
    for row, sentence, at in [
        (filled[0], "john [MASK] in [MASK] city", 0),
        (filled[1], "paris [MASK] york", 0),
    ]:
        ranked = fill_mask(words.model, words.tokenizer, [sentence], top_k=174)[0][at]
        best = [t for t, _ in ranked if not re.fullmatch(r"##.+|\[[A-Z]+\]", t)][:3]
        text = row["words"] if "words" in row else row["text_a"].split()
        assert text[1] in best
    assert filled[0]["text_a"].split()[3] == "[MASK]"
    assert filled[2] == rows[2]
    again = words.fill([dict(r) for r in rows], [np.random.default_rng(i) for i in range(3)])
    assert again == filled


def test_batches_of_every_shape_draw_from_the_masked_lms_own_ranking(masked_lm):
    # Rows with 0 to 70 marked words, batches of 3 (the last one short):
    # every replacement is the one drawn, with the row's generator, from the
    # whole words `fill_mask` ranks at its place, the whole vocabulary's
    # logits ranked in numpy.
    words = MaskedLmWords(masked_lm, top_k=3, batch_size=3)
    vocabulary = "the movie was played in paris by smith who won the team visit".split()
    sentences = [
        vocabulary[:2],
        vocabulary[:5],
        vocabulary,
        [vocabulary[i % len(vocabulary)] for i in range(90)],
    ]
    marked = [{1}, {0, 3}, {0, 4, 5, 9}, set(range(0, 90, 9)) | set(range(20, 80))]
    rows = [
        {"words": [TO_REPLACE + w if i in at else w for i, w in enumerate(s)], "labels": None}
        for s, at in zip(sentences, marked)
    ] + [{"words": ["nothing", "marked"], "labels": None}]
    filled = words.fill([dict(r) for r in rows], [np.random.default_rng(i) for i in range(5)])
    for index, (sentence, at) in enumerate(zip(sentences, marked)):
        query = " ".join("[MASK]" if i in at else w for i, w in enumerate(sentence))
        ranked = fill_mask(words.model, words.tokenizer, [query], top_k=12)[0]
        rng = np.random.default_rng(index)
        expected = list(sentence)
        for place, i in enumerate(sorted(at)):
            candidates = [t for t, _ in ranked[place] if not re.fullmatch(r"##.+|\[[A-Z]+\]", t)]
            expected[i] = candidates[:3][rng.integers(len(candidates[:3]))]
        assert filled[index]["words"] == expected
    assert filled[4] == rows[4]


def whole_words_ranked(words, sentence, top_k):
    """The masked LM's `top_k` whole words at the first `[MASK]` of
    `sentence`, best first."""
    ranked = fill_mask(words.model, words.tokenizer, [sentence], top_k=174)[0][0]
    return [t for t, _ in ranked if not re.fullmatch(r"##.+|\[[A-Z]+\]", t)][:top_k]


def test_tinyberts_replacement_a_whole_word_by_the_masked_lm_a_split_one_by_neighbours(
    masked_lm,
):
    # `paris` is one piece of the vocabulary, `californias` three.
    import keras

    masked_lm_words = MaskedLmWords(masked_lm, top_k=3, batch_size=2)
    assert masked_lm_words.single_pieces(["paris", "californias"]) == {"paris"}
    teacher = keras.saving.load_model(masked_lm, compile=False).backbone
    neighbour_words = NeighbourWords(teacher, masked_lm_words.tokenizer, top_k=3)
    words = MaskedLmAndNeighbourWords(masked_lm_words, neighbour_words)
    rows = [
        {
            "text_a": f"john {TO_REPLACE}paris in {TO_REPLACE}californias city",
            "text_b": None,
            "label": None,
        }
    ]
    filled = words.fill([dict(r) for r in rows], [np.random.default_rng(0)])[0]["text_a"].split()
    assert filled[3] in neighbour_words.neighbours("californias")
    # The masked LM reads the split word's replacement in its sentence.
    assert filled[1] in whole_words_ranked(
        masked_lm_words, f"john [MASK] in {filled[3]} city", top_k=3
    )
    assert words.fingerprint.startswith(masked_lm_words.fingerprint)


def pair_whole_words(words, sentence, at, top_k, max_length=512):
    """The masked LM's `top_k` whole words at word `at` of `sentence` (a
    list of words) in TinyBERT's query, `[CLS] sentence, that word masked
    [SEP] sentence [SEP]`, the second sentence cut to `max_length` tokens
    (the first must fit with room), built here piece by piece and ranked
    over the whole vocabulary."""
    import tensorflow as tf

    tokenizer = words.tokenizer

    def pieces(text):
        return tokenizer.tokenize(tf.constant([text])).flat_values.numpy().tolist() if text else []

    before, after = " ".join(sentence[:at]), " ".join(sentence[at + 1 :])
    first = [tokenizer.cls_id, *pieces(before), tokenizer.mask_id, *pieces(after), tokenizer.sep_id]
    second = pieces(" ".join(sentence))[: max_length - len(first) - 1]
    ids = first + second + [tokenizer.sep_id]
    logits = words.model.predict_on_batch(
        {
            "token_ids": np.array([ids], "int32"),
            "segment_ids": np.array([[0] * len(first) + [1] * (len(ids) - len(first))], "int32"),
            "padding_mask": np.ones((1, len(ids)), "int32"),
            "mask_positions": np.array([[len(pieces(before)) + 1]], "int32"),
        }
    )["mlm"][0, 0]
    ranked = [words.vocabulary[i] for i in np.argsort(-np.asarray(logits), kind="stable")]
    return [t for t in ranked if not re.fullmatch(r"##.+|\[[A-Z]+\]", t)][:top_k]


def test_in_the_sentence_context_a_word_is_drawn_from_its_sentence_once_for_all_copies(
    masked_lm,
):
    # TinyBERT's released code: a word's candidates are the masked LM's at
    # its place in the sentence as it came, the sentence whole beside it;
    # asked once a sentence and word, whatever else its copies replace.
    words = MaskedLmWords(masked_lm, top_k=3, batch_size=2, context="sentence")
    sentence = "the movie was played in paris".split()
    marked = [{1}, {1, 5}, {2, 5}, set(), {0, 1, 2, 3, 4, 5}]
    rows = [
        {"text_a": " ".join(TO_REPLACE + w if i in at else w for i, w in enumerate(sentence))}
        | {"text_b": None, "label": None}
        for at in marked
    ] + [{"words": [TO_REPLACE + "smith", "won"], "labels": None}]
    asked = []
    ranked_pieces = words.ranked_pieces
    words.ranked_pieces = lambda first, second: asked.extend(first) or ranked_pieces(first, second)
    filled = words.fill([dict(r) for r in rows], [np.random.default_rng(i) for i in range(6)])
    assert len(asked) == 6 + 1  # Each of the sentence's six words once, and `smith`.
    for index, at in enumerate(marked):
        rng = np.random.default_rng(index)
        expected = list(sentence)
        for i in sorted(at):
            candidates = pair_whole_words(words, sentence, i, top_k=3)
            expected[i] = candidates[rng.integers(len(candidates))]
        assert filled[index]["text_a"].split() == expected
    smith = pair_whole_words(words, ["smith", "won"], 0, top_k=3)
    assert filled[5]["words"][0] in smith and filled[5]["words"][1] == "won"


def test_tinyberts_masked_lm_reads_a_split_word_as_it_came_in_the_sentence_context(masked_lm):
    import keras

    masked_lm_words = MaskedLmWords(masked_lm, top_k=3, batch_size=2, context="sentence")
    teacher = keras.saving.load_model(masked_lm, compile=False).backbone
    neighbour_words = NeighbourWords(teacher, masked_lm_words.tokenizer, top_k=3)
    words = MaskedLmAndNeighbourWords(masked_lm_words, neighbour_words)
    text = f"john {TO_REPLACE}paris in {TO_REPLACE}californias city"
    rows = [{"text_a": text, "text_b": None, "label": None}]
    filled = words.fill(rows, [np.random.default_rng(0)])[0]["text_a"].split()
    assert filled[3] in neighbour_words.neighbours("californias")
    sentence = "john paris in californias city".split()
    assert filled[1] in pair_whole_words(masked_lm_words, sentence, 1, top_k=3)


@pytest.mark.parametrize("context", ["copy", "sentence"])
def test_words_past_the_masked_lms_length_keep_their_word_with_one_warning(
    context, tmp_path, caplog
):
    # A masked LM of 16 positions; one piece a word. The 30-word row's query
    # is cut after 14 words: its word 1 is drawn from the cut query's
    # ranking (in the sentence context with no room for the second
    # segment), its words 20 and 25 keep their word. The 9-word row fits;
    # its second segment (sentence context) is cut to the room left.
    from keras_bert.models import BertPretrainer
    from tests.finetuning.conftest import tiny_backbone

    BertPretrainer(tiny_backbone(max_sequence_length=16)).save(tmp_path / "pretrainer.keras")
    words = MaskedLmWords(str(tmp_path / "pretrainer.keras"), 3, batch_size=2, context=context)
    vocabulary = "the movie was played in paris by smith who won the team visit".split()
    assert words.single_pieces(vocabulary) == set(vocabulary)
    long, nine = [vocabulary[i % 13] for i in range(30)], vocabulary[:9]
    rows = [
        {"words": [TO_REPLACE + w if i in (1, 20, 25) else w for i, w in enumerate(long)]},
        {"words": [TO_REPLACE + w if i == 1 else w for i, w in enumerate(nine)]},
    ]
    filled = words.fill(rows, [np.random.default_rng(i) for i in range(2)])
    candidates = [
        whole_words_ranked(words, " ".join(["the", "[MASK]", *long[2:14]]), top_k=3),
        whole_words_ranked(words, " ".join(["the", "[MASK]", *nine[2:]]), top_k=3)
        if context == "copy"
        else pair_whole_words(words, nine, 1, top_k=3, max_length=16),
    ]
    for index, sentence in enumerate([long, nine]):
        expected = list(sentence)
        drawn = np.random.default_rng(index).integers(len(candidates[index]))
        expected[1] = candidates[index][drawn]
        assert filled[index]["words"] == expected
    assert caplog.text.count("longer than its 16 pieces") == 1


def test_tinyberts_words_are_content_words_at_the_replace_rate():
    transfer = TransferConfig(
        mask_probability=0, replace_probability=0.4, ngram_probability=0, replace_words="content"
    )
    sentence = "the film 's not a 2002 stomach-turning , very funny ride".split()
    content = {"film", "funny", "ride"}
    marked = [
        w[len(TO_REPLACE) :]
        for seed in range(300)
        for w in augmented_words(sentence, np.random.default_rng(seed), transfer)
        if w.startswith(TO_REPLACE)
    ]
    assert set(marked) == content
    assert abs(len(marked) / (300 * len(content)) - 0.4) < 0.05


def test_augmentation_marks_words_at_the_replace_rate():
    transfer = TransferConfig(mask_probability=0.2, replace_probability=0.3, ngram_probability=0)
    marked = [
        w
        for seed in range(300)
        for w in augmented_words(["w"] * 10, np.random.default_rng(seed), transfer)
    ]
    assert abs(marked.count(TO_REPLACE + "w") / len(marked) - 0.3) < 0.03
    assert abs(marked.count("[MASK]") / len(marked) - 0.2) < 0.03


def test_a_file_that_is_no_pretrainer_is_one_line(tmp_path):
    with pytest.raises(FinetuneError, match="no such file"):
        MaskedLmWords(str(tmp_path / "missing.keras"), 5, 8)
    from keras_bert.models import BertBackbone

    path = tmp_path / "backbone.keras"
    BertBackbone(
        vocabulary_size=174, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32
    ).save(path)
    with pytest.raises(FinetuneError, match="holds a BertBackbone, not a BertPretrainer"):
        MaskedLmWords(str(path), 5, 8)


def test_replacing_needs_a_masked_lm_and_room_beside_masking():
    replace = "distillation.transfer.replace_probability=0.1"
    with pytest.raises(ConfigError, match="needs distillation.transfer.masked_lm"):
        load_distill_config("sst2", overrides=[replace])
    mixed = "distillation.transfer.replace_by=masked_lm_and_neighbours"
    with pytest.raises(ConfigError, match="masked_lm_and_neighbours with replace_probability"):
        load_distill_config("sst2", overrides=[replace, mixed])
    neighbours = "distillation.transfer.replace_by=teacher_neighbours"
    assert load_distill_config("sst2", overrides=[replace, neighbours]).distillation.transfer
    for key in ("replace_words", "masked_lm_context"):
        with pytest.raises(ConfigError, match=f"transfer.{key}"):
            load_distill_config("sst2", overrides=[f"distillation.transfer.{key}=every"])
    sentence = "distillation.transfer.masked_lm_context=sentence"
    with pytest.raises(ConfigError, match="needs distillation.transfer.mask_probability=0"):
        load_distill_config("sst2", overrides=[sentence])  # Masking's default: 0.1.
    unmasked = "distillation.transfer.mask_probability=0"
    assert load_distill_config("sst2", overrides=[sentence, unmasked]).distillation.transfer
    with pytest.raises(ConfigError, match="must be <= 1"):
        load_distill_config(
            "sst2",
            overrides=[
                "distillation.transfer.mask_probability=0.7",
                "distillation.transfer.replace_probability=0.5",
                "distillation.transfer.masked_lm=x.keras",
            ],
        )
