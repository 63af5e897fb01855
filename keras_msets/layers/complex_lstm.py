import keras
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers._complex_weights import complex_units
from keras_msets.layers._layer_base import arguments_config
from keras_msets.utils.validation import check_choice
from keras_msets.utils.validation import check_positive_int
from keras_msets.utils.validation import check_rank

GATE_PRODUCTS = ("complex", "split")

# The arguments of `ComplexLSTMCell`, which `ComplexLSTM` passes on.
_CELL_ARGS = (
    "units",
    "activation",
    "recurrent_activation",
    "use_bias",
    "shared_weights",
    "gate_product",
    "kernel_initializer",
    "recurrent_initializer",
    "bias_initializer",
    "unit_forget_bias",
)


def _complex_matmul(x_re, x_im, a, b, shared):
    """Real and imaginary parts of `(x_re + i x_im) @ (a + i b)` (Eq. 10).

    With `shared` (`a = b`) it is `a(x - y) + i a(x + y)`: two products.
    """
    if shared:
        return ops.matmul(x_re - x_im, a), ops.matmul(x_re + x_im, a)
    real = ops.matmul(x_re, a) - ops.matmul(x_im, b)
    imag = ops.matmul(x_re, b) + ops.matmul(x_im, a)
    return real, imag


@keras.saving.register_keras_serializable(package="keras_msets")
class ComplexLSTMCell(keras.layers.Layer):
    """Cell of `ComplexLSTM`: one step of the complex-valued LSTM.

    Processes one time step; wrap it in `keras.layers.RNN` (or use
    `ComplexLSTM`) to process a sequence. The equations are those of
    `ComplexLSTM`.

    Args:
        units: positive integer, number of complex hidden units.
        activation: activation of the candidate cell and of the cell
            output, applied to real and imaginary parts separately.
            Defaults to `"tanh"`.
        recurrent_activation: activation of the input, forget and output
            gates, applied to real and imaginary parts separately. Defaults
            to `"sigmoid"`.
        use_bias: whether the gates have the complex bias `c + id`.
        shared_weights: if True, the real and imaginary parts of every
            complex weight and bias are one variable (`A = B`, `c = d`),
            which halves the parameter count.
        gate_product: how gates multiply the cell: `"complex"` (default,
            the complex elementwise product) or `"split"` (real part times
            real part, imaginary part times imaginary part).
        kernel_initializer: initializer of the input kernels `A_z`, `B_z`.
        recurrent_initializer: initializer of the recurrent kernels `A_h`,
            `B_h`.
        bias_initializer: initializer of the biases `c`, `d`.
        unit_forget_bias: if True, adds 1 to the real and imaginary parts of
            the forget gate's bias at initialization (as `keras.layers.LSTM`).
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: complex step input `[batch, 2 * input_units]`.
        states: list `[h, c]` of complex states `[batch, 2 * units]`.

    Example:
    >>> cell = keras_msets.layers.ComplexLSTMCell(4)
    >>> keras.layers.RNN(cell)(keras.random.normal((2, 5, 6))).shape
    (2, 8)

    References:
        - Wang et al., "Encoding word order in complex embeddings",
          ICLR 2020.
        - Hochreiter and Schmidhuber, "Long short-term memory", 1997.
    """

    def __init__(
        self,
        units,
        activation="tanh",
        recurrent_activation="sigmoid",
        use_bias=True,
        shared_weights=False,
        gate_product="complex",
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        unit_forget_bias=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.activation = keras.activations.get(activation)
        self.recurrent_activation = keras.activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.shared_weights = bool(shared_weights)
        self.gate_product = check_choice(
            "gate_product", gate_product, GATE_PRODUCTS
        )
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(
            recurrent_initializer
        )
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.state_size = [2 * self.units, 2 * self.units]
        self.output_size = 2 * self.units

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        units, base = self.units, self.bias_initializer

        def initializer(shape, dtype=None):
            # Gate order i, f, g, o (as keras.layers.LSTM): f gets +1.
            return ops.concatenate(
                [
                    base((units,), dtype=dtype),
                    ops.ones((units,), dtype=dtype),
                    base((2 * units,), dtype=dtype),
                ]
            )

        return initializer

    def build(self, input_shape):
        input_units = complex_units(input_shape)
        gates = 4 * self.units
        self._add_parts("kernel", (input_units, gates), self.kernel_initializer)
        self._add_parts(
            "recurrent_kernel", (self.units, gates), self.recurrent_initializer
        )
        if self.use_bias:
            self._add_parts("bias", (gates,), self._bias_initializer())

    def _add_parts(self, name, shape, initializer):
        """`real_<name>` and, unless shared, `imag_<name>` (names frozen)."""
        parts = ("real",) if self.shared_weights else ("real", "imag")
        for part in parts:
            weight = self.add_weight(
                name=f"{part}_{name}", shape=shape, initializer=initializer
            )
            setattr(self, f"{part}_{name}", weight)

    def _weights_of(self, name):
        real = getattr(self, f"real_{name}")
        imag = real if self.shared_weights else getattr(self, f"imag_{name}")
        return real, imag

    def _product(self, a_re, a_im, b_re, b_im):
        if self.gate_product == "split":
            return a_re * b_re, a_im * b_im
        return a_re * b_re - a_im * b_im, a_re * b_im + a_im * b_re

    def call(self, inputs, states):
        h, c = states
        x_re, x_im = msets_ops.complex_split(inputs)
        h_re, h_im = msets_ops.complex_split(h)
        c_re, c_im = msets_ops.complex_split(c)
        shared = self.shared_weights
        re, im = _complex_matmul(
            x_re, x_im, *self._weights_of("kernel"), shared
        )
        r_re, r_im = _complex_matmul(
            h_re, h_im, *self._weights_of("recurrent_kernel"), shared
        )
        re, im = re + r_re, im + r_im
        if self.use_bias:
            b_re, b_im = self._weights_of("bias")
            re, im = re + b_re, im + b_im
        # f(z) = sigma(Re z) + i sigma(Im z) for every gate (Eq. 12).
        i_re, f_re, g_re, o_re = ops.split(re, 4, axis=-1)
        i_im, f_im, g_im, o_im = ops.split(im, 4, axis=-1)
        gate = self.recurrent_activation
        i_re, i_im, f_re, f_im = gate(i_re), gate(i_im), gate(f_re), gate(f_im)
        o_re, o_im = gate(o_re), gate(o_im)
        g_re, g_im = self.activation(g_re), self.activation(g_im)
        kept_re, kept_im = self._product(f_re, f_im, c_re, c_im)
        new_re, new_im = self._product(i_re, i_im, g_re, g_im)
        c_re, c_im = kept_re + new_re, kept_im + new_im
        h_re, h_im = self._product(
            o_re, o_im, self.activation(c_re), self.activation(c_im)
        )
        h = msets_ops.complex_merge(h_re, h_im)
        c = msets_ops.complex_merge(c_re, c_im)
        return h, [h, c]

    def get_config(self):
        config = super().get_config()
        config.update(arguments_config(self, _CELL_ARGS))
        return config


def _cell_property(name):
    return property(lambda self: getattr(self.cell, name))


@keras.saving.register_keras_serializable(package="keras_msets")
class ComplexLSTM(keras.layers.RNN):
    """Long short-term memory with complex weights, on complex sequences.

    The complex RNN of Wang et al. (App. B, Eq. 12) is

        h_t = f(W^h h_{t-1} + W^z z_t + b),
        f(z) = sigma(Re(z)) + i sigma(Im(z)),

    with complex input `z_t`, hidden state `h_t`, weights `W^h`, `W^z` and
    bias `b`, the products computed as in Eq. 10; "similarly, the
    complex-valued gates are used in LSTM via operations as in (12)". Each
    gate of this LSTM is therefore Eq. 12 with its own complex weights, the
    real activation applied to the real and the imaginary parts
    separately:

        i_t = f_sigmoid(W^h_i h_{t-1} + W^z_i z_t + b_i)   (input gate)
        f_t = f_sigmoid(W^h_f h_{t-1} + W^z_f z_t + b_f)   (forget gate)
        o_t = f_sigmoid(W^h_o h_{t-1} + W^z_o z_t + b_o)   (output gate)
        g_t = f_tanh(W^h_g h_{t-1} + W^z_g z_t + b_g)      (candidate)
        c_t = f_t . c_{t-1} + i_t . g_t
        h_t = o_t . f_tanh(c_t)

    The paper does not spell out the elementwise product `.` of a complex
    gate with the complex cell. With `gate_product="complex"` (default) it
    is the complex product, so the layer is the LSTM equations read in
    complex numbers; note that a gate `sigma(a) + i sigma(b)` then has
    modulus up to `sqrt(2)` and rotates the cell by up to 90 degrees, so
    the cell is not bounded by the gates. `gate_product="split"` multiplies
    real parts with real parts and imaginary parts with imaginary parts,
    so every gate acts like a real LSTM gate in `(0, 1)` on each part
    (the complex weights still mix the two parts).

    Masking follows `keras.layers.LSTM`: a masked step leaves `h` and `c`
    unchanged, so padded steps never change the final output or state;
    with `return_sequences=True` a masked step outputs the previous output
    (zeros before the first valid step), or zeros with
    `zero_output_for_mask=True`, and the output mask is the input mask
    (reversed with `go_backwards=True`, like the output sequence; Keras'
    own LSTM leaves it unreversed).
    Masked inputs are replaced by zeros first, so even `inf` or `NaN` there
    never enters the recurrence. An all-masked sequence outputs zeros (and,
    with `return_state=True`, returns the initial state, zeros by default).

    Args:
        units: positive integer, number of complex hidden units.
        activation: activation of the candidate and of the cell output,
            applied to real and imaginary parts separately. Defaults to
            `"tanh"`.
        recurrent_activation: activation of the gates, applied to real and
            imaginary parts separately. Defaults to `"sigmoid"`.
        use_bias: whether the gates have complex biases.
        shared_weights: if True, the paper's parameter-saving option
            `A = B`, `c = d`: each complex weight `A + iB` and bias
            `c + id` uses one real variable for both parts, which halves
            the parameter count (`4 * units * (input_units + units + 1)`
            instead of twice that).
        gate_product: `"complex"` or `"split"`, see above.
        kernel_initializer: initializer of the input kernels.
        recurrent_initializer: initializer of the recurrent kernels.
            Defaults to `"orthogonal"`.
        bias_initializer: initializer of the biases.
        unit_forget_bias: if True, adds 1 to the real and imaginary parts of
            the forget gate's bias at initialization.
        return_sequences: whether to return the whole output sequence
            instead of the last output.
        return_state: whether to also return the last states `h` and `c`.
        go_backwards: if True, processes the sequence backwards and returns
            the reversed sequence (as `keras.layers.LSTM`).
        stateful: if True, the last state of each batch row is the initial
            state of that row in the next batch.
        unroll: if True, unrolls the loop (short sequences only).
        **kwargs: `keras.layers.RNN` and base layer keyword arguments
            (`zero_output_for_mask`, `name`, `dtype`, ...).

    Call arguments:
        sequences: complex sequence `[batch, length, 2 * input_units]`.
        initial_state: optional list `[h, c]` of complex tensors
            `[batch, 2 * units]`. Defaults to zeros.
        mask: optional boolean mask `[batch, length]`; False marks padded
            steps. Defaults to the Keras mask of `sequences`.
        training: Python boolean (unused, accepted as in Keras RNNs).

    Input shape:
        `[batch, length, 2 * input_units]` (real parts, then imaginary
        parts); the last axis must be known and even.

    Output shape:
        `[batch, 2 * units]`, or `[batch, length, 2 * units]` with
        `return_sequences=True` (real parts, then imaginary parts); with
        `return_state=True` followed by `h` and `c`, each
        `[batch, 2 * units]`.

    Example:
    >>> x = keras.random.normal((2, 7, 2 * 8))
    >>> keras_msets.layers.ComplexLSTM(4)(x).shape
    (2, 8)
    >>> keras_msets.layers.ComplexLSTM(4, return_sequences=True)(x).shape
    (2, 7, 8)

    References:
        - Wang et al., "Encoding word order in complex embeddings",
          ICLR 2020.
        - Hochreiter and Schmidhuber, "Long short-term memory", 1997.
    """

    def __init__(
        self,
        units,
        activation="tanh",
        recurrent_activation="sigmoid",
        use_bias=True,
        shared_weights=False,
        gate_product="complex",
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        unit_forget_bias=True,
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        stateful=False,
        unroll=False,
        **kwargs,
    ):
        cell = ComplexLSTMCell(
            units,
            activation=activation,
            recurrent_activation=recurrent_activation,
            use_bias=use_bias,
            shared_weights=shared_weights,
            gate_product=gate_product,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            unit_forget_bias=unit_forget_bias,
            dtype=kwargs.get("dtype"),
            trainable=kwargs.get("trainable", True),
            name="complex_lstm_cell",
        )
        super().__init__(
            cell,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            stateful=stateful,
            unroll=unroll,
            **kwargs,
        )
        self.input_spec = keras.layers.InputSpec(ndim=3)

    units = _cell_property("units")
    activation = _cell_property("activation")
    recurrent_activation = _cell_property("recurrent_activation")
    use_bias = _cell_property("use_bias")
    shared_weights = _cell_property("shared_weights")
    gate_product = _cell_property("gate_product")
    kernel_initializer = _cell_property("kernel_initializer")
    recurrent_initializer = _cell_property("recurrent_initializer")
    bias_initializer = _cell_property("bias_initializer")
    unit_forget_bias = _cell_property("unit_forget_bias")

    def __call__(self, sequences, *args, **kwargs):
        # Before Keras's input-spec check, whose message names neither the
        # argument nor the shape received.
        shape = getattr(sequences, "shape", None)
        if shape is not None:
            check_rank("sequences", shape, 3, "3: [batch, length, 2 * d]")
        return super().__call__(sequences, *args, **kwargs)

    def call(self, sequences, initial_state=None, mask=None, training=False):
        if mask is not None:
            if isinstance(mask, (list, tuple)):
                mask = mask[0]
            valid = msets_ops.expand_mask(mask, sequences)
            mask = valid[..., 0]
            sequences = ops.where(valid, sequences, ops.zeros_like(sequences))
        return super().call(
            sequences,
            initial_state=initial_state,
            mask=mask,
            training=training,
        )

    def compute_mask(self, sequences, mask):
        output_mask = super().compute_mask(sequences, mask)
        if not (self.go_backwards and self.return_sequences):
            return output_mask
        # The output sequence is reversed, so is its mask.
        if self.return_state:
            first = output_mask[0]
            first = None if first is None else ops.flip(first, axis=1)
            return [first] + list(output_mask[1:])
        return None if output_mask is None else ops.flip(output_mask, axis=1)

    def get_config(self):
        config = super().get_config()
        del config["cell"]
        cell_config = self.cell.get_config()
        config.update({key: cell_config[key] for key in _CELL_ARGS})
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)
