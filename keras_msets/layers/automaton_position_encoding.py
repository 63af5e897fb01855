import math

import keras
from keras import ops

from keras_msets.utils.validation import check_bool
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_positive_float
from keras_msets.utils.validation import check_positive_int

MODES = (
    "diagonal_polar_fixed",
    "diagonal_polar_learned",
    "full_matrix_random",
    "full_matrix_learned",
    "per_position_random",
    "per_position_learned",
)
_DIAGONAL_MODES = MODES[:2]
_MATRIX_MODES = MODES[2:4]
_PER_POSITION_MODES = MODES[4:]
_LEARNED_MODES = MODES[1::2]
# Positions are int32, so no position has more than 31 bits.
_MAX_POSITION_BITS = 31


def _static_int(value):
    """`value` as a Python int if it is known now, else None.

    Python and numpy integers are known; so are eager tensors (TensorFlow
    eager, PyTorch). Symbolic tensors (a TensorFlow graph, a JAX trace)
    are not.
    """
    if isinstance(value, bool):
        raise ValueError(
            f"`start_index` must be an integer. Received: start_index={value}"
        )
    if isinstance(value, int):
        return value
    if value is None:
        return None
    try:
        return int(ops.convert_to_numpy(value))
    except Exception:
        return None


def _sinusoid_frequencies(num_pairs, max_wavelength, dtype):
    """`max_wavelength ** (-2 j / d)` for `j = 0 .. d/2 - 1`, `d = 2 * pairs`.

    Computed with the same float operations as KerasHub's
    `SinePositionEncoding`, so the fixed mode reproduces it bit for bit.
    """
    min_frequency = ops.cast(1.0 / max_wavelength, dtype)
    exponents = ops.cast(2 * ops.arange(num_pairs), dtype) / ops.cast(
        2 * num_pairs, dtype
    )
    return ops.power(min_frequency, exponents)


def _sinusoid_angle_initializer(max_wavelength):
    """Initializer of `theta_j = -max_wavelength ** (-2 (j - 1) / d)`."""

    def initializer(shape, dtype=None):
        return -_sinusoid_frequencies(shape[0], max_wavelength, dtype)

    return initializer


def _fixed_norm_initializer():
    """Random directions scaled to the sinusoids' norm `sqrt(d / 2)`.

    A vector initializes to one random direction; a matrix `[n, d]` to one
    per row.
    """

    def initializer(shape, dtype=None):
        values = keras.initializers.RandomNormal(stddev=1.0)(shape, dtype)
        norms = ops.sqrt(ops.sum(ops.square(values), axis=-1, keepdims=True))
        return values / norms * math.sqrt(shape[-1] / 2.0)

    return initializer


def _matrix_forward_weights(initial, transition, positions, num_bits=None):
    """Rows `initial @ transition ** positions[i]`, by binary lifting.

    `transition ** 2**k` is built by `k` squarings; row `i` is multiplied by
    it when bit `k` of `positions[i]` is set. With `num_bits` (a Python int,
    the bit length of the largest position) the loop is unrolled, which
    every backend can differentiate; with `num_bits=None` (a position known
    only at run time) it is a `keras.ops.while_loop` that stops when every
    position has run out of bits.
    """
    states = ops.expand_dims(ops.zeros_like(positions, initial.dtype), -1)
    states = states + ops.expand_dims(initial, 0)

    def step(states, power, remaining):
        bit = ops.expand_dims(ops.equal(ops.mod(remaining, 2), 1), -1)
        states = ops.where(bit, ops.matmul(states, power), states)
        return states, remaining // 2

    if num_bits is not None:
        power, remaining = transition, positions
        for k in range(num_bits):
            if k:
                power = ops.matmul(power, power)
            states, remaining = step(states, power, remaining)
        return states

    def body(states, power, remaining):
        states, remaining = step(states, power, remaining)
        return states, ops.matmul(power, power), remaining

    states, _, _ = ops.while_loop(
        lambda states, power, remaining: ops.any(remaining > 0),
        body,
        (states, transition, positions),
        maximum_iterations=_MAX_POSITION_BITS,
    )
    return states


@keras.saving.register_keras_serializable(package="keras_msets")
class AutomatonPositionEncoding(keras.layers.Layer):
    """Position encodings as the forward weights of a unary automaton.

    A unary automaton (one symbol, initial weights `lambda`, transition
    matrix `mu`) that has read `p` symbols has forward weights
    `lambda mu^p`; using them to encode position `p` generalises the
    Transformer's sinusoids (DeBenedetto & Chiang, Sec. 4.1). With `mu`
    complex diagonal with conjugate pairs, in real Jordan form (eq. 3),
    state pair `j` of position `p` is

        s_j r_j^p [cos(phi_j + p theta_j), sin(phi_j + p theta_j)],

    and `s_j = 1, phi_j = pi/2, r_j = 1, theta_j = -w_j` with
    `w_j = max_wavelength^(-2 (j - 1) / d)` gives `[sin(p w_j), cos(p w_j)]`:
    exactly `keras_hub.layers.SinePositionEncoding` (Vaswani et al., eq. 2
    of the paper, positions counted from 0). `mode` picks one of the six
    variants of the paper's Sec. 4.2:

    - `"diagonal_polar_fixed"`: the sinusoids above; no weights.
    - `"diagonal_polar_learned"`: the paper's "learned angles": `phi` and
      `theta` (`d/2` each) trainable and initialised to the sinusoids,
      `s = r = 1` fixed, so every position keeps the sinusoids' norm.
      With `learn_modulus=True`, `s` and `log r` are trained as well (our
      extension, not the paper's): `r^p` is computed as `exp(p log r)`,
      so `r` stays positive, and positions stay finite at any length
      while `log r <= 0` (a learned `log r > 0` makes the encoding grow
      as `r^p`, like the automaton it is).
    - `"full_matrix_random"`: a real automaton with a full `d x d`
      transition matrix (orthogonal initialisation) and initial weights in
      a random direction with the sinusoids' norm `sqrt(d/2)`; frozen
      (non-trainable weights).
    - `"full_matrix_learned"`: the same, trained.
    - `"per_position_random"` / `"per_position_learned"`: one vector per
      absolute position `0 .. max_length - 1`, each in a random direction
      with norm `sqrt(d/2)`; frozen or trained.

    The automaton modes encode any position, however long the input: the
    diagonal modes in closed form, the full-matrix modes with `O(log p)`
    matrix products (binary powers of `mu`). The per-position modes know
    only `max_length` positions.

    Args:
        mode: one of the six strings above.
        max_length: number of positions of the per-position modes (required
            there, ignored by the other modes).
        max_wavelength: the sinusoids' longest wavelength, used by the
            diagonal modes (default `10000`, as in KerasHub).
        learn_modulus: bool, `"diagonal_polar_learned"` only: also train
            the scales `s` and log-moduli `log r` (default `False`: they
            stay non-trainable at 1 and 0, as in the paper). Configs saved
            before this argument existed load with `True`, the behaviour
            they were saved with.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: the embeddings `[batch, length, hidden_dim]` the encodings
            will be added to; only their shape is used.
        start_index: int or int scalar tensor, the position of the first
            element (default 0), e.g. for cached decoding. A Keras mask on
            `inputs` is passed through unchanged. Per-position
            modes raise a `ValueError` when `start_index + length >
            max_length` and both are known when the layer is called; when
            they are only known at run time no Python error can be raised:
            TensorFlow then fails with its own `InvalidArgumentError` from
            the slice, and JAX (a traced `start_index`) clamps the slice to
            the last `length` positions. Under JAX, a traced `start_index`
            with a full-matrix mode cannot be differentiated (the powers
            then come from a `while_loop`); it is meant for decoding.

    Input shape:
        `[batch, length, hidden_dim]`; `hidden_dim` must be even for the
        diagonal modes (conjugate pairs).

    Output shape:
        `[batch, length, hidden_dim]`, the same as the input. Pairs of
        features hold the real and imaginary parts of one complex state,
        interleaved as in KerasHub (`[re_1, im_1, re_2, im_2, ...]`).

    Example:
    >>> embeddings = np.random.normal(size=(2, 10, 16)).astype("float32")
    >>> layer = keras_msets.layers.AutomatonPositionEncoding(
    ...     mode="full_matrix_learned"
    ... )
    >>> (embeddings + layer(embeddings)).shape
    (2, 10, 16)

    References:
        - DeBenedetto & Chiang, "Representing Unordered Data Using
          Complex-Weighted Multiset Automata", ICML 2020.
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
        - Gehring et al., "Convolutional Sequence to Sequence Learning",
          ICML 2017.
    """

    def __init__(
        self,
        mode,
        max_length=None,
        max_wavelength=10000,
        learn_modulus=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_choice("mode", mode, MODES)
        learn_modulus = check_bool("learn_modulus", learn_modulus)
        if learn_modulus and mode != "diagonal_polar_learned":
            raise ValueError(
                "`learn_modulus` applies to mode='diagonal_polar_learned' "
                f"only. Received: learn_modulus=True, mode={mode!r}"
            )
        max_length = check_positive_int(
            "max_length", max_length, allow_none=True
        )
        if mode in _PER_POSITION_MODES and max_length is None:
            raise ValueError(
                f"`max_length` is required for mode={mode!r} (one vector "
                "per position). Received: max_length=None"
            )
        check_positive_float("max_wavelength", max_wavelength)
        self.mode = mode
        self.max_length = max_length
        self.max_wavelength = max_wavelength
        self.learn_modulus = learn_modulus
        self.supports_masking = True

    def _check_rank(self, shape):
        if len(shape) != 3:
            raise ValueError(
                "`inputs` must have shape [batch, length, hidden_dim] (the "
                "embeddings the encodings are added to). Received: "
                f"inputs.shape={tuple(shape)}"
            )

    def _check_hidden_dim(self, shape):
        """The last axis of a call's `inputs` against the weights' size."""
        if self.mode == "diagonal_polar_fixed":
            built = None  # no weights: any even size
        elif self.mode == "diagonal_polar_learned":
            built = 2 * self.scale.shape[0]
        elif self.mode in _MATRIX_MODES:
            built = self.initial_weights.shape[0]
        else:
            built = self.embeddings.shape[1]
        hidden_dim = shape[-1]
        if hidden_dim is None or (built is not None and hidden_dim != built):
            expected = "known" if built is None else f"{built}, as in build()"
            raise ValueError(
                f"The last axis of `inputs` (hidden_dim) must be {expected}. "
                f"Received: inputs.shape={tuple(shape)}"
            )
        if hidden_dim % 2 and self.mode in _DIAGONAL_MODES:
            raise ValueError(
                f"mode={self.mode!r} needs an even hidden_dim (the last "
                "axis of `inputs`): its complex states come in conjugate "
                f"pairs. Received: inputs.shape={tuple(shape)}"
            )

    def build(self, input_shape):
        self._check_rank(input_shape)
        hidden_dim = input_shape[-1]
        if hidden_dim is None:
            raise ValueError(
                "The last axis of `inputs` (hidden_dim) must be known. "
                f"Received: input_shape={tuple(input_shape)}"
            )
        if self.mode in _DIAGONAL_MODES and hidden_dim % 2:
            raise ValueError(
                f"mode={self.mode!r} needs an even hidden_dim (the last "
                "axis of `inputs`): its complex states come in conjugate "
                f"pairs. Received: hidden_dim={hidden_dim}"
            )
        trainable = self.mode in _LEARNED_MODES

        def weight(name, shape, initializer, trainable=trainable):
            # Read in float32 even under mixed precision: `call` picks the
            # precision (see `_working_dtype`).
            return self.add_weight(
                shape=shape,
                initializer=initializer,
                trainable=trainable,
                autocast=False,
                name=name,
            )

        if self.mode == "diagonal_polar_learned":
            pairs = (hidden_dim // 2,)
            self.scale = weight("scale", pairs, "ones", self.learn_modulus)
            self.phase = weight(
                "phase", pairs, keras.initializers.Constant(math.pi / 2)
            )
            self.log_modulus = weight(
                "log_modulus", pairs, "zeros", self.learn_modulus
            )
            self.angle = weight(
                "angle", pairs, _sinusoid_angle_initializer(self.max_wavelength)
            )
        elif self.mode in _MATRIX_MODES:
            self.initial_weights = weight(
                "initial_weights", (hidden_dim,), _fixed_norm_initializer()
            )
            self.transition_matrix = weight(
                "transition_matrix",
                (hidden_dim, hidden_dim),
                keras.initializers.Orthogonal(),
            )
        elif self.mode in _PER_POSITION_MODES:
            self.embeddings = weight(
                "embeddings",
                (self.max_length, hidden_dim),
                _fixed_norm_initializer(),
            )

    def call(self, inputs, start_index=0):
        self._check_rank(inputs.shape)
        self._check_hidden_dim(inputs.shape)
        shape = ops.shape(inputs)
        length = inputs.shape[-2]
        if length is None:
            length = shape[-2]
        static_start = _static_int(start_index)
        start = start_index if static_start is None else static_start
        if self.mode in _PER_POSITION_MODES:
            encoding = self._per_position(inputs, start, length)
        else:
            positions = ops.arange(length, dtype="int32") + ops.cast(
                start, "int32"
            )
            if self.mode in _MATRIX_MODES:
                num_bits = None
                if static_start is not None and isinstance(length, int):
                    num_bits = max(static_start + length - 1, 0).bit_length()
                dtype = self._working_dtype()
                encoding = _matrix_forward_weights(
                    ops.cast(self.initial_weights, dtype),
                    ops.cast(self.transition_matrix, dtype),
                    positions,
                    num_bits,
                )
            else:
                encoding = self._diagonal_polar(inputs, positions)
        encoding = ops.cast(encoding, self.compute_dtype)
        return ops.broadcast_to(ops.expand_dims(encoding, 0), shape)

    def _working_dtype(self):
        # Half-precision policies compute the encodings in float32: float16
        # cannot even count positions past 2048, and powers of a matrix
        # would lose what little precision it has.
        return keras.backend.result_type(self.compute_dtype, "float32")

    def _diagonal_polar(self, inputs, positions):
        dtype = self._working_dtype()
        positions = ops.expand_dims(ops.cast(positions, dtype), -1)
        if self.mode == "diagonal_polar_fixed":
            pairs = inputs.shape[-1] // 2
            angle = -_sinusoid_frequencies(pairs, self.max_wavelength, dtype)
            phase = ops.full((pairs,), math.pi / 2, dtype=dtype)
            scale = None
        else:
            angle = ops.cast(self.angle, dtype)
            phase = ops.cast(self.phase, dtype)
            # r^p = exp(p log r): no power of a possibly tiny base.
            scale = ops.cast(self.scale, dtype) * ops.exp(
                positions * ops.cast(self.log_modulus, dtype)
            )
        # lambda' mu'^p: the pair (cos phi, sin phi) rotated by p theta.
        # The angle-sum identity keeps p theta, not phi + p theta, as the
        # argument of cos and sin, so no precision is lost adding pi/2 to
        # a large angle.
        turn = positions * angle
        cos_turn, sin_turn = ops.cos(turn), ops.sin(turn)
        cos_phase, sin_phase = ops.cos(phase), ops.sin(phase)
        real = cos_phase * cos_turn - sin_phase * sin_turn
        imag = sin_phase * cos_turn + cos_phase * sin_turn
        if scale is not None:
            real, imag = scale * real, scale * imag
        encoding = ops.stack([real, imag], axis=-1)
        return ops.reshape(encoding, (-1, 2 * ops.shape(real)[-1]))

    def _per_position(self, inputs, start, length):
        if isinstance(start, int) and isinstance(length, int):
            if start < 0 or start + length > self.max_length:
                raise ValueError(
                    f"mode={self.mode!r} encodes positions 0 .. "
                    f"max_length - 1 = {self.max_length - 1} only "
                    f"(max_length={self.max_length}); expected start_index "
                    "+ sequence length <= max_length. Received: sequence "
                    f"length={length}, start_index={start} (last position "
                    f"{start + length - 1})."
                )
        hidden_dim = inputs.shape[-1]
        return ops.slice(
            ops.cast(self.embeddings, self.compute_dtype),
            (start, 0),
            (length, hidden_dim),
        )

    def compute_output_shape(self, input_shape):
        self._check_rank(input_shape)
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "mode": self.mode,
                "max_length": self.max_length,
                "max_wavelength": self.max_wavelength,
                "learn_modulus": self.learn_modulus,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        # Saved before `learn_modulus` existed: the modulus was trained.
        if config.get("mode") == "diagonal_polar_learned":
            config.setdefault("learn_modulus", True)
        return super().from_config(config)
