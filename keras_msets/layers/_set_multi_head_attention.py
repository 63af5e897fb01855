"""`keras.layers.MultiHeadAttention` with the attention kernel chosen by shape.

Private: `MultiheadAttentionBlock.make_attention` builds it. It subclasses
Keras's layer, overrides `_compute_attention` (the product of the
projected queries, keys and values) and adds `attend`, the call the
blocks use; the projections, their attribute and variable names
(`query`, `key`, `value`, `attention_output`) and the weight files are
exactly those of `keras.layers.MultiHeadAttention`.
"""

import keras
from keras import ops

from keras_msets.layers._feed_forward_block import apply_dense
from keras_msets.layers._feed_forward_block import as_compute_dtype
from keras_msets.layers._feed_forward_block import writes_out

# On the torch backend, plain matmul + softmax replaces the fused kernel
# (`torch.nn.functional.scaled_dot_product_attention`) for these shapes:
# - many queries over few keys (the elements attending to inducing
#   points): from 1,000 queries on the CPU, from 4,000 on a GPU. Timed
#   alone on one CPU thread (forward + backward, batch 8, 4 heads of 32;
#   benchmarks/attention_kernel_crossover.py, stored in
#   benchmarks/results/attention_kernel_crossover_cpu.json), the fused
#   kernel took 1.20x the plain product's time for 1,000 queries over 16
#   keys and 1.02x for 4,000, but 0.80x for 200 (and 0.35-0.72x for square
#   shapes, where it stays). Whole training steps of ISAB and the
#   inducing-point MSAB were mixed (benchmarks/speed_vs_plain.py,
#   `fused_train_ratio`).
#   On one H200 GPU (same script, `--device cuda`, stored in
#   benchmarks/results/gpu/attention_kernel_crossover_gpu.json) the fused
#   kernel took 0.48x, 0.67x and 1.29x the plain product's time for 200,
#   1,000 and 4,000 queries over 16 keys.
# - few queries over many keys (pooling seeds, inducing points) on a GPU
#   only: up to 16 queries over 4,000 keys or more. There the fused
#   kernel (fp32, its backward) took 5.5x the plain product's time for 1
#   and 4 queries over 10,000 keys and 2.5x for 16 over 4,000, but 0.86x
#   for 1 query over 2,000 keys (the same GPU table; the switch lies
#   between the sizes timed). On the CPU the fused kernel took 1.15-1.57x
#   the plain product alone, yet
#   the whole PMA step at 10,000 keys was slower with the plain product
#   (benchmarks/speed_vs_plain.py, torch), so the fused kernel stays there.
#   The blocks' own attention of few queries (`attend`) now takes
#   `fold_keys` before any kernel (its keys are never projected); this
#   rule remains for the key dims that `folds_keys` refuses.
FEW_KEYS = 16
MANY_QUERIES = 1000
GPU_MANY_QUERIES = 4000
GPU_FEW_QUERIES = 16
GPU_MANY_KEYS = 4000

# The logit of a masked key in the plain path: finite, as in
# `keras.layers.Softmax` (float32).
MASKED_LOGIT = -1e9


def folds_keys(num_queries, num_keys, key_dim):
    """Whether the attention runs on the keys' inputs (`fold_keys`).

    For few queries (`2 * num_queries <= key_dim`, e.g. pooling seeds and
    inducing points) over more keys: the key and value projections of the
    `num_keys` elements cost more than the products with the queries taken
    back through the key projection. Unknown sizes (None) keep the
    projections.
    """
    if num_queries is None or num_keys is None:
        return False
    return 2 * num_queries <= key_dim and num_keys > num_queries


def use_plain_kernel(num_queries, num_keys, backend=None, on_gpu=False):
    """Whether the attention of these sizes uses plain matmul + softmax.

    True only on the torch backend: for `num_keys <= FEW_KEYS` with
    `num_queries >= MANY_QUERIES` (`GPU_MANY_QUERIES` on a GPU), and, on
    a GPU (`on_gpu`), for `num_queries <= GPU_FEW_QUERIES` over
    `num_keys >= GPU_MANY_KEYS`. Unknown
    sizes (None) keep the fused kernel. Elsewhere
    `keras.ops.dot_product_attention` is the backend's own kernel (XLA's
    on JAX, fused where a GPU has one).
    """
    backend = backend or keras.backend.backend()
    if backend != "torch" or num_queries is None or num_keys is None:
        return False
    many_queries = GPU_MANY_QUERIES if on_gpu else MANY_QUERIES
    if num_keys <= FEW_KEYS and num_queries >= many_queries:
        return True
    return (
        on_gpu and num_queries <= GPU_FEW_QUERIES and num_keys >= GPU_MANY_KEYS
    )


def _on_gpu(tensor):
    """Whether a (torch) tensor lives on a GPU; False for other tensors."""
    device = getattr(tensor, "device", None)
    return getattr(device, "type", None) == "cuda"


@keras.saving.register_keras_serializable(package="keras_msets")
class SetMultiHeadAttention(keras.layers.MultiHeadAttention):
    """Multi-head attention over sets, its kernel chosen by shape (private).

    `keras.layers.MultiHeadAttention` (same arguments, weights and
    results) whose attention of rank-4 projected `[batch, n, heads, dim]`
    tensors is `keras.ops.dot_product_attention` (the backend's fused
    kernel) with a key mask `[batch, 1, n_k]` broadcast over the queries,
    or, where `use_plain_kernel` says so on the torch backend, plain
    `einsum` + masked softmax. Dropout on the attention probabilities
    (training only) always takes the plain path, as in Keras. Returning
    the scores, causal masks and other ranks are left to Keras.

    The blocks call `attend` instead of the layer: the same result, with
    the projections computed on the projection layers' weights and, for
    few queries over more keys (`folds_keys`), without projecting the
    keys and values at all (`fold_keys`), on every backend.
    """

    def attend(self, query, value, attention_mask=None, training=None):
        """`self(query, value, attention_mask=..., training=...)`, inlined.

        Called inside the owning block's `call`: the four projections are
        computed on the projection layers' weights (`apply_dense`) and
        this layer is not called, which saves five eager layer calls on
        torch. The layer call is kept where Keras's `call` does more
        than this (a Keras mask on the query, a gate, a sliding window,
        a mixed or quantized dtype policy).
        """
        if (
            getattr(query, "_keras_mask", None) is not None
            or getattr(self, "_use_gate", False)
            or getattr(self, "_sliding_window", None) is not None
            or not writes_out(
                self,
                self._query_dense,
                self._key_dense,
                self._value_dense,
                self._output_dense,
            )
        ):
            return self(
                query,
                value,
                attention_mask=attention_mask,
                training=training,
            )
        if attention_mask is not None:
            attention_mask = ops.cast(attention_mask, "bool")
        query = apply_dense(self._query_dense, query)
        if self._can_fold(query, value, attention_mask, training):
            attended = self.fold_keys(query, value, attention_mask)
        else:
            attended, _ = self._compute_attention(
                query,
                apply_dense(self._key_dense, value),
                apply_dense(self._value_dense, value),
                attention_mask,
                training,
            )
        return apply_dense(self._output_dense, attended)

    def _can_fold(self, query, value, attention_mask, training):
        return (
            len(query.shape) == 4
            and len(value.shape) == 3
            and self._key_dense.equation == "abc,cde->abde"
            and self._value_dense.equation == "abc,cde->abde"
            and not (bool(training) and self._dropout > 0.0)
            and (attention_mask is None or attention_mask.shape[1] == 1)
            and folds_keys(query.shape[1], value.shape[1], self._key_dim)
        )

    def fold_keys(self, query, value, attention_mask=None):
        """Scaled dot-product attention without projecting the keys.

        `query` is projected (`[batch, t, heads, key_dim]`), `value` is
        the keys' and values' input `[batch, s, dim]` and the mask a key
        mask `[batch, 1, s]`. With `K = X W_k + b_k` and `V = X W_v + b_v`,
        `Q K^T = X (W_k Q^T) + Q b_k` and, the softmax rows `P` summing to
        1, `P V = (P X) W_v + b_v`: the queries go back through the key
        projection (`[batch, dim, heads * t]`) and the weighted inputs
        forward through the value projection, so the `[batch, s, heads,
        key_dim]` keys and values are never formed. Masked keys get
        exactly zero weight, as in the fused kernel.
        """
        queries, heads = query.shape[1], query.shape[2]
        value = as_compute_dtype(self, value)
        dim = value.shape[-1]
        columns = heads * queries
        query = ops.multiply(
            query, ops.cast(self._inverse_sqrt_key_dim, query.dtype)
        )
        # [batch, dim, heads * t]: each head's queries in the input space.
        folded = ops.einsum("btnh,cnh->bcnt", query, self._key_dense.kernel)
        scores = ops.matmul(value, ops.reshape(folded, (-1, dim, columns)))
        key_bias = self._key_dense.bias
        if key_bias is not None:
            shift = ops.einsum("btnh,nh->bnt", query, key_bias)
            scores = scores + ops.reshape(shift, (-1, 1, columns))
        if attention_mask is not None:
            # [batch, 1, s] -> [batch, s, 1], the same for every column.
            mask = ops.expand_dims(attention_mask[:, 0, :], -1)
            scores = ops.where(
                mask, scores, ops.cast(MASKED_LOGIT, scores.dtype)
            )
        probabilities = ops.softmax(scores, axis=1)
        # [batch, heads * t, dim]: the weighted mean of the inputs.
        weighted = ops.matmul(ops.transpose(probabilities, (0, 2, 1)), value)
        weighted = ops.reshape(weighted, (-1, heads, queries, dim))
        attended = ops.einsum(
            "bntc,cnh->btnh", weighted, self._value_dense.kernel
        )
        if self._value_dense.bias is not None:
            attended = attended + self._value_dense.bias
        return attended

    def _compute_attention(
        self,
        query,
        key,
        value,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
        use_causal_mask=False,
    ):
        if (
            return_attention_scores
            or use_causal_mask
            or len(query.shape) != 4
            or (attention_mask is not None and len(attention_mask.shape) != 3)
        ):
            return super()._compute_attention(
                query,
                key,
                value,
                attention_mask=attention_mask,
                training=training,
                return_attention_scores=return_attention_scores,
                use_causal_mask=use_causal_mask,
            )
        mask = None
        if attention_mask is not None:
            # [batch, n_q or 1, n_k] -> [batch, 1 (heads), n_q or 1, n_k]
            mask = ops.expand_dims(ops.cast(attention_mask, "bool"), 1)
        dropout = bool(training) and self._dropout > 0.0
        plain = use_plain_kernel(
            query.shape[1], key.shape[1], on_gpu=_on_gpu(query)
        )
        if dropout or plain:
            return self._plain_attention(query, key, value, mask, training)
        attended = ops.dot_product_attention(
            query,
            key,
            value,
            mask=mask,
            scale=self._inverse_sqrt_key_dim,
            flash_attention=self._flash_attention,
        )
        return attended, None

    def _plain_attention(self, query, key, value, mask, training):
        """Matmul + masked softmax (+ dropout on the probabilities)."""
        query = ops.multiply(
            query, ops.cast(self._inverse_sqrt_key_dim, query.dtype)
        )
        scores = ops.einsum("btnh,bsnh->bnts", query, key)
        if mask is not None:
            scores = ops.where(
                mask, scores, ops.cast(MASKED_LOGIT, scores.dtype)
            )
        probabilities = ops.softmax(scores, axis=-1)
        if self._dropout > 0.0:
            probabilities = self._dropout_layer(
                probabilities, training=training
            )
        return ops.einsum("bnts,bsnh->btnh", probabilities, value), None
