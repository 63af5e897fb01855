"""The attention kernels of the set blocks give the same numbers.

`SetMultiHeadAttention` (the attention of every `MultiheadAttentionBlock`)
computes either the backend's `dot_product_attention` or plain matmul +
softmax, chosen by shape; both must agree, masked, all-masked and in
their gradients, on every backend.
"""

import keras
import numpy as np
import pytest

from keras_msets.layers import _set_multi_head_attention as kernels
from keras_msets.layers._multihead_attention_block import (
    MultiheadAttentionBlock,
)

TOLERANCE = 1e-5


def _inputs(seed=0, batch=4, n_q=5, n_k=7, dim=8):
    rng = np.random.default_rng(seed)
    query = rng.normal(size=(batch, n_q, dim)).astype("float32")
    value = rng.normal(size=(batch, n_k, dim)).astype("float32")
    mask = rng.random((batch, n_k)) < 0.6
    mask[0] = True  # a full set
    mask[1, 0] = True
    mask[2] = False  # an all-masked set
    mask[3, :2] = True
    return query, value, mask


def _block(seed=0, dropout=0.0):
    keras.utils.set_random_seed(seed)
    block = MultiheadAttentionBlock(num_heads=2, ff_dim=12, dropout=dropout)
    block.build((None, None, 8), (None, None, 8))
    return block


def _with_gradients(block, query, value, mask):
    """The block's output and the gradients of a loss on it by its inputs."""
    backend = keras.backend.backend()

    def loss(q, v):
        out = block(q, v, value_mask=mask)
        return keras.ops.sum(out * keras.ops.sin(out)), out

    if backend == "jax":
        import jax

        gradient = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)
        (_, out), grads = gradient(query, value)
    elif backend == "tensorflow":
        import tensorflow as tf

        q, v = tf.constant(query), tf.constant(value)
        with tf.GradientTape() as tape:
            tape.watch([q, v])
            total, out = loss(q, v)
        grads = tape.gradient(total, [q, v])
    else:
        import torch

        q = torch.tensor(query, requires_grad=True)
        v = torch.tensor(value, requires_grad=True)
        total, out = loss(q, v)
        grads = torch.autograd.grad(total, [q, v])
    return [keras.ops.convert_to_numpy(t) for t in (out, *grads)]


@pytest.fixture(params=["fused", "plain"])
def forced_kernel(request, monkeypatch):
    """Forces one kernel for every shape; yields its name."""
    plain = request.param == "plain"
    monkeypatch.setattr(
        kernels, "use_plain_kernel", lambda *args, **kwargs: plain
    )
    return request.param


def _run_both(monkeypatch, fn):
    results = {}
    for kernel in ("fused", "plain"):
        plain = kernel == "plain"
        monkeypatch.setattr(
            kernels, "use_plain_kernel", lambda *args, plain=plain, **kw: plain
        )
        results[kernel] = fn()
    return results


def test_kernels_agree_on_outputs_and_gradients(monkeypatch):
    query, value, mask = _inputs()
    block = _block()
    results = _run_both(
        monkeypatch, lambda: _with_gradients(block, query, value, mask)
    )
    for name, fused, plain in zip(
        ("output", "query gradient", "value gradient"),
        results["fused"],
        results["plain"],
        strict=True,
    ):
        assert np.all(np.isfinite(fused)), name
        np.testing.assert_allclose(
            plain, fused, atol=TOLERANCE, rtol=0, err_msg=name
        )
    # The padded keys and the all-masked set's keys get no gradient.
    value_gradient = results["plain"][2]
    assert np.all(value_gradient[~mask] == 0.0)


def test_all_masked_set_is_the_no_key_result(forced_kernel):
    """An all-masked set's output is `MAB` with attention term 0."""
    query, value, mask = _inputs()
    block = _block()
    out = keras.ops.convert_to_numpy(block(query, value, value_mask=mask))
    norm = block.attention_norm(keras.ops.convert_to_tensor(query))
    expected = keras.ops.convert_to_numpy(block.feed_forward(norm))
    np.testing.assert_allclose(out[2], expected[2], atol=TOLERANCE, rtol=0)
    # Changing the padded values changes nothing.
    noisy = np.where(mask[..., None], value, 1e6).astype("float32")
    again = keras.ops.convert_to_numpy(block(query, noisy, value_mask=mask))
    np.testing.assert_allclose(again, out, atol=TOLERANCE, rtol=0)


def test_dropout_acts_in_training_only(forced_kernel):
    query, value, mask = _inputs()
    block = _block(dropout=0.5)
    inference = keras.ops.convert_to_numpy(block(query, value, mask))
    training = keras.ops.convert_to_numpy(
        block(query, value, mask, training=True)
    )
    assert np.all(np.isfinite(training))
    assert np.max(np.abs(training[0] - inference[0])) > 1e-3
    # Without training, dropout is off: the result of the same weights
    # with no dropout at all.
    plain = _block(dropout=0.0)
    plain.set_weights(block.get_weights())
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(plain(query, value, mask)),
        inference,
        atol=TOLERANCE,
        rtol=0,
    )


def test_same_weight_paths_as_keras_multi_head_attention():
    block = _block()
    assert isinstance(block.attention, keras.layers.MultiHeadAttention)
    keras.utils.set_random_seed(0)
    reference = keras.layers.MultiHeadAttention(2, 4, name="attention")
    reference.build((None, None, 8), (None, None, 8))
    assert [v.path for v in block.attention.weights] == [
        f"{block.name}/{v.path}" for v in reference.weights
    ]


@pytest.mark.parametrize(
    "num_queries, num_keys, on_cpu, on_gpu",
    [
        (1, 10000, False, True),  # one pooling seed over many keys
        (4, 4000, False, True),
        (1, 2000, False, False),
        (16, 10000, False, True),  # inducing points over many keys
        (17, 10000, False, False),
        (1000, 16, True, False),  # elements over 16 inducing points
        (4000, 8, True, True),
        (200, 8, False, False),
        (100, 16, False, False),
        (1000, 1000, False, False),
        (None, 10000, False, False),  # unknown size: the fused kernel
        (1, None, False, False),
    ],
)
def test_kernel_rule(num_queries, num_keys, on_cpu, on_gpu):
    rule = kernels.use_plain_kernel
    assert rule(num_queries, num_keys, "torch") is on_cpu
    assert rule(num_queries, num_keys, "torch", on_gpu=True) is on_gpu
    for backend in ("jax", "tensorflow"):
        assert not rule(num_queries, num_keys, backend, on_gpu=True)


def test_folded_keys_agree_on_outputs_and_gradients(monkeypatch):
    """Few queries: the attention on the keys' inputs (`fold_keys`) is the
    attention on the projected keys, masked, all-masked and in gradients."""
    query, value, mask = _inputs(n_q=2)
    block = _block()
    results = {}
    for folded in (True, False):
        monkeypatch.setattr(
            kernels, "folds_keys", lambda *args, folded=folded: folded
        )
        results[folded] = _with_gradients(block, query, value, mask)
    for name, folded, projected in zip(
        ("output", "query gradient", "value gradient"),
        results[True],
        results[False],
        strict=True,
    ):
        assert np.all(np.isfinite(folded)), name
        np.testing.assert_allclose(
            folded, projected, atol=TOLERANCE, rtol=0, err_msg=name
        )
    assert np.all(results[True][2][~mask] == 0.0)


@pytest.mark.parametrize(
    "num_queries, num_keys, key_dim, folds",
    [
        (1, 10000, 32, True),  # one pooling seed
        (16, 100, 32, True),  # inducing points
        (17, 100, 32, False),
        (2, 2, 32, False),  # no more keys than queries
        (None, 100, 32, False),
        (1, None, 32, False),
    ],
)
def test_fold_rule(num_queries, num_keys, key_dim, folds):
    assert kernels.folds_keys(num_queries, num_keys, key_dim) is folds


def test_quantized_blocks_call_their_sub_layers(monkeypatch):
    """int8 kernels are left to the layers' own calls (`writes_out`)."""
    from keras_msets import layers
    from keras_msets.layers import _feed_forward_block
    from keras_msets.layers import _multihead_attention_block

    x = _inputs()[1]
    block = layers.PoolingByMultiheadAttention(num_heads=2)
    block.build(x.shape)
    for layer in block._flatten_layers():
        if isinstance(layer, (keras.layers.Dense, keras.layers.EinsumDense)):
            layer.quantize("int8")
    out = keras.ops.convert_to_numpy(block(x))
    for module in (_feed_forward_block, _multihead_attention_block, kernels):
        monkeypatch.setattr(module, "writes_out", lambda *layers: False)
    called = keras.ops.convert_to_numpy(block(x))
    np.testing.assert_array_equal(out, called)
