"""`TestCase`, the base class of every keras_msets test.

Its assertions come from three modules: `comparisons` (close / equal
structures of tensors), `set_properties` (permutation and padding
invariance) and `golden` (stored outputs every backend reproduces);
`run_layer_test` runs the checks of `layer_checks`. Nothing here imports
TensorFlow, JAX or PyTorch, so the same test runs on every backend.
"""

import os
import shutil
import tempfile
import unittest

import keras
import numpy as np

from keras_msets.testing.comparisons import assert_all_close
from keras_msets.testing.comparisons import assert_all_equal
from keras_msets.testing.comparisons import map_structure
from keras_msets.testing.comparisons import to_numpy
from keras_msets.testing.comparisons import to_numpy_structure
from keras_msets.testing.layer_checks import check_eager_call
from keras_msets.testing.layer_checks import check_serialization
from keras_msets.testing.layer_checks import check_symbolic_call
from keras_msets.testing.layer_checks import check_training
from keras_msets.testing.layer_checks import is_functional
from keras_msets.testing.set_properties import assert_padding_invariant
from keras_msets.testing.set_properties import assert_permutation_equivariant
from keras_msets.testing.set_properties import assert_permutation_invariant

# Default of arguments for which None is a meaningful value.
NOT_GIVEN = object()


class TestCase(unittest.TestCase):
    """Base class of keras_msets tests (works with pytest and unittest)."""

    maxDiff = None

    def get_temp_dir(self):
        """A fresh temporary directory, removed when the test ends."""
        path = tempfile.mkdtemp(prefix="keras_msets_test_")
        self.addCleanup(shutil.rmtree, path, ignore_errors=True)
        return path

    def assertAllClose(self, x, y, atol=1e-6, rtol=1e-6, msg=None):
        assert_all_close(x, y, atol=atol, rtol=rtol, msg=msg)

    def assertAllEqual(self, x, y, msg=None):
        assert_all_equal(x, y, msg=msg)

    def assertNotAllClose(self, x, y, atol=1e-6, rtol=1e-6, msg=None):
        try:
            assert_all_close(x, y, atol=atol, rtol=rtol)
        except AssertionError:
            return
        raise AssertionError(msg or "The two values are all close.")

    # Set properties ---------------------------------------------------------

    def assert_permutation_invariant(self, fn, inputs, masks=None, **kwargs):
        assert_permutation_invariant(fn, inputs, masks, **kwargs)

    def assert_permutation_equivariant(self, fn, inputs, masks=None, **kwargs):
        assert_permutation_equivariant(fn, inputs, masks, **kwargs)

    def assert_padding_invariant(self, fn, inputs, masks=None, **kwargs):
        assert_padding_invariant(fn, inputs, masks, **kwargs)

    # Golden outputs ---------------------------------------------------------

    def assert_golden(self, name, atol=1e-5, cases=None, directory=None):
        from keras_msets.testing import golden

        golden.check_golden(name, atol=atol, cases=cases, directory=directory)

    def assert_cross_backend_load(
        self, name, atol=1e-5, cases=None, directory=None
    ):
        from keras_msets.testing import golden

        golden.check_cross_backend_load(
            name, atol=atol, cases=cases, directory=directory
        )

    # Layers -----------------------------------------------------------------

    def run_layer_test(
        self,
        layer_cls,
        init_kwargs,
        input_data,
        expected_output_shape=None,
        expected_output_dtype=None,
        expected_num_trainable_weights=None,
        expected_num_non_trainable_weights=None,
        expected_num_seed_generators=None,
        input_mask=None,
        expected_output_mask=NOT_GIVEN,
        supports_masking=None,
        call_kwargs=None,
        run_training_check=True,
        run_symbolic_check=True,
        custom_objects=None,
        allow_unchanged_weights=(),
        registered_package="keras_msets",
    ):
        """Runs the checks every layer must pass.

        1. Serialization: `get_config()` holds every init kwarg, and
           `from_config` and `serialize_keras_object` round trips give the
           same config; the class is registered under `registered_package`
           (None skips that check).
        2. Eager call on `input_data` (one array, a list/tuple of arrays or
           a dict; `input_mask` is passed as `mask=`): output shapes (None
           matches anything), dtype and weight counts.
        3. Symbolic call on `keras.Input`s with batch None: shapes agree with
           the eager call and with `compute_output_shape` if defined.
        4. One `fit` step in a functional model with an mse loss per output:
           the loss is finite and every trainable weight changed, except
           those whose name or path is in `allow_unchanged_weights`.
        5. Masking: `layer.supports_masking == supports_masking` and
           `layer.compute_mask(input_data, input_mask)` equals
           `expected_output_mask`, when those are given (an
           `expected_output_mask` of None asserts that no mask comes out).
        """
        init_kwargs = dict(init_kwargs or {})
        call_kwargs = dict(call_kwargs or {})
        custom_objects = custom_objects or {}
        name = layer_cls.__name__
        with keras.saving.custom_object_scope(custom_objects):
            check_serialization(
                layer_cls, init_kwargs, custom_objects, registered_package
            )
            expected = {
                "output_shape": expected_output_shape,
                "output_dtype": expected_output_dtype,
                "num_trainable_weights": expected_num_trainable_weights,
                "num_non_trainable_weights": expected_num_non_trainable_weights,
                "num_seed_generators": expected_num_seed_generators,
            }
            case = (layer_cls, init_kwargs, input_data, input_mask, call_kwargs)
            layer, shapes = check_eager_call(*case, expected)
            if run_symbolic_check:
                check_symbolic_call(*case, shapes)
            if run_training_check:
                check_training(*case, allow_unchanged_weights)
            if supports_masking is not None:
                self.assertEqual(
                    layer.supports_masking,
                    supports_masking,
                    f"{name}.supports_masking is {layer.supports_masking}, "
                    f"expected {supports_masking}.",
                )
            if expected_output_mask is not NOT_GIVEN:
                mask = layer.compute_mask(
                    map_structure(keras.ops.convert_to_tensor, input_data),
                    None
                    if input_mask is None
                    else map_structure(keras.ops.convert_to_tensor, input_mask),
                )
                assert_all_equal(
                    mask,
                    expected_output_mask,
                    msg=f"{name}.compute_mask(inputs, mask) is not the "
                    "expected output mask.",
                )

    def run_model_saving_test(
        self, model, input_data, atol=1e-6, custom_objects=None
    ):
        """Saves `model` as .keras, reloads it (safe mode), compares outputs.

        Returns the reloaded model.
        """
        expected = to_numpy_structure(model(input_data, training=False))
        path = os.path.join(self.get_temp_dir(), "model.keras")
        model.save(path)
        reloaded = keras.saving.load_model(
            path, custom_objects=custom_objects, safe_mode=True
        )
        _assert_outputs(
            reloaded,
            input_data,
            expected,
            atol,
            "The reloaded .keras model gives different outputs.",
        )
        return reloaded

    def run_weights_roundtrip_test(
        self, model, input_data, atol=1e-6, custom_objects=None
    ):
        """`save_weights` then `load_weights` into a model made from config.

        The fresh model (built from `model.get_config()` by the same class,
        or `keras.Model.from_config` for functional models) has its weights
        redrawn from numpy, so its outputs must differ from the original's
        before loading (unless it has no weights) and equal them after.
        Returns the fresh model.
        """
        expected = to_numpy_structure(model(input_data, training=False))
        path = os.path.join(self.get_temp_dir(), "model.weights.h5")
        model.save_weights(path)
        with keras.saving.custom_object_scope(custom_objects or {}):
            config = model.get_config()
            if isinstance(model, keras.Sequential):
                fresh = keras.Sequential.from_config(config)
            elif is_functional(model):
                fresh = keras.Model.from_config(config)
            else:
                fresh = model.__class__.from_config(config)
        fresh(input_data, training=False)
        rng = np.random.default_rng(0)
        float_weights = [
            w for w in fresh.weights if keras.backend.is_float_dtype(w.dtype)
        ]
        for w in float_weights:
            value = to_numpy(w)
            w.assign(value + rng.uniform(0.1, 0.5, size=value.shape))
        if float_weights:
            try:
                _assert_outputs(fresh, input_data, expected, atol)
            except AssertionError:
                pass
            else:
                raise AssertionError(
                    "The fresh model gives the original outputs before "
                    "load_weights, even with redrawn weights: the round "
                    "trip would pass vacuously."
                )
        fresh.load_weights(path)
        _assert_outputs(
            fresh,
            input_data,
            expected,
            atol,
            "After load_weights the fresh model gives different outputs.",
        )
        return fresh


def _assert_outputs(model, input_data, expected, atol, msg=None):
    """`model(input_data)` (inference) is within `atol` of `expected`."""
    actual = to_numpy_structure(model(input_data, training=False))
    assert_all_close(actual, expected, atol=atol, rtol=atol, msg=msg)
