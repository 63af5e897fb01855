"""What the layers of this package share (private).

`arguments_config` writes a layer's constructor arguments into its config
from the attributes of the same names. `ChecksInputs` checks the features
and the mask of a one-input layer before Keras converts them to tensors.
"""

import keras

from keras_msets.ops.checks import check_features_argument
from keras_msets.ops.checks import check_mask_argument


def arguments_config(layer, names):
    """`{name: layer.<name>}` for the constructor arguments `names`.

    Arguments named `*initializer` are serialized with
    `keras.initializers.serialize` and those named `*activation` with
    `keras.activations.serialize` (a string, such as `"sinusoidal"`, is
    kept as it is); every other value is returned unchanged.
    """
    config = {}
    for name in names:
        value = getattr(layer, name)
        if not isinstance(value, str):
            if name.endswith("initializer"):
                value = keras.initializers.serialize(value)
            elif name.endswith("activation"):
                value = keras.activations.serialize(value)
        config[name] = value
    return config


class ChecksInputs:
    """Mixin: checks `inputs` and the `mask` argument before the call.

    Before Keras converts the arguments to tensors: a string mask or
    string features would otherwise fail there with a backend error. Runs
    on symbolic inputs too. List it before the Keras base class.
    """

    def __call__(self, inputs, *args, **kwargs):
        check_features_argument("inputs", inputs)
        check_mask_argument("mask", kwargs.get("mask"), inputs)
        return super().__call__(inputs, *args, **kwargs)
