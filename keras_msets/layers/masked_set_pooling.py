import keras

from keras_msets import ops as msets_ops
from keras_msets.layers._layer_base import ChecksInputs
from keras_msets.utils.validation import check_choice

_REDUCTIONS = {
    "sum": msets_ops.masked_sum,
    "mean": msets_ops.masked_mean,
    "max": msets_ops.masked_max,
    "product": msets_ops.masked_product,
}


@keras.saving.register_keras_serializable(package="keras_msets")
class MaskedSetPooling(ChecksInputs, keras.layers.Layer):
    """Pools a padded set over its set axis, honouring the mask.

    The permutation-invariant pooling of DeepSets (Zaheer et al., 2017): a
    sum (or mean, max, product) over the valid elements of each set. Padded
    elements never change the result. An empty set, all-masked or with
    `set_size` 0, gives the empty sum 0, mean 0, max 0 or the empty
    product 1.

    Args:
        reduction: one of `"sum"` (default, as in DeepSets), `"mean"`,
            `"max"`, `"product"`.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `[batch, set_size, ...features]`.
        mask: optional boolean `[batch, set_size]`; an upstream Keras mask
            (e.g. from `Embedding(mask_zero=True)`) is used automatically.

    Input shape:
        `[batch, set_size, ...features]`.

    Output shape:
        `[batch, ...features]`.

    Example:
    >>> x = np.ones((2, 5, 3), "float32")
    >>> mask = np.array([[1, 1, 0, 0, 0], [1, 1, 1, 1, 1]], bool)
    >>> keras_msets.layers.MaskedSetPooling()(x, mask=mask)[:, 0]
    [2., 5.]

    References:
        - Zaheer et al., "Deep Sets", NeurIPS 2017.
    """

    def __init__(self, reduction="sum", **kwargs):
        super().__init__(**kwargs)
        check_choice("reduction", reduction, _REDUCTIONS)
        self.reduction = reduction
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if len(inputs.shape) < 2:
            raise ValueError(
                "`inputs` must have rank >= 2: [batch, set_size, ...]. "
                f"Received: inputs.shape={tuple(inputs.shape)}"
            )
        return _REDUCTIONS[self.reduction](inputs, mask=mask, axis=1)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + tuple(input_shape[2:])

    def get_config(self):
        config = super().get_config()
        config.update({"reduction": self.reduction})
        return config
