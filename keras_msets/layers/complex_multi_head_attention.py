import math

import keras
from keras import ops

from keras_msets import ops as msets_ops
from keras_msets.layers._complex_weights import complex_units
from keras_msets.layers._layer_base import arguments_config
from keras_msets.layers.complex_dense import ComplexDense
from keras_msets.ops.checks import as_features
from keras_msets.ops.checks import check_features_argument
from keras_msets.ops.checks import check_mask_argument
from keras_msets.utils.validation import check_bool
from keras_msets.utils.validation import check_positive_int
from keras_msets.utils.validation import check_rate


def _zero_padding(x, mask):
    """Replaces the elements of `x [batch, length, 2d]` where `mask` is off."""
    if mask is None:
        return x
    return ops.where(msets_ops.expand_mask(mask, x), x, ops.zeros_like(x))


def _max_magnitude(x):
    """`max |x|` over all but the batch axis, `[batch, 1, 1]`; 1 where 0.

    A constant for autodiff (`stop_gradient`): it only rescales.
    """
    # A zero row keeps empty sets at 0 and a zero entry of the batch keeps
    # the maximum defined for batch 0 (dropped after). Keras's
    # `max(initial=...)` would do both, but on torch it builds its initial
    # value on the CPU, which fails for CUDA tensors.
    magnitude = ops.pad(ops.abs(x), ((0, 1), (0, 1), (0, 0)))
    largest = ops.max(magnitude, axis=(1, 2), keepdims=True)[:-1]
    largest = ops.where(
        ops.greater(largest, 0), largest, ops.ones_like(largest)
    )
    return ops.stop_gradient(largest)


def _offset(dtype):
    """Added under the square root of the scaled modulus `|z'| <= 1`.

    Its gradient at `z = 0` is then 0, not `NaN`; a modulus moves by at
    most `sqrt(offset)` (1e-15 in float32), far below the rounding of the
    largest one.
    """
    return 2.0**-24 if dtype == "float16" else 1e-30


def _and(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return ops.logical_and(a, b)


@keras.saving.register_keras_serializable(package="keras_msets")
class ComplexMultiHeadAttention(keras.layers.Layer):
    """Multi-head attention on complex sequences, scored by a modulus.

    The complex-valued Transformer of Wang et al. (App. B): queries, keys
    and values are complex linear maps of complex inputs (`ComplexDense`,
    Eq. 10-11), and head `h` returns (Eq. 13)
    `output_i = sum_j a_ij w_j W^V`, with real weights `a_ij` applied to
    the real and to the imaginary parts of the complex values. The weights
    are "the softmax of the product between complex-valued query vectors
    and key vectors" (Eq. 14):
    `e_ij = sqrt((Re(z)^2 + Im(z)^2) / n)`,
    `z = (w_i W^Q)(w_j W^K)^dagger`. The dagger (conjugate transpose) makes
    `z = q_i . conj(k_j)`, the Hermitian product (`Q K^H`), so
    `e_ij = |q_i . conj(k_j)| / sqrt(n)`; the weights are
    `a_ij = softmax_j(e_ij)`, a softmax over the keys (the paper's printed
    normalisation `e_ij / sum_i e_ij` is garbled; the authors' code takes
    the softmax over the keys). The paper writes the scale as `n`; the
    authors' released code, like Vaswani et al., divides by `sqrt(d_k)`,
    and so does this layer (`sqrt(key_dim)`). The heads are concatenated
    and mapped by a complex output projection.

    Masking follows `keras.layers.MultiHeadAttention`: the Keras masks of
    `query`, `value` and `key` are used automatically (or pass
    `query_mask`, `value_mask`, `key_mask`), and are combined (logical and)
    with `attention_mask`. Masked keys get the finite logit
    `keras_msets.ops.MASK_LOGIT`, hence exactly zero weight; masked query,
    key and value elements are replaced by zeros before any arithmetic, so
    their values never reach the valid outputs. A query with no valid key
    (a fully masked key set, or a masked query) has output 0 and all its
    attention weights 0, never `NaN`.

    Note: the released code scores `Q K^T` without the conjugate and
    projects real and imaginary parts with one shared real matrix; this
    layer follows the paper's equations instead.

    Args:
        num_heads: positive integer, number of attention heads.
        key_dim: positive integer, complex size of each head's queries and
            keys.
        value_dim: positive integer, complex size of each head's values.
            None (the default): `key_dim`.
        output_dim: positive integer, complex size of the output. None (the
            default): the complex size of `query`.
        dropout: dropout rate on the attention weights. Defaults to 0.
        use_bias: whether the four complex projections have biases.
        shared_weights: if True, the query, key and value projections use
            `Re(W) = Im(W)` (and equal bias parts), the parameter-saving
            option of the paper's Table 4 ("share in W^{Q/K/V}"); the output
            projection keeps separate real and imaginary weights.
        kernel_initializer: initializer of the projections' kernels.
        bias_initializer: initializer of the projections' biases.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        query: complex tensor `[batch, T, 2 * d_query]`.
        value: complex tensor `[batch, S, 2 * d_value]`.
        key: optional complex tensor `[batch, S, 2 * d_key]`; defaults to
            `value`.
        query_mask: optional boolean `[batch, T]` (from `query`'s Keras mask
            when not given).
        value_mask: optional boolean `[batch, S]` (from `value`'s Keras
            mask when not given).
        key_mask: optional boolean `[batch, S]` (from `key`'s Keras mask
            when not given); ignored when `key` is not given, as in
            `keras.layers.MultiHeadAttention`.
        attention_mask: optional boolean `[batch, T, S]`; False blocks the
            attention of a query to a key.
        return_attention_scores: if True, also returns the attention weights
            `[batch, num_heads, T, S]` (after the softmax, before dropout).
        training: whether dropout is active.

    Input shape:
        `query [batch, T, 2 * d_query]`, `value [batch, S, 2 * d_value]`,
        `key [batch, S, 2 * d_key]`: real parts, then imaginary parts.

    Output shape:
        `[batch, T, 2 * output_dim]` (real parts, then imaginary parts),
        carrying `query`'s Keras mask; with `return_attention_scores=True`
        the tuple `(output, scores)`.

    Example:
    >>> x = keras.random.normal((2, 5, 2 * 8))
    >>> attention = keras_msets.layers.ComplexMultiHeadAttention(
    ...     num_heads=2, key_dim=4
    ... )
    >>> attention(x, x).shape
    (2, 5, 16)

    References:
        - Wang et al., "Encoding word order in complex embeddings",
          ICLR 2020.
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        output_dim=None,
        dropout=0.0,
        use_bias=True,
        shared_weights=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.key_dim = check_positive_int("key_dim", key_dim)
        self.value_dim = check_positive_int(
            "value_dim", value_dim, allow_none=True
        )
        self.output_dim = check_positive_int(
            "output_dim", output_dim, allow_none=True
        )
        self.dropout = check_rate("dropout", dropout)
        self.use_bias = check_bool("use_bias", use_bias)
        self.shared_weights = check_bool("shared_weights", shared_weights)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="attention_dropout"
        )

    def _projection(self, units, name, shared_weights):
        return ComplexDense(
            units,
            use_bias=self.use_bias,
            shared_weights=shared_weights,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            dtype=self.dtype_policy,
            name=name,
        )

    def build(self, query_shape, value_shape, key_shape=None):
        query_units = complex_units(query_shape, "query", rank=3)
        complex_units(value_shape, "value", rank=3)
        if key_shape is None:
            key_shape = value_shape
        complex_units(key_shape, "key", rank=3)
        value_dim = self.value_dim or self.key_dim
        output_dim = self.output_dim or query_units
        heads = self.num_heads
        shared = self.shared_weights
        self.query_dense = self._projection(
            heads * self.key_dim, "query", shared
        )
        self.key_dense = self._projection(heads * self.key_dim, "key", shared)
        self.value_dense = self._projection(heads * value_dim, "value", shared)
        self.output_dense = self._projection(
            output_dim, "attention_output", False
        )
        self.query_dense.build(query_shape)
        self.key_dense.build(key_shape)
        self.value_dense.build(value_shape)
        self.output_dense.build(
            tuple(query_shape)[:-1] + (2 * heads * value_dim,)
        )

    def _head_major(self, x, head_dim):
        """`[b, n, 2 * H * k]` to `[b, n, H, 2 * k]`: each head's real parts,
        then its imaginary parts."""
        shape = ops.shape(x)
        x = ops.reshape(x, shape[:-1] + (2, self.num_heads, head_dim))
        x = ops.transpose(x, (0, 1, 3, 2, 4))
        return ops.reshape(x, shape[:-1] + (self.num_heads, 2 * head_dim))

    def _attend(self, query, key, value, mask, any_valid, training):
        """Eq. 13-14 on projected `query [b, T, 2 H k]`, `key`, `value`.

        `mask [b, T, S]` (or None) is True where query t may attend to key
        s, `any_valid [b, T, 1]` where query t has a key. Returns the heads
        merged `[b, T, 2 * H * value_dim]` and the weights `[b, H, T, S]`.
        """
        # Scaled to |z'| <= 1 (every part of q / (m_q sqrt(2k)) and of
        # k / (m_k sqrt(2k)) is at most 1 / sqrt(2k)), so the squares below
        # neither overflow nor lose the largest moduli; |z| = |z'| m_q m_k
        # 2k, finite whenever m_q m_k 2 sqrt(k) is.
        query_max = _max_magnitude(query)
        key_max = _max_magnitude(key)
        root = math.sqrt(2 * self.key_dim)
        query = query / (query_max * root)
        key = key / (key_max * root)
        # logits = |z| / sqrt(key_dim), one factor per batch element.
        factor = query_max * key_max * (2 * math.sqrt(self.key_dim))
        factor = ops.expand_dims(factor, 1)  # [batch, 1, 1, 1]

        # Eq. 14: z = q . conj(k) = (qr.kr + qi.ki) + i (qi.kr - qr.ki):
        # the real parts are one product of the stacked queries [qr, qi]
        # with the stacked keys [kr, ki], the imaginary parts one of
        # [qi, -qr] with them, each head's parts side by side.
        q_real, q_imag = msets_ops.complex_split(query)
        swapped = ops.concatenate([q_imag, ops.negative(q_real)], axis=-1)
        key = self._head_major(key, self.key_dim)
        equation = "bthd,bshd->bhts"
        z_real = ops.einsum(
            equation, self._head_major(query, self.key_dim), key
        )
        z_imag = ops.einsum(
            equation, self._head_major(swapped, self.key_dim), key
        )
        # |z'| <= 1: the plain square root; the offset keeps its gradient
        # finite (0) at z = 0 (e.g. zero-padded queries).
        squared = z_real * z_real + z_imag * z_imag
        logits = ops.sqrt(squared + _offset(squared.dtype)) * factor

        if mask is not None:
            logits = msets_ops.mask_logits(logits, ops.expand_dims(mask, 1))
        weights = ops.softmax(logits, axis=-1)
        if any_valid is not None:
            # A query without valid keys gets all-zero weights, not uniform.
            weights = ops.where(
                ops.expand_dims(any_valid, 1), weights, ops.zeros_like(weights)
            )
        scores = weights
        weights = self.dropout_layer(weights, training=training)

        # Eq. 13: real weights on the real and imaginary parts of the values,
        # one product with the stacked values [vr, vi] of each head.
        value_dim = self.value_dim or self.key_dim
        heads = ops.einsum(
            "bhts,bshd->bthd", weights, self._head_major(value, value_dim)
        )
        shape = ops.shape(heads)[:2]
        heads = ops.reshape(heads, shape + (self.num_heads, 2, value_dim))
        heads = ops.transpose(heads, (0, 1, 3, 2, 4))
        heads = ops.reshape(heads, shape + (2 * self.num_heads * value_dim,))
        return heads, scores

    def __call__(self, *args, **kwargs):
        # Before Keras converts the arguments to tensors: a string mask or
        # string features would otherwise fail there with a backend error.
        names = ("query", "value", "key")
        inputs = dict(zip(names, args, strict=False))
        inputs.update({n: kwargs[n] for n in names if n in kwargs})
        for name, x in inputs.items():
            if x is not None:
                check_features_argument(name, x)
        for name in names:
            check_mask_argument(
                f"{name}_mask", kwargs.get(f"{name}_mask"), inputs.get(name)
            )
        check_mask_argument("attention_mask", kwargs.get("attention_mask"))
        return super().__call__(*args, **kwargs)

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
    ):
        if key is None:
            key = value
            key_mask = None
        query = as_features(query, self.compute_dtype, "query")
        value = as_features(value, self.compute_dtype, "value")
        key = as_features(key, self.compute_dtype, "key")
        complex_units(query.shape, "query", rank=3)
        complex_units(value.shape, "value", rank=3)
        complex_units(key.shape, "key", rank=3)
        query_mask = (
            None if query_mask is None else ops.cast(query_mask, "bool")
        )
        value_mask = (
            None if value_mask is None else ops.cast(value_mask, "bool")
        )
        key_mask = None if key_mask is None else ops.cast(key_mask, "bool")
        # Padded elements become zeros: their values never reach arithmetic.
        key_valid = _and(value_mask, key_mask)
        query = _zero_padding(query, query_mask)
        value = _zero_padding(value, key_valid)
        key = _zero_padding(key, key_valid)

        # [batch, T, S] mask, True where query t may attend to key s.
        mask = None
        if query_mask is not None:
            mask = ops.expand_dims(query_mask, -1)
        if key_valid is not None:
            mask = _and(mask, ops.expand_dims(key_valid, -2))
        if attention_mask is not None:
            mask = _and(mask, ops.cast(attention_mask, "bool"))

        # [batch, T, 1]: whether query t has a valid key.
        any_valid = None
        if mask is not None:
            any_valid = ops.any(mask, axis=-1, keepdims=True)
        heads, scores = self._attend(
            self.query_dense(query),
            self.key_dense(key),
            self.value_dense(value),
            mask,
            any_valid,
            training,
        )
        output = self.output_dense(heads)
        if any_valid is not None:
            # A query without valid keys has output 0.
            output = ops.where(any_valid, output, ops.zeros_like(output))
        if return_attention_scores:
            return output, scores
        return output

    def get_config(self):
        config = super().get_config()
        config.update(
            arguments_config(
                self,
                (
                    "num_heads",
                    "key_dim",
                    "value_dim",
                    "output_dim",
                    "dropout",
                    "use_bias",
                    "shared_weights",
                    "kernel_initializer",
                    "bias_initializer",
                ),
            )
        )
        return config
