"""Shared serialization for models built on a `BertBackbone`."""

import keras


class BertTaskModel(keras.Model):
    """A functional model whose first constructor argument is a backbone.

    `get_config` stores the backbone serialized plus the subclass's own
    arguments (`task_config()`); `from_config` rebuilds the backbone first.
    Not registered: only its subclasses are ever saved.
    """

    def task_config(self):
        """The subclass's constructor arguments other than `backbone`."""
        return {}

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            **self.task_config(),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)
