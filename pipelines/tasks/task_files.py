"""Task data files read through TensorFlow's file system layer, so that a
`data_dir` may be local, on `gs://` or on any file system TensorFlow knows
(their text through `pipelines.text_files`)."""

import tensorflow as tf


def is_file(path):
    return tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path)
