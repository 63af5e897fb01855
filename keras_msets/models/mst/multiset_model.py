"""The machinery shared by the multi-set models of Selby et al. (UAI 2022).

`MultisetModel` is the base of `MultiSetTransformer`, its relation-network
variant and the baselines of Sec. 5: it reads the inputs (a list of sets
and their masks), projects every set to the latent size, pools the encoded
sets and decodes their concatenation (eq. 12). A subclass only chooses the
encoder. The base class is not exported.
"""

import keras
from keras import ops

from keras_msets.layers._multiset_block import check_set_list
from keras_msets.layers._multiset_block import describe
from keras_msets.layers._multiset_block import instance_suffixes
from keras_msets.layers.masked_set_pooling import MaskedSetPooling
from keras_msets.layers.pooling_by_multihead_attention import (
    PoolingByMultiheadAttention,
)
from keras_msets.models._trainer_guards import TrainerGuards
from keras_msets.utils.validation import check_bool
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_int_list
from keras_msets.utils.validation import check_positive_float
from keras_msets.utils.validation import check_positive_int
from keras_msets.utils.validation import check_rate

POOLINGS = ("pma", "mean", "max", "sum")
INPUT_KEYS = ("sets", "masks")

# App. B of Selby et al.: latent size 128 (hidden 256) for the counting
# tasks; 16 channels (hidden 32) per input dimension for KL / MI.
DEFAULT_LATENT_DIM = 128
DEFAULT_CHANNELS = 16


def _mask_fits(mask_shape, set_shape):
    """Whether a mask shape is `[batch, n_k]` for a set `[batch, n_k, ...]`."""
    if len(mask_shape) != 2:
        return False
    return all(
        a is None or b is None or int(a) == int(b)
        for a, b in zip(mask_shape, set_shape[:2], strict=True)
    )


def _check_input_dict(inputs):
    unknown = sorted(str(k) for k in inputs if k not in INPUT_KEYS)
    if unknown or "sets" not in inputs:
        raise ValueError(
            "A dict input must have the key 'sets' (a list of sets) and "
            "optionally 'masks' (a list of boolean masks), nothing else. "
            f"Received keys: {sorted(str(k) for k in inputs)}"
        )


class MultisetModel(TrainerGuards, keras.Model):
    """Base of the multi-set models: projection, encoder, pooling, decoder.

    The model of eq. 12 of Selby et al.: every set `X_k` is projected to
    the latent size, an encoder (chosen by the subclass) maps the list of
    projected sets to encoded sets, each encoded set is pooled (PMA, mean,
    max or sum over its valid elements) and the concatenation of the pooled
    vectors goes through a feedforward decoder `rho`.

    Inputs are a list of `K >= 2` padded sets `[batch, n_k, dim]` plus
    boolean masks `[batch, n_k]` (True for real elements), given in one of
    three ways:

    - `model([x, y])`: no padding;
    - `model([x, y], masks=[x_mask, y_mask])` (an entry may be None);
    - `model({"sets": [x, y], "masks": [x_mask, y_mask]})`: one structure
      holding everything, the form to use with `model.fit`, `tf.data` and
      saved models (`masks` may be left out).

    Keras masks attached to the sets (`mask=`, filled automatically) are
    used for the sets that have no explicit mask. Padded elements are set
    to zero on entry and every layer ignores them, so they never change the
    output; an all-masked (empty) set gives a finite output.

    Sub-layers are created in `build()`, once the number of sets and the
    input size are known, with stable names (they key the weight files):
    `input_projection` (or `input_projection_{k}`) in
    `self.input_projections`, the encoder's `block_{i}` (or
    `set_{k}_block_{i}`) in `self.blocks`, `pooling` (or `pooling_{k}`) in
    `self.poolings`, `decoder_hidden_{i}` in `self.decoder_hidden` and
    `decoder_output`. The build config records the sets' feature shapes
    only (`{"set_shapes": [[None, None, dim], ...]}`), so a saved model
    accepts any batch and set sizes.
    """

    def __init__(
        self,
        latent_dim=None,
        num_heads=4,
        key_dim=None,
        ff_dim=None,
        dropout=0.0,
        layer_norm_epsilon=1e-5,
        pooling="pma",
        decoder_units=None,
        decoder_activation="relu",
        output_dim=1,
        output_activation=None,
        share_input_projection=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.latent_dim = check_positive_int(
            "latent_dim", latent_dim, allow_none=True
        )
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.key_dim = check_positive_int("key_dim", key_dim, allow_none=True)
        self.ff_dim = check_positive_int("ff_dim", ff_dim, allow_none=True)
        self.dropout = check_rate("dropout", dropout)
        self.layer_norm_epsilon = check_positive_float(
            "layer_norm_epsilon", layer_norm_epsilon
        )
        self.pooling = check_choice("pooling", pooling, POOLINGS)
        self.decoder_units = check_int_list(
            "decoder_units", decoder_units, allow_none=True
        )
        self.decoder_activation = keras.activations.get(decoder_activation)
        self.output_dim = check_positive_int("output_dim", output_dim)
        self.output_activation = keras.activations.get(output_activation)
        self.share_input_projection = check_bool(
            "share_input_projection", share_input_projection
        )
        self.num_sets = None
        self._set_shapes = None
        self.supports_masking = True

    # Hooks -----------------------------------------------------------------

    def _default_latent_dim(self):
        return DEFAULT_LATENT_DIM

    def _check_set_shapes(self, shapes):
        """Validates the set shapes (already a list of >= 2 tuples)."""
        for k, shape in enumerate(shapes):
            if len(shape) != 3 or shape[-1] is None:
                raise ValueError(
                    f"Set {k} must have shape [batch, set_size, dim] with a "
                    f"known `dim`. Received: shape={shape}"
                )
        if self.share_input_projection:
            dims = {s[-1] for s in shapes}
            if len(dims) > 1:
                raise ValueError(
                    "With `share_input_projection=True` all sets must have "
                    "the same feature size (the last axis); pass "
                    "`share_input_projection=False` for sets of different "
                    f"sizes. Received: set shapes={shapes}"
                )

    def _projection_input_shape(self, shape):
        return shape

    def _latent_shape(self, shape):
        return tuple(shape[:-1]) + (self.resolved_latent_dim,)

    def _lift(self, k, x):
        """What the input projection of set `k` reads."""
        return x

    def _build_encoder(self, latent_shapes):
        raise NotImplementedError

    def _encode(self, hidden, masks, training):
        """Encodes the projected sets; returns `(sets, masks)` to pool."""
        raise NotImplementedError

    def _num_pooled_sets(self):
        return self.num_sets

    def _share_pooling(self):
        return False

    def _model_arguments(self):
        raise NotImplementedError

    # Structure ---------------------------------------------------------------

    @property
    def resolved_latent_dim(self):
        """`latent_dim`, or its default when `latent_dim` is None."""
        if self.latent_dim is not None:
            return self.latent_dim
        return self._default_latent_dim()

    def _resolved_ff_dim(self):
        return self.ff_dim or 2 * self.resolved_latent_dim

    def _check_heads(self, condition=""):
        """Raises unless `num_heads` divides the latent width (key_dim=None).

        `condition` (e.g. "`pooling='pma'` and ") says when the heads are
        used, for the message.
        """
        if self.key_dim is None and self.resolved_latent_dim % self.num_heads:
            raise ValueError(
                f"With {condition}`key_dim=None`, `latent_dim` must be "
                "divisible by `num_heads`. Received: latent_dim="
                f"{self.resolved_latent_dim}, num_heads={self.num_heads}"
            )

    def _set_shapes_from(self, input_shape):
        """The list of set shapes held by an input shape structure."""
        if isinstance(input_shape, dict):
            _check_input_dict(input_shape)
            input_shape = input_shape["sets"]
        shapes = check_set_list(
            input_shape,
            f"Model '{self.name}'",
            self.num_sets,
            what="The inputs",
            other_forms=" (or a dict {'sets': [...], 'masks': [...]})",
        )
        self._check_set_shapes(shapes)
        return shapes

    def build(self, input_shape):
        shapes = self._set_shapes_from(input_shape)
        self.num_sets = len(shapes)
        # Batch and set sizes are free: only the feature axes are kept.
        self._set_shapes = [[None, None] + list(s[2:]) for s in shapes]
        latent_dim = self.resolved_latent_dim
        suffixes = instance_suffixes(self.num_sets, self.share_input_projection)
        self.input_projections = [
            keras.layers.Dense(
                latent_dim,
                dtype=self.dtype_policy,
                name=f"input_projection{suffix}",
            )
            for suffix in suffixes
        ]
        for k, shape in enumerate(shapes):
            projection = self._projection(k)
            if not projection.built:
                projection.build(self._projection_input_shape(shape))
        latent_shapes = [self._latent_shape(s) for s in shapes]
        pooled_shapes = self._build_encoder(latent_shapes)
        self._build_pooling(pooled_shapes)
        self._build_decoder(
            (shapes[0][0], self._num_pooled_sets() * latent_dim)
        )
        self.built = True

    def _projection(self, k):
        return self.input_projections[0 if self.share_input_projection else k]

    def _build_pooling(self, pooled_shapes):
        self.poolings = []
        if self.pooling != "pma":
            self.poolings = [
                MaskedSetPooling(
                    self.pooling, dtype=self.dtype_policy, name="pooling"
                )
            ]
            return
        suffixes = instance_suffixes(
            len(pooled_shapes),
            self._share_pooling() or len(pooled_shapes) == 1,
        )
        for k, suffix in enumerate(suffixes):
            pma = PoolingByMultiheadAttention(
                num_heads=self.num_heads,
                key_dim=self.key_dim,
                ff_dim=self.ff_dim,
                dropout=self.dropout,
                layer_norm_epsilon=self.layer_norm_epsilon,
                dtype=self.dtype_policy,
                name=f"pooling{suffix}",
            )
            pma.build(pooled_shapes[k])
            self.poolings.append(pma)

    def _pooling_layer(self, k):
        return self.poolings[0 if len(self.poolings) == 1 else k]

    def _build_decoder(self, input_shape):
        units = self.decoder_units
        if units is None:
            # App. B: "1-layer feedforward decoders" of the hidden size.
            units = [self._resolved_ff_dim()]
        self.decoder_hidden = []
        shape = tuple(input_shape)
        for i, width in enumerate(units):
            dense = keras.layers.Dense(
                width,
                activation=self.decoder_activation,
                dtype=self.dtype_policy,
                name=f"decoder_hidden_{i}",
            )
            dense.build(shape)
            self.decoder_hidden.append(dense)
            shape = shape[:-1] + (width,)
        self.decoder_output = keras.layers.Dense(
            self.output_dim,
            activation=self.output_activation,
            dtype=self.dtype_policy,
            name="decoder_output",
        )
        self.decoder_output.build(shape)

    def get_build_config(self):
        if self._set_shapes is None:
            return None
        return {"set_shapes": [list(s) for s in self._set_shapes]}

    def build_from_config(self, config):
        if config and "set_shapes" in config:
            self.build([tuple(s) for s in config["set_shapes"]])
        elif config:
            super().build_from_config(config)

    # Call ------------------------------------------------------------------

    def _unpack(self, inputs, masks, mask):
        """Returns `(sets, masks)`: lists of K tensors and K masks/None."""
        keras_mask = mask
        if isinstance(inputs, dict):
            _check_input_dict(inputs)
            given = inputs.get("masks")
            if given is not None and masks is not None:
                raise ValueError(
                    "Masks were given twice: in the inputs dict and as "
                    "`masks=`. Give them once."
                )
            masks = given if masks is None else masks
            inputs = inputs["sets"]
            if isinstance(keras_mask, dict):
                keras_mask = keras_mask.get("sets")
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(
                "The inputs must be a list of at least 2 sets [batch, n_k, "
                "dim] (or a dict {'sets': [...], 'masks': [...]}). "
                f"Received: {describe(inputs)}"
            )
        sets = list(inputs)
        num_sets = len(sets)
        if masks is None:
            masks = [None] * num_sets
        if not isinstance(masks, (list, tuple)) or len(masks) != num_sets:
            raise ValueError(
                f"`masks` must be a list with one boolean mask [batch, n_k] "
                f"(or None) per set ({num_sets} sets). Received: "
                f"masks={describe(masks)}"
            )
        if not isinstance(keras_mask, (list, tuple)) or len(keras_mask) != (
            num_sets
        ):
            keras_mask = [None] * num_sets
        resolved = []
        for k, (x, m) in enumerate(zip(sets, masks, strict=True)):
            m = keras_mask[k] if m is None else m
            if m is not None:
                if not _mask_fits(m.shape, x.shape):
                    raise ValueError(
                        f"The mask of set {k} must have shape [batch, n_k] = "
                        f"{tuple(x.shape[:2])}. Received: shape "
                        f"{tuple(m.shape)}"
                    )
                m = ops.cast(m, "bool")
            resolved.append(m)
        return sets, resolved

    def call(self, inputs, masks=None, mask=None, training=None):
        sets, masks = self._unpack(inputs, masks, mask)
        self._set_shapes_from([tuple(x.shape) for x in sets])
        hidden = []
        for k, (x, m) in enumerate(zip(sets, masks, strict=True)):
            if m is not None:
                # Padded values (even inf or NaN) never reach any arithmetic.
                x = ops.where(ops.expand_dims(m, -1), x, ops.zeros_like(x))
            hidden.append(self._projection(k)(self._lift(k, x)))
        encoded, encoded_masks = self._encode(hidden, masks, training)
        pooled = []
        for k, (z, m) in enumerate(zip(encoded, encoded_masks, strict=True)):
            layer = self._pooling_layer(k)
            if self.pooling == "pma":
                z = layer(z, mask=m, training=training)[:, 0, :]
            else:
                z = layer(z, mask=m)
            pooled.append(z)
        h = pooled[0] if len(pooled) == 1 else ops.concatenate(pooled, -1)
        for dense in self.decoder_hidden:
            h = dense(h)
        return self._scale_output(self.decoder_output(h), sets)

    def _scale_output(self, outputs, sets):
        """Hook on the decoder's output; the identity here."""
        return outputs

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        shapes = self._set_shapes_from(input_shape)
        return (shapes[0][0], self.output_dim)

    # Config ----------------------------------------------------------------

    def get_config(self):
        config = {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
        }
        config.update(
            {
                "latent_dim": self.latent_dim,
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "ff_dim": self.ff_dim,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "pooling": self.pooling,
                "decoder_units": self.decoder_units,
                "decoder_activation": keras.activations.serialize(
                    self.decoder_activation
                ),
                "output_dim": self.output_dim,
                "output_activation": keras.activations.serialize(
                    self.output_activation
                ),
            }
        )
        config.update(self._model_arguments())
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)
