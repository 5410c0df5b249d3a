"""Fine-tuning: task registry, official metrics, SQuAD post-processing and
the training loop behind `python -m keras_bert.finetune`."""
