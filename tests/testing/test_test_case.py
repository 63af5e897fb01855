"""Tests of `keras_msets.testing.TestCase`: it passes good code, fails bad."""

import keras
import numpy as np
import pytest

from keras_msets import testing
from keras_msets.testing import TestCase

PACKAGE = "keras_msets_tests"


# --------------------------------------------------------------------------
# Toy layers: one correct, several broken on purpose.
# --------------------------------------------------------------------------


@keras.saving.register_keras_serializable(package=PACKAGE)
class ToySetDense(keras.layers.Layer):
    """Per-element affine map of a set; passes the mask through."""

    def __init__(self, units, use_bias=True, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.use_bias = use_bias
        self.supports_masking = True

    def build(self, input_shape):
        self.kernel = self.add_weight(
            shape=(input_shape[-1], self.units), name="kernel"
        )
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(self.units,), initializer="zeros", name="bias"
            )

    def call(self, x, mask=None):
        y = keras.ops.matmul(x, self.kernel)
        if self.use_bias:
            y = y + self.bias
        return y

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units, "use_bias": self.use_bias})
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class ToyPairPool(keras.layers.Layer):
    """Two masked sets in, two pooled vectors out."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.dense_a = keras.layers.Dense(self.units, name="dense_a")
        self.dense_b = keras.layers.Dense(self.units, name="dense_b")
        self.dense_a.build(input_shape[0])
        self.dense_b.build(input_shape[1])

    def call(self, inputs, mask=None):
        pooled = []
        for x, m, dense in zip(
            inputs, mask, (self.dense_a, self.dense_b), strict=True
        ):
            m = keras.ops.cast(m, x.dtype)[..., None]
            total = keras.ops.sum(dense(x) * m, axis=1)
            pooled.append(total / keras.ops.maximum(keras.ops.sum(m, 1), 1.0))
        return pooled

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class ForgetsConfig(ToySetDense):
    def get_config(self):
        config = super().get_config()
        del config["use_bias"]
        return config


@keras.saving.register_keras_serializable(package=PACKAGE)
class DeadWeight(ToySetDense):
    def build(self, input_shape):
        super().build(input_shape)
        self.unused = self.add_weight(shape=(3,), name="unused")


@keras.saving.register_keras_serializable(package=PACKAGE)
class WrongOutputShape(ToySetDense):
    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units + 1,)


class NotRegistered(ToySetDense):
    pass


@keras.saving.register_keras_serializable(package=PACKAGE)
class ZeroOut(keras.layers.Layer):
    def call(self, x):
        return x * 0.0


def _set_data(batch=3, n=5, d=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, n, d)).astype("float32")
    mask = rng.random((batch, n)) < 0.7
    mask[:, 0] = True
    return x, mask


class RunLayerTestTest(TestCase):
    def test_correct_layer_passes(self):
        x, mask = _set_data()
        self.run_layer_test(
            ToySetDense,
            {"units": 6, "use_bias": True},
            x,
            input_mask=mask,
            expected_output_shape=(3, 5, 6),
            expected_output_dtype="float32",
            expected_num_trainable_weights=2,
            expected_num_non_trainable_weights=0,
            expected_num_seed_generators=0,
            supports_masking=True,
            expected_output_mask=mask,
            registered_package=PACKAGE,
        )

    def test_multi_set_layer_passes(self):
        a, mask_a = _set_data(n=5, seed=1)
        b, mask_b = _set_data(n=3, d=2, seed=2)
        self.run_layer_test(
            ToyPairPool,
            {"units": 2},
            [a, b],
            input_mask=[mask_a, mask_b],
            expected_output_shape=[(3, 2), (None, 2)],
            expected_num_trainable_weights=4,
            expected_output_mask=None,
            registered_package=PACKAGE,
        )

    def test_missing_config_key_fails(self):
        x, _ = _set_data()
        with self.assertRaisesRegex(AssertionError, "use_bias"):
            self.run_layer_test(
                ForgetsConfig,
                {"units": 2, "use_bias": False},
                x,
                registered_package=PACKAGE,
            )

    def test_unchanged_weight_fails(self):
        x, _ = _set_data()
        with self.assertRaisesRegex(AssertionError, "unused"):
            self.run_layer_test(
                DeadWeight, {"units": 2}, x, registered_package=PACKAGE
            )
        # ...unless that weight is allowed to stay put.
        self.run_layer_test(
            DeadWeight,
            {"units": 2},
            x,
            allow_unchanged_weights=("unused",),
            registered_package=PACKAGE,
        )

    def test_wrong_compute_output_shape_fails(self):
        x, _ = _set_data()
        with self.assertRaisesRegex(AssertionError, "compute_output_shape"):
            self.run_layer_test(
                WrongOutputShape, {"units": 2}, x, registered_package=PACKAGE
            )

    def test_wrong_expected_shape_fails(self):
        x, _ = _set_data()
        with self.assertRaisesRegex(AssertionError, "output shape"):
            self.run_layer_test(
                ToySetDense,
                {"units": 2},
                x,
                expected_output_shape=(3, 5, 3),
                registered_package=PACKAGE,
            )

    def test_wrong_weight_count_fails(self):
        x, _ = _set_data()
        with self.assertRaisesRegex(AssertionError, "trainable weights"):
            self.run_layer_test(
                ToySetDense,
                {"units": 2},
                x,
                expected_num_trainable_weights=3,
                run_training_check=False,
                registered_package=PACKAGE,
            )

    def test_wrong_output_mask_fails(self):
        x, mask = _set_data()
        with self.assertRaisesRegex(AssertionError, "compute_mask"):
            self.run_layer_test(
                ToySetDense,
                {"units": 2},
                x,
                input_mask=mask,
                expected_output_mask=None,
                run_training_check=False,
                registered_package=PACKAGE,
            )

    def test_unregistered_layer_fails(self):
        x, _ = _set_data()
        with self.assertRaisesRegex(AssertionError, "not registered"):
            self.run_layer_test(
                NotRegistered,
                {"units": 2},
                x,
                registered_package=PACKAGE,
                custom_objects={"NotRegistered": NotRegistered},
            )

    def test_default_package_is_keras_msets(self):
        x, _ = _set_data()
        with self.assertRaisesRegex(AssertionError, "keras_msets"):
            self.run_layer_test(ToySetDense, {"units": 2}, x)


def _toy_model(zero_output=False):
    inputs = keras.Input(shape=(5, 4))
    h = ToySetDense(3, name="toy")(inputs)
    out = keras.layers.Dense(2, name="head")(h)
    if zero_output:
        out = ZeroOut(name="zero")(out)
    return keras.Model(inputs, out)


class ModelSavingTest(TestCase):
    def test_saving_round_trip(self):
        x, _ = _set_data()
        model = _toy_model()
        reloaded = self.run_model_saving_test(model, x)
        self.assertIsInstance(reloaded, keras.Model)

    def test_weights_round_trip(self):
        x, _ = _set_data()
        self.run_weights_roundtrip_test(_toy_model(), x)

    def test_weights_round_trip_refuses_vacuous_pass(self):
        x, _ = _set_data()
        with self.assertRaisesRegex(AssertionError, "vacuous"):
            self.run_weights_roundtrip_test(_toy_model(zero_output=True), x)

    def test_temp_dir_is_removed(self):
        import os

        inner = TestCase("setUp")
        path = inner.get_temp_dir()
        self.assertTrue(os.path.isdir(path))
        inner.doCleanups()
        self.assertFalse(os.path.exists(path))


class AssertAllCloseTest(TestCase):
    def test_nested(self):
        a = {"x": [np.ones(3), keras.ops.zeros((2,))], "y": None}
        b = {"x": [np.ones(3) + 1e-8, np.zeros(2)], "y": None}
        self.assertAllClose(a, b)
        with self.assertRaisesRegex(AssertionError, r"\['x'\]\[1\]"):
            self.assertAllClose(a, {"x": [np.ones(3), np.ones(2)], "y": None})
        with self.assertRaises(AssertionError):
            self.assertAllClose([np.ones(3)], [np.ones(3), np.ones(3)])
        with self.assertRaises(AssertionError):
            self.assertAllEqual(np.arange(3), np.arange(3) + 1)
        self.assertAllEqual(keras.ops.arange(3), np.arange(3))


# --------------------------------------------------------------------------
# Set properties.
# --------------------------------------------------------------------------


def masked_sum(x, mask=None):
    if mask is None:
        return keras.ops.sum(x, axis=1)
    return keras.ops.sum(x * keras.ops.cast(mask, x.dtype)[..., None], axis=1)


def first_element(x, mask=None):
    return x[:, 0]


def plain_sum(x, mask=None):
    return keras.ops.sum(x, axis=1)


def masked_center(x, mask):
    m = keras.ops.cast(mask, x.dtype)[..., None]
    mean = keras.ops.sum(x * m, axis=1, keepdims=True) / keras.ops.maximum(
        keras.ops.sum(m, axis=1, keepdims=True), 1.0
    )
    return x - mean


def unmasked_center(x, mask):
    return x - keras.ops.mean(x, axis=1, keepdims=True)


def cumulative(x, mask=None):
    return keras.ops.cumsum(x, axis=1)


def two_set_sum(inputs, masks):
    return masked_sum(inputs[0], masks[0]) + masked_sum(inputs[1], masks[1])


def two_set_paired(inputs, masks):
    # Pairs the i-th element of one set with the i-th of the other.
    return keras.ops.sum(inputs[0][:, :3] * inputs[1][:, :3], axis=1)


def two_set_center(inputs, masks):
    return [masked_center(x, m) for x, m in zip(inputs, masks, strict=True)]


class SetPropertiesTest(TestCase):
    def setUp(self):
        self.x, self.mask = _set_data(batch=4, n=6, d=3)
        self.y, self.mask_y = _set_data(batch=4, n=4, d=3, seed=5)

    def test_invariance(self):
        self.assert_permutation_invariant(masked_sum, self.x)
        self.assert_permutation_invariant(masked_sum, self.x, self.mask)
        with self.assertRaisesRegex(AssertionError, "not permutation inv"):
            self.assert_permutation_invariant(first_element, self.x)
        with self.assertRaises(AssertionError):
            self.assert_permutation_invariant(first_element, self.x, self.mask)

    def test_equivariance(self):
        self.assert_permutation_equivariant(masked_center, self.x, self.mask)
        with self.assertRaisesRegex(AssertionError, "not permutation equi"):
            self.assert_permutation_equivariant(cumulative, self.x)

    def test_padding(self):
        testing.assert_padding_invariant(masked_sum, self.x, self.mask)
        testing.assert_padding_invariant(masked_sum, self.x)
        testing.assert_padding_invariant(
            masked_center, self.x, self.mask, equivariant=True
        )
        with self.assertRaisesRegex(AssertionError, "padding"):
            testing.assert_padding_invariant(plain_sum, self.x, self.mask)
        with self.assertRaisesRegex(AssertionError, "valid positions"):
            testing.assert_padding_invariant(
                unmasked_center, self.x, self.mask, equivariant=True
            )
        # Ignoring the mask is caught even when nothing was padded before.
        with self.assertRaises(AssertionError):
            testing.assert_padding_invariant(plain_sum, self.x)

    def test_multi_set(self):
        sets, masks = [self.x, self.y], [self.mask, self.mask_y]
        self.assert_permutation_invariant(two_set_sum, sets, masks)
        self.assert_padding_invariant(two_set_sum, sets, masks)
        self.assert_permutation_equivariant(two_set_center, sets, masks)
        self.assert_padding_invariant(
            two_set_center, sets, masks, equivariant=True
        )
        with self.assertRaises(AssertionError):
            self.assert_permutation_invariant(two_set_paired, sets, masks)

    def test_multi_set_permutations_are_independent(self):
        # Invariant only under the SAME permutation of both sets: must fail.
        x = self.x
        sets = [x, x * 2.0]

        def same_order(inputs):
            return keras.ops.sum(inputs[0] * inputs[1], axis=1)

        with self.assertRaises(AssertionError):
            self.assert_permutation_invariant(same_order, sets)

    def test_layer_as_fn(self):
        layer = keras.layers.GlobalAveragePooling1D()
        self.assert_permutation_invariant(layer, self.x, self.mask)
        self.assert_padding_invariant(layer, self.x, self.mask)

    def test_bad_mask_shape(self):
        with pytest.raises(ValueError, match="Mask 0"):
            testing.assert_permutation_invariant(
                masked_sum, self.x, self.mask[:, :2]
            )
