import keras
import numpy as np
import pytest

from keras_msets import layers
from keras_msets import testing

NUMPY = {
    "sum": (np.sum, 0.0),
    "mean": (np.mean, 0.0),
    "max": (np.max, 0.0),
    "product": (np.prod, 1.0),
}


def _sets(batch=4, n=6, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, n, d)).astype("float32")
    mask = rng.random((batch, n)) < 0.6
    mask[0] = False  # one empty set
    mask[1, 0] = True
    return x, mask


class MaskedSetPoolingTest(testing.TestCase):
    def test_layer_basics(self):
        x, mask = _sets()
        self.run_layer_test(
            layers.MaskedSetPooling,
            {"reduction": "mean"},
            x,
            input_mask=mask,
            expected_output_shape=(4, 3),
            expected_num_trainable_weights=0,
            supports_masking=True,
            expected_output_mask=None,
            run_training_check=False,  # no weights to train
        )

    def test_matches_numpy(self):
        for reduction in NUMPY:
            self._check_numpy(reduction)

    def _check_numpy(self, reduction):
        x, mask = _sets()
        out = keras.ops.convert_to_numpy(
            layers.MaskedSetPooling(reduction)(x, mask=mask)
        )
        reduce, empty = NUMPY[reduction]
        for i in range(len(x)):
            valid = x[i][mask[i]].astype("float64")
            expected = reduce(valid, axis=0) if len(valid) else empty
            self.assertAllClose(out[i], np.broadcast_to(expected, (3,)))

    def test_set_properties(self):
        x, mask = _sets(seed=1)
        for reduction in NUMPY:
            layer = layers.MaskedSetPooling(reduction)

            def fn(inputs, masks, layer=layer):
                return layer(inputs, mask=masks)

            self.assert_permutation_invariant(fn, x, mask)
            self.assert_padding_invariant(fn, x, mask)

    def test_empty_sets_give_the_documented_value(self):
        # set_size 0 (no mask) is the same empty set as an all-masked one.
        empty = np.zeros((2, 0, 3), "float32")
        for reduction, (_, value) in NUMPY.items():
            out = layers.MaskedSetPooling(reduction)(empty)
            self.assertEqual(tuple(out.shape), (2, 3))
            self.assertAllEqual(out, np.full((2, 3), value))

    def test_keras_mask_from_embedding(self):
        ids = np.array([[1, 2, 0, 0], [3, 0, 0, 0]], "int32")
        tokens = keras.Input((None,), dtype="int32")
        embedded = keras.layers.Embedding(4, 2, mask_zero=True)(tokens)
        model = keras.Model(tokens, layers.MaskedSetPooling("sum")(embedded))
        table = keras.ops.convert_to_numpy(model.layers[1].embeddings)
        expected = np.stack([table[1] + table[2], table[3]])
        self.assertAllClose(model(ids), expected)

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="reduction.*'median'"):
            layers.MaskedSetPooling("median")
