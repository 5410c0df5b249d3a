"""BERT's objective: masked LM + next sentence (paper §3.1), the default.

Keras is imported inside the functions that use it: the recipe reads
`MaskedLmObjective`'s members before the backend is chosen
(`objective.PretrainingObjective`).

Shape legend: B batch, T sequence length, P masked positions, V vocabulary.
"""


def masked_lm_losses():
    """Losses for `BertPretrainer`'s `{"mlm", "nsp"}` outputs.

    The masked-LM loss is the cross-entropy averaged over the real
    predictions: `sum(w * ce) / sum(w)` with the mask weights `w` (B, P),
    so padded prediction slots neither count nor dilute the mean
    (`reduction="mean_with_sample_weight"`; the original `run_pretraining.py`
    divides by `sum(label_weights) + 1e-5` in the same way). The next
    sentence loss is the batch mean. Keras adds the two: the paper's total
    loss is "the sum of the mean masked LM likelihood and the mean next
    sentence prediction likelihood". Both take logits, in float32.
    """
    import keras

    return {
        "mlm": keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight", name="mlm"
        ),
        "nsp": keras.losses.SparseCategoricalCrossentropy(from_logits=True, name="nsp"),
    }


def masked_lm_metrics(next_sentence_prediction=True):
    """`weighted_metrics` logged as `mlm_accuracy` and `nsp_accuracy`
    (the latter only with the next-sentence task).

    Passed as `weighted_metrics` so the masked-LM accuracy counts only real
    predictions (weight 1); the next-sentence weights are all 1.
    """
    import keras

    metrics = {"mlm": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
    if next_sentence_prediction:
        metrics["nsp"] = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
    return metrics


def to_keras_batch(features, labels, sample_weights, sampled_softmax=False):
    """Adapts a `pipelines.pretraining_dataset` element for `Model.fit`.

    Keras wants one sample weight per output when any is given, so the
    next-sentence weights are ones (B,); the boolean padding mask becomes
    the backbone's int32 input. With `sampled_softmax` (training batches of
    a `BertPretrainer` with `sampled_softmax_candidates`), the masked-LM
    targets and weights become inputs, from which the model builds its
    candidates, and the label of every slot is 0: the column of its own
    target among them.
    """
    import tensorflow as tf

    features = dict(features)
    features["padding_mask"] = tf.cast(features["padding_mask"], tf.int32)
    labels = dict(labels)
    sample_weights = dict(sample_weights)
    sample_weights.setdefault("nsp", tf.ones_like(labels["nsp"], dtype=tf.float32))
    if sampled_softmax:
        features["masked_lm_ids"] = labels["mlm"]
        features["masked_lm_weights"] = sample_weights["mlm"]
        labels["mlm"] = tf.zeros_like(labels["mlm"])
    return features, labels, sample_weights


def masked_lm_compile_args(next_sentence_prediction=True):
    """`model.compile`'s loss, loss weights and metrics for a
    `BertPretrainer` (see `compile_pretrainer`)."""
    return {
        "loss": masked_lm_losses(),
        "loss_weights": {"mlm": 1.0, "nsp": 1.0 if next_sentence_prediction else 0.0},
        "weighted_metrics": masked_lm_metrics(next_sentence_prediction),
    }


def compile_pretrainer(
    model, optimizer, jit_compile="auto", steps_per_execution=1, next_sentence_prediction=True
):
    """Compiles a `BertPretrainer` with the BERT losses and metrics.

    With `next_sentence_prediction=False` (the pipeline's
    `next_sentence_rate=0`: every B is the true continuation) the
    next-sentence loss has weight 0. Trained on labels that are all
    "IsNext", it would only teach the pooler and its head a constant answer,
    and drive the pooler's tanh into saturation: a fine-tuned classifier,
    which reads the pooled `[CLS]` vector, then starts from a pooler that
    passes no gradient and scores below a random init
    (the transfer runs on a GPU, `git show 915d7bc:BENCHMARKS.md`). The pooler stays as
    initialised (up to weight decay).

    Under a `mixed_float16` policy Keras wraps `optimizer` in a
    `LossScaleOptimizer` (dynamic loss scaling); the heads' logits are
    float32 whatever the policy, so the losses and their softmax are too.
    """
    model.compile(
        optimizer=optimizer,
        **masked_lm_compile_args(next_sentence_prediction),
        jit_compile=jit_compile,
        steps_per_execution=steps_per_execution,
    )
    return model


class MaskedLmObjective:
    """`objective: masked_lm`: a `BertPretrainer` on the paper's losses
    (`masked_lm_losses`), the masked LM on a sampled softmax in training
    where `sampled_softmax_candidates` says so, the next-sentence loss
    weighted 0 without the next-sentence task (`compile_pretrainer`).
    Reads shared keys only: no section of its own."""

    config_ranges = {}
    export_stems = ("backbone", "pretrainer")
    logged = ("loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy")
    fill_mask_note = ""

    @classmethod
    def config_section(cls):
        return None

    @classmethod
    def check_config(cls, config):
        return []  # Every shared key is its own.

    def __init__(self, config):
        self.sampled_softmax_candidates = config.sampled_softmax_candidates
        self.next_sentence_prediction = config.data.next_sentence_rate > 0

    def build_model(self, backbone):
        from keras_bert.models import BertPretrainer

        return BertPretrainer(
            backbone,
            sampled_softmax_candidates=self.sampled_softmax_candidates,
            name="bert_pretrainer",
        )

    def compile_args(self):
        return masked_lm_compile_args(self.next_sentence_prediction)

    def to_keras_batch(self, features, labels, sample_weights, training=True):
        sampled = training and self.sampled_softmax_candidates is not None
        return to_keras_batch(features, labels, sample_weights, sampled_softmax=sampled)

    def output_bias(self, model):
        return model.masked_lm_output_bias

    def fill_mask_inputs(self, inputs):
        return inputs

    def exports(self, model):
        return dict(zip(self.export_stems, [(model.backbone, True), (model, True)], strict=True))

    def report(self, metrics):
        return " ".join(
            f"{key}={metrics[key]:.4f}"
            for key in ("mlm_accuracy", "nsp_accuracy")
            if key in metrics
        )
