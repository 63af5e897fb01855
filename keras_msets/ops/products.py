"""Matrix products of a batch of vectors with one matrix."""

import keras
from keras import ops


def matmul_last_axis(x, kernel):
    """`ops.matmul(x, kernel)` for a matrix `kernel`: `x`'s last axis times it.

    The same values as `ops.matmul`. On TensorFlow, Keras's `matmul` of an
    `x` of rank 3 or more with a matrix is `tf.tensordot`, which builds a
    reshape, one matrix product and a reshape out of many small shape ops;
    here they are written directly: `x` flattened to `[-1, k]`, one matrix
    product, and the leading axes restored. That is what TensorFlow traces
    for every dense projection of the set blocks: 20 graph ops instead of
    26 per product, so their graphs trace faster; eager calls cost the
    same (`benchmarks/tensorflow_matmul_ops.py`). The other backends,
    symbolic inputs and `x` of rank 2 or less use `ops.matmul`.
    """
    if (
        keras.backend.backend() != "tensorflow"
        or isinstance(x, keras.KerasTensor)
        or len(x.shape) <= 2
        or len(kernel.shape) != 2
    ):
        return ops.matmul(x, kernel)
    leading = ops.shape(x)[:-1]
    flat = ops.reshape(x, (-1, kernel.shape[0]))
    return ops.reshape(ops.matmul(flat, kernel), (*leading, kernel.shape[1]))
