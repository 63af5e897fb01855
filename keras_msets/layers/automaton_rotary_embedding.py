"""Rotary position embeddings as a unary diagonal complex automaton."""

import keras
import numpy as np
from keras import ops

from keras_msets.ops.checks import check_integer_dtype
from keras_msets.ops.checks import concrete_value
from keras_msets.ops.phase import position_phase
from keras_msets.utils.validation import check_bool
from keras_msets.utils.validation import check_float
from keras_msets.utils.validation import check_int


@keras.saving.register_keras_serializable(package="keras_msets")
class AutomatonRotaryEmbedding(keras.layers.Layer):
    """Rotary position embeddings (RoPE) as forward weights of an automaton.

    DeBenedetto & Chiang (2020, Sec. 4) read position encodings as the
    forward weights of a unary automaton: one symbol, a diagonal complex
    transition `mu`, so that position `p` has the weight `mu ** p`.
    Rotary embeddings (Su et al., RoFormer) multiply the queries and keys
    by exactly such weights: feature `j` and feature `j + d / 2` form the
    complex number `z_j = x_j + i x_{j + d/2}` (KerasHub's "rotate half"
    pairing), and position `p` turns it into `z_j * mu_j ** p` with
    `mu_j = exp(i omega_j)`, `omega_j = max_wavelength ** (-2 j / d) /
    scaling_factor`.

    With the defaults (nothing learned) the layer computes what
    `keras_hub.layers.RotaryEmbedding(max_wavelength, scaling_factor)`
    computes with its default `rope_type="linear"`; the outputs agree to
    float32 rounding of the angle `p * omega_j` (tested within 1e-5 for
    positions below 256). The angles here are reduced modulo 2 pi exactly
    (`keras_msets.ops.position_phase`) where KerasHub rounds the float32
    product, so at long positions this layer is the more accurate of the
    two (KerasHub's angle is off by up to 4e-3 rad at position 10**5).

    `learn_angles=True` makes the frequencies `omega_j` trainable weights
    (initialised as above): the automaton's angles are learned, as in
    DeBenedetto & Chiang's learned diagonal encodings. `learn_modulus=True`
    also learns a modulus `|mu_j| = exp(log_modulus_j)`, clamped to
    `[exp(-max_log_decay), 1]`: a modulus above 1 would grow like
    `|mu| ** p` and overflow at long positions, so the clamp keeps every
    weight at most 1 in size (a decay with distance from the start, which
    RoPE itself does not have).

    Args:
        max_wavelength: positive float, the longest wavelength of the
            fixed frequencies (KerasHub's and RoFormer's 10000).
        scaling_factor: positive float dividing every frequency (KerasHub's
            linear position scaling).
        learn_angles: bool, whether the frequencies are trainable.
        learn_modulus: bool, whether a modulus per frequency is learned
            too (requires `learn_angles=True`).
        max_log_decay: positive float, the lower clamp of the learned
            log-modulus is `-max_log_decay` per position.
        sequence_axis: int, the axis of positions in the input.
        feature_axis: int, the axis of features (an even size `d`).
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: real tensor with a sequence and a feature axis, e.g.
            queries `[batch, length, heads, d]`.
        start_index: int or integer scalar tensor, the position of the
            first element (for cached decoding).
        positions: optional integer tensor `[length]` or `[batch, length]`
            of non-negative positions; replaces `start_index`.

    Returns:
        A tensor of the input's shape and dtype.

    Example:

    >>> layer = AutomatonRotaryEmbedding()
    >>> queries = np.ones((2, 16, 4, 8), "float32")  # batch, length, heads
    >>> layer(queries).shape
    (2, 16, 4, 8)
    """

    def __init__(
        self,
        max_wavelength=10000.0,
        scaling_factor=1.0,
        learn_angles=False,
        learn_modulus=False,
        max_log_decay=0.1,
        sequence_axis=1,
        feature_axis=-1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.max_wavelength = check_float(
            "max_wavelength", max_wavelength, low=1.0
        )
        self.scaling_factor = check_float(
            "scaling_factor", scaling_factor, low=0.0, low_inclusive=False
        )
        self.learn_angles = check_bool("learn_angles", learn_angles)
        self.learn_modulus = check_bool("learn_modulus", learn_modulus)
        if self.learn_modulus and not self.learn_angles:
            raise ValueError(
                "`learn_modulus=True` requires `learn_angles=True` (a fixed "
                "rotary embedding has modulus 1). Received: "
                f"learn_angles={learn_angles}, learn_modulus={learn_modulus}"
            )
        self.max_log_decay = check_float(
            "max_log_decay", max_log_decay, low=0.0, low_inclusive=False
        )
        self.sequence_axis = check_int("sequence_axis", sequence_axis)
        self.feature_axis = check_int("feature_axis", feature_axis)
        self.supports_masking = True

    def _axes(self, rank):
        axes = []
        for name, axis in (
            ("sequence_axis", self.sequence_axis),
            ("feature_axis", self.feature_axis),
        ):
            if not -rank <= axis < rank:
                raise ValueError(
                    f"`{name}` must be an axis of the input (rank {rank}). "
                    f"Received: {name}={axis}"
                )
            axes.append(axis % rank)
        if axes[0] == axes[1]:
            raise ValueError(
                "`sequence_axis` and `feature_axis` must differ. Received: "
                f"sequence_axis={self.sequence_axis}, "
                f"feature_axis={self.feature_axis}"
            )
        return axes

    def _half(self, input_shape):
        _, feature_axis = self._axes(len(input_shape))
        features = input_shape[feature_axis]
        if features is None or features % 2:
            raise ValueError(
                "The feature axis of `inputs` must have a known even size "
                "(pairs of features form the complex numbers). Received: "
                f"inputs.shape={tuple(input_shape)}"
            )
        return features // 2

    def fixed_frequencies(self, half):
        """numpy float64 `[half]`: KerasHub's inverse frequencies."""
        exponent = np.arange(0, 2 * half, 2) / (2 * half)
        return self.max_wavelength**-exponent / self.scaling_factor

    def build(self, input_shape):
        half = self._half(input_shape)
        if self.learn_angles:
            initial = self.fixed_frequencies(half)
            self.frequency = self.add_weight(
                name="frequency",
                shape=(half,),
                initializer=keras.initializers.Constant(initial),
                dtype="float32",
            )
        if self.learn_modulus:
            self.log_modulus = self.add_weight(
                name="log_modulus",
                shape=(half,),
                initializer="zeros",
                dtype="float32",
            )

    def _positions(self, length, start_index, positions):
        if positions is None:
            check_integer_dtype("start_index", start_index, "positions")
            start = ops.cast(start_index, "int32")
            return (ops.arange(length, dtype="int32") + start)[None]
        check_integer_dtype("positions", positions, "positions")
        values = concrete_value(positions)
        if values is not None and values.size and values.min() < 0:
            raise ValueError(
                "`positions` must be non-negative. Received: positions "
                f"with minimum {values.min()}"
            )
        positions = ops.cast(positions, "int32")
        if len(positions.shape) == 1:
            positions = positions[None]
        return positions

    def call(self, inputs, start_index=0, positions=None):
        rank = len(inputs.shape)
        sequence_axis, feature_axis = self._axes(rank)
        half = self._half(inputs.shape)
        x = ops.moveaxis(inputs, (sequence_axis, feature_axis), (1, -1))
        positions = self._positions(ops.shape(x)[1], start_index, positions)
        if self.learn_angles:
            frequency = self.frequency
        else:
            frequency = ops.convert_to_tensor(
                self.fixed_frequencies(half), "float32"
            )
        # [batch or 1, length, half], reduced modulo 2 pi exactly.
        angle = position_phase(frequency, positions[..., None])
        cos, sin = ops.cos(angle), ops.sin(angle)
        if self.learn_modulus:
            log_modulus = ops.clip(self.log_modulus, -self.max_log_decay, 0.0)
            scale = ops.exp(
                ops.cast(positions[..., None], "float32") * log_modulus
            )
            cos, sin = cos * scale, sin * scale
        for _ in range(rank - 3):  # axes between length and features
            cos, sin = cos[:, :, None], sin[:, :, None]
        cos, sin = ops.cast(cos, x.dtype), ops.cast(sin, x.dtype)
        real, imag = x[..., :half], x[..., half:]
        out = ops.concatenate(
            [real * cos - imag * sin, imag * cos + real * sin], axis=-1
        )
        return ops.moveaxis(out, (1, -1), (sequence_axis, feature_axis))

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_wavelength": self.max_wavelength,
                "scaling_factor": self.scaling_factor,
                "learn_angles": self.learn_angles,
                "learn_modulus": self.learn_modulus,
                "max_log_decay": self.max_log_decay,
                "sequence_axis": self.sequence_axis,
                "feature_axis": self.feature_axis,
            }
        )
        return config
