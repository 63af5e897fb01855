"""Tests for keras_msets.ops.products."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_msets.ops.products import matmul_last_axis

pytestmark = pytest.mark.filterwarnings(
    "ignore:__array__ implementation doesn't accept a copy keyword"
)


@pytest.mark.parametrize("shape", [(5,), (2, 5), (2, 3, 5), (2, 3, 4, 5)])
def test_matmul_last_axis_equals_matmul(shape):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape).astype("float32")
    kernel = rng.normal(size=(5, 7)).astype("float32")
    out = ops.convert_to_numpy(matmul_last_axis(ops.array(x), kernel))
    assert out.shape == shape[:-1] + (7,)
    np.testing.assert_allclose(out, x @ kernel, rtol=1e-5, atol=1e-5)
    symbolic = matmul_last_axis(keras.KerasTensor((None,) + shape[1:]), kernel)
    expected = (None,) + shape[1:-1] + (7,) if len(shape) > 1 else (7,)
    assert symbolic.shape == expected


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="TensorFlow's graphs"
)
def test_matmul_last_axis_in_a_graph_with_unknown_sizes():
    import tensorflow as tf

    kernel = tf.constant(np.arange(12, dtype="float32").reshape(3, 4))
    spec = tf.TensorSpec([None, None, 3], tf.float32)
    traced = tf.function(lambda x: matmul_last_axis(x, kernel))
    graph = traced.get_concrete_function(spec).graph
    plain = tf.function(lambda x: ops.matmul(x, kernel))
    plain_graph = plain.get_concrete_function(spec).graph
    # A reshape, one product and a reshape back: 18 ops, where Keras's
    # tf.tensordot builds 24.
    assert len(graph.get_operations()) < len(plain_graph.get_operations())
    assert graph.outputs[0].shape.as_list() == [None, None, 4]
    x = np.ones((2, 6, 3), "float32")
    np.testing.assert_allclose(traced(x).numpy(), x @ kernel.numpy())
