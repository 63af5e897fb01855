import keras

from keras_msets.layers._multiset_block import MERGES
from keras_msets.layers._multiset_block import WEIGHT_SHARINGS
from keras_msets.layers._multiset_block import AttentionMultisetBlock

__all__ = ["MERGES", "WEIGHT_SHARINGS", "MultisetAttentionBlock"]


@keras.saving.register_keras_serializable(package="keras_msets")
class MultisetAttentionBlock(AttentionMultisetBlock):
    """Multi-set attention block (MSAB): every set attends to every set.

    Selby et al.'s block on `K >= 2` sets `X_1, ..., X_K` (eq. 10-11):
    each set attends to itself with its own transformer block (eq. 2),
    `T_kk(X_k, X_k)`, and to every other set, `T_kl(X_k, X_l)`, and the two
    results are merged per element by `g`, a one-layer ReLU feedforward
    network on their concatenation:
    `Z_k = LN(X_k + g([T_kk(X_k, X_k) || T_kl(X_k, X_l)]))`. The layer norm
    around the block is the one of App. B ("layer norm around each encoder
    block"). Each output set is permutation equivariant in its own set and
    invariant to the order of the other sets' elements (partial permutation
    equivariance), so stacked MSABs followed by pooling over each set
    (eq. 12) give partially permutation invariant models.

    For `K > 2` sets (Sec. 5.4 only says the cost becomes quadratic in the
    union of the sets) the cross results of set `k` are averaged over the
    other sets, `C_k = mean_{l != k} T_kl(X_k, X_l)`, and `g` merges
    `[T_kk || C_k]` exactly as for two sets. This keeps eq. 10-11 unchanged
    for `K = 2`, keeps `g`'s size independent of `K`, keeps the merged
    term's scale independent of `K` (which matters for `merge="sum"`), and
    with shared cross blocks makes `Z_k` symmetric in the other sets. With
    unshared blocks each ordered pair still has its own `T_kl`, so the sets
    stay distinguishable; the set order matters only through those blocks.

    Ablations of Sec. 5: `merge="sum"` is Sum-Merge,
    `Z_k = LN(X_k + T_kk + C_k)` (no merge weights), and `cross_only=True`
    is Cross-Only, without the self blocks: `Z_k = LN(X_k + g(C_k))`, so an
    element of set `k` sees the other elements of its own set only through
    earlier blocks. Weight sharing (as in the authors' code):
    `"none"` gives every ordered pair its own block (`K` self blocks and
    `K (K - 1)` cross blocks, `K` merges); `"cross"` shares one cross block
    by all ordered pairs (so `T_xy = T_yx`), self blocks and merges stay
    per set; `"symmetric"` also shares one self block and one merge (and
    norm) by all sets, so the block treats the sets symmetrically:
    reordering the input sets reorders the outputs the same way.

    Padded elements are replaced by zeros and are never attended to, so
    they never change the valid outputs; the output at a padded position is
    finite and not meaningful. An all-masked set has no keys: every
    attention term onto it is defined as 0 (its block gives
    `LN(H + FF(H))` with `H = LN(X_k)`), so the result stays finite.

    Args:
        num_heads: number of attention heads of every block.
        key_dim: size of each head's queries, keys and values. None (the
            default): `dim // num_heads`, which must divide evenly.
        ff_dim: hidden width of the blocks' feedforward networks. None (the
            default): `2 * dim` (App. B: hidden size twice the latent one).
        dropout: dropout rate on the attention probabilities. Defaults to 0.
        layer_norm_epsilon: epsilon of every layer norm. Defaults to `1e-5`.
        merge: keyword-only, as are the three arguments below:
            `"concat"` (the default, `g` on the concatenation) or `"sum"`
            (the Sum-Merge ablation).
        cross_only: if True, drops the self blocks (the Cross-Only
            ablation). Defaults to False.
        weight_sharing: `"none"` (the default), `"cross"` or `"symmetric"`,
            see above.
        merge_activation: activation of `g` (`merge="concat"` only).
            Defaults to `"relu"`, as the paper states; the authors' code
            uses a linear merge (`None`).
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: a list of `K >= 2` sets, each `[batch, n_k, dim]`; the set
            sizes `n_k` may differ, `batch` and `dim` may not.
        masks: optional list of `K` boolean masks `[batch, n_k]` (True for
            real elements), or None entries for sets without padding.
        mask: the same under Keras's name; filled automatically from the
            inputs' Keras masks. An entry of `masks` that is not None wins.
            Masks given as `masks=` are not attached to the outputs: pass
            them to the next block too.
        training: whether dropout is active.

    Input shape:
        A list of `K` tensors `[batch, n_k, dim]`.

    Output shape:
        A list of `K` tensors `[batch, n_k, dim]`, each with its input's
        Keras mask (or the one passed as `mask=`).

    Example:
    >>> x = keras.random.normal((2, 5, 16))
    >>> y = keras.random.normal((2, 7, 16))
    >>> msab = keras_msets.layers.MultisetAttentionBlock(num_heads=4)
    >>> zx, zy = msab([x, y])
    >>> zx.shape, zy.shape
    ((2, 5, 16), (2, 7, 16))

    References:
        - Selby et al., "Learning Functions on Multiple Sets using
          Multi-Set Transformers", UAI 2022.
        - Lee et al., "Set Transformer: A Framework for Attention-based
          Permutation-Invariant Neural Networks", ICML 2019.
    """
