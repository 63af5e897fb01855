"""`TestCase` and the set-property assertions shared by every test.

Nothing here imports TensorFlow, JAX or PyTorch: the helpers go through
`keras.ops` and numpy only, so the same test runs on every backend.
"""

import os
import shutil
import tempfile
import unittest

import keras
import numpy as np

# Default of arguments for which None is a meaningful value.
NOT_GIVEN = object()

# --------------------------------------------------------------------------
# Structures and comparisons.
# --------------------------------------------------------------------------


def _to_numpy(x):
    """Converts a tensor (any backend, any device) or array-like to numpy."""
    if x is None or isinstance(x, np.ndarray):
        return x
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return np.asarray(x)
    if isinstance(x, keras.Variable):
        x = x.value
    return np.asarray(keras.ops.convert_to_numpy(x))


def _map(fn, structure):
    """Applies `fn` to the leaves of nested lists, tuples and dicts."""
    if isinstance(structure, dict):
        return {k: _map(fn, v) for k, v in structure.items()}
    if isinstance(structure, (list, tuple)):
        return type(structure)(_map(fn, v) for v in structure)
    return fn(structure)


def _to_numpy_structure(structure):
    return _map(_to_numpy, structure)


def _compare(x, y, path, compare_leaf):
    """Walks two structures in parallel; returns a failure string or None."""
    if isinstance(x, dict) or isinstance(y, dict):
        if not (isinstance(x, dict) and isinstance(y, dict)):
            return f"{path}: one side is a dict, the other is {type(y)}"
        if set(x) != set(y):
            return f"{path}: dict keys differ: {sorted(x)} vs {sorted(y)}"
        for k in x:
            failure = _compare(x[k], y[k], f"{path}[{k!r}]", compare_leaf)
            if failure:
                return failure
        return None
    if isinstance(x, (list, tuple)) or isinstance(y, (list, tuple)):
        if not (isinstance(x, (list, tuple)) and isinstance(y, (list, tuple))):
            # A plain (nested) list of numbers against a tensor is compared
            # as an array, like numpy.testing does.
            other = y if isinstance(x, (list, tuple)) else x
            if other is not None:
                return compare_leaf(_to_numpy(x), _to_numpy(y), path)
            return f"{path}: one side is a sequence, the other is not"
        if len(x) != len(y):
            return f"{path}: lengths differ: {len(x)} vs {len(y)}"
        for i, (a, b) in enumerate(zip(x, y, strict=True)):
            failure = _compare(a, b, f"{path}[{i}]", compare_leaf)
            if failure:
                return failure
        return None
    if x is None or y is None:
        if x is None and y is None:
            return None
        return f"{path}: one side is None, the other is not"
    return compare_leaf(_to_numpy(x), _to_numpy(y), path)


def _close_leaf(atol, rtol):
    def compare(a, b, path):
        if a.shape != b.shape:
            return f"{path}: shapes differ: {a.shape} vs {b.shape}"
        if a.dtype == bool or b.dtype == bool:
            a, b = a.astype(np.int8), b.astype(np.int8)
        a64 = a.astype(np.float64) if a.dtype.kind != "c" else a
        b64 = b.astype(np.float64) if b.dtype.kind != "c" else b
        close = np.isclose(a64, b64, atol=atol, rtol=rtol, equal_nan=True)
        if close.all():
            return None
        diff = np.abs(a64 - b64)
        diff = np.where(np.isnan(diff), np.inf, diff)
        worst = np.unravel_index(np.argmax(diff), diff.shape)
        return (
            f"{path}: {int((~close).sum())} of {close.size} elements differ "
            f"(atol={atol}, rtol={rtol}); largest |x - y| = "
            f"{diff[worst]:.3g} at index {tuple(int(i) for i in worst)} "
            f"(x={a64[worst]!r}, y={b64[worst]!r})"
        )

    return compare


def _equal_leaf(a, b, path):
    if a.shape != b.shape:
        return f"{path}: shapes differ: {a.shape} vs {b.shape}"
    equal = a == b
    if np.all(equal):
        return None
    first = np.argwhere(~np.asarray(equal))[0]
    index = tuple(int(i) for i in first)
    return (
        f"{path}: {int((~equal).sum())} of {equal.size} elements differ; "
        f"first at index {index} (x={a[index]!r}, y={b[index]!r})"
    )


def assert_all_close(x, y, atol=1e-6, rtol=1e-6, msg=None):
    """Asserts two (nested) structures of tensors/arrays are elementwise close.

    Tensors of any backend are converted with `keras.ops.convert_to_numpy`.
    """
    failure = _compare(x, y, "value", _close_leaf(atol, rtol))
    if failure:
        raise AssertionError(f"{msg}\n{failure}" if msg else failure)


def assert_all_equal(x, y, msg=None):
    """Asserts two (nested) structures of tensors/arrays are equal."""
    failure = _compare(x, y, "value", _equal_leaf)
    if failure:
        raise AssertionError(f"{msg}\n{failure}" if msg else failure)


def _flatten(structure):
    return keras.tree.flatten(structure)


def _pack(structure, flat):
    return keras.tree.pack_sequence_as(structure, flat)


# --------------------------------------------------------------------------
# Set properties: permutation invariance / equivariance, padding invariance.
# --------------------------------------------------------------------------


def _as_sets(inputs, masks):
    """Returns (list of numpy sets, list of numpy masks or None, is_multi)."""
    multi = isinstance(inputs, (list, tuple))
    sets = [_to_numpy(x) for x in (inputs if multi else [inputs])]
    if masks is None:
        mask_list = None
    else:
        mask_list = list(masks) if multi else [masks]
        if len(mask_list) != len(sets):
            raise ValueError(
                "`masks` must mirror `inputs`: one mask per set. Received "
                f"{len(sets)} sets and {len(mask_list)} masks."
            )
        mask_list = [_to_numpy(m).astype(bool) for m in mask_list]
        for i, (x, m) in enumerate(zip(sets, mask_list, strict=True)):
            if m.shape != x.shape[:2]:
                raise ValueError(
                    f"Mask {i} must have shape [batch, set_size] = "
                    f"{x.shape[:2]}. Received shape {m.shape}."
                )
    for i, x in enumerate(sets):
        if x.ndim < 2:
            raise ValueError(
                f"Set {i} must have shape [batch, set_size, ...]. "
                f"Received shape {x.shape}."
            )
    return sets, mask_list, multi


def _call_set_fn(fn, sets, masks, multi):
    """Calls `fn(inputs)` or `fn(inputs, masks)` with backend tensors."""
    inputs = [keras.ops.convert_to_tensor(x) for x in sets]
    inputs = inputs if multi else inputs[0]
    if masks is None:
        out = fn(inputs)
    else:
        mask_tensors = [keras.ops.convert_to_tensor(m) for m in masks]
        out = fn(inputs, mask_tensors if multi else mask_tensors[0])
    return _to_numpy_structure(out)


def _permute(x, perm):
    """Permutes axis 1 of `x [batch, n, ...]` by `perm [batch, n]` per row."""
    index = perm.reshape(perm.shape + (1,) * (x.ndim - 2))
    return np.take_along_axis(x, index, axis=1)


def _random_perms(rng, sets):
    return [
        np.stack([rng.permutation(x.shape[1]) for _ in range(x.shape[0])])
        for x in sets
    ]


def _describe(multi, draw):
    where = "per set, independently" if multi else "of the set axis"
    return f"under random permutation draw {draw} ({where})"


def assert_permutation_invariant(
    fn, inputs, masks=None, num_draws=3, atol=1e-5, seed=0
):
    """Asserts `fn`'s output does not change when set elements are reordered.

    Args:
        fn: callable, called as `fn(inputs)` when `masks` is None and as
            `fn(inputs, masks)` otherwise, with backend tensors.
        inputs: one set `[batch, n, ...]`, or a list of sets (multi-set
            input); each set is permuted independently, per batch row.
        masks: None, or boolean masks `[batch, n]` mirroring `inputs` (a
            tensor for one set, a list for a list of sets); each mask is
            permuted with its set.
        num_draws: number of random permutations tried.
        atol: absolute tolerance.
        seed: seed of the numpy generator drawing the permutations.
    """
    sets, mask_list, multi = _as_sets(inputs, masks)
    reference = _call_set_fn(fn, sets, mask_list, multi)
    rng = np.random.default_rng(seed)
    for draw in range(num_draws):
        perms = _random_perms(rng, sets)
        permuted = [_permute(x, p) for x, p in zip(sets, perms, strict=True)]
        permuted_masks = (
            None
            if mask_list is None
            else [_permute(m, p) for m, p in zip(mask_list, perms, strict=True)]
        )
        out = _call_set_fn(fn, permuted, permuted_masks, multi)
        assert_all_close(
            out,
            reference,
            atol=atol,
            rtol=atol,
            msg=f"Output is not permutation invariant {_describe(multi, draw)}",
        )


def assert_permutation_equivariant(
    fn, inputs, masks=None, num_draws=3, atol=1e-5, seed=0
):
    """Asserts that reordering set k's elements reorders output k the same way.

    `fn`'s output for a single set is a tensor `[batch, n, ...]`; for a list
    of sets it is a list aligned with the inputs. Arguments are as in
    `assert_permutation_invariant`.
    """
    sets, mask_list, multi = _as_sets(inputs, masks)
    reference = _call_set_fn(fn, sets, mask_list, multi)
    reference_list = list(reference) if multi else [reference]
    if len(reference_list) != len(sets):
        raise AssertionError(
            f"An equivariant function must return one output per set: got "
            f"{len(reference_list)} outputs for {len(sets)} sets."
        )
    rng = np.random.default_rng(seed)
    for draw in range(num_draws):
        perms = _random_perms(rng, sets)
        permuted = [_permute(x, p) for x, p in zip(sets, perms, strict=True)]
        permuted_masks = (
            None
            if mask_list is None
            else [_permute(m, p) for m, p in zip(mask_list, perms, strict=True)]
        )
        out = _call_set_fn(fn, permuted, permuted_masks, multi)
        out_list = list(out) if multi else [out]
        for k, (o, r, p) in enumerate(
            zip(out_list, reference_list, perms, strict=True)
        ):
            if o.shape[:2] != p.shape:
                raise AssertionError(
                    f"Output {k} has shape {o.shape}; an equivariant output "
                    f"must start with [batch, set_size] = {p.shape}."
                )
            expected = _permute(r, p)
            if mask_list is not None:
                # Padded positions may hold anything; compare valid ones.
                valid = _permute(mask_list[k], p)
                o, expected = o[valid], expected[valid]
            assert_all_close(
                o,
                expected,
                atol=atol,
                rtol=atol,
                msg=(
                    f"Output {k} is not permutation equivariant "
                    f"{_describe(multi, draw)}"
                ),
            )


def _garbage(rng, x, shape):
    """Large random values of `x`'s dtype, for padded positions."""
    if x.dtype == bool:
        return rng.integers(0, 2, size=shape).astype(bool)
    if np.issubdtype(x.dtype, np.integer):
        low, high = (int(x.min()), int(x.max())) if x.size else (0, 1)
        return rng.integers(low, high + 1, size=shape).astype(x.dtype)
    sign = rng.choice([-1.0, 1.0], size=shape)
    return (sign * rng.uniform(1e2, 1e3, size=shape)).astype(x.dtype)


def assert_padding_invariant(
    fn, inputs, masks=None, extra=3, equivariant=False, atol=1e-5, seed=0
):
    """Asserts that padded (masked-out) elements never change the result.

    Each set gets `extra` more elements filled with large random garbage
    (about ±1e3) and mask False; positions that were already padded are
    overwritten with garbage too. `fn` is always called as
    `fn(inputs, masks)` (all-True masks when `masks` is None).

    Args:
        fn: callable `fn(inputs, masks)`, see `assert_permutation_invariant`.
        inputs: one set `[batch, n, ...]` or a list of sets.
        masks: None or boolean masks `[batch, n]` mirroring `inputs`.
        extra: number of padded elements appended to each set.
        equivariant: if False the whole output must be unchanged; if True
            output k must be unchanged on set k's valid positions (the first
            n positions where the mask is True).
        atol: absolute tolerance.
        seed: seed of the numpy generator drawing the garbage.
    """
    sets, mask_list, multi = _as_sets(inputs, masks)
    if mask_list is None:
        mask_list = [np.ones(x.shape[:2], dtype=bool) for x in sets]
    reference = _call_set_fn(fn, sets, mask_list, multi)
    rng = np.random.default_rng(seed)
    padded_sets, padded_masks = [], []
    for x, m in zip(sets, mask_list, strict=True):
        padded_shape = (x.shape[0], x.shape[1] + extra) + x.shape[2:]
        garbage = _garbage(rng, x, padded_shape)
        keep = m.reshape(m.shape + (1,) * (x.ndim - 2))
        garbage[:, : x.shape[1]] = np.where(keep, x, garbage[:, : x.shape[1]])
        padded_sets.append(garbage)
        padded_masks.append(
            np.concatenate([m, np.zeros((m.shape[0], extra), bool)], axis=1)
        )
    out = _call_set_fn(fn, padded_sets, padded_masks, multi)
    what = f"{extra} garbage elements appended, padded positions overwritten"
    if not equivariant:
        assert_all_close(
            out,
            reference,
            atol=atol,
            rtol=atol,
            msg=f"Output changed when padding changed ({what})",
        )
        return
    out_list = list(out) if multi else [out]
    reference_list = list(reference) if multi else [reference]
    for k, (o, r, m) in enumerate(
        zip(out_list, reference_list, mask_list, strict=True)
    ):
        n = m.shape[1]
        if o.shape[:2] != (m.shape[0], n + extra):
            raise AssertionError(
                f"Equivariant output {k} has shape {o.shape}; expected it "
                f"to start with [batch, set_size] = {(m.shape[0], n + extra)}."
            )
        assert_all_close(
            o[:, :n][m],
            r[m],
            atol=atol,
            rtol=atol,
            msg=f"Output {k} changed on valid positions ({what})",
        )


# --------------------------------------------------------------------------
# Layer test helpers.
# --------------------------------------------------------------------------


def _seed_generators(layer):
    found, seen = [], set()
    for sublayer in layer._flatten_layers(True, True):
        for generator in getattr(sublayer, "_seed_generators", []):
            if id(generator) not in seen:
                found.append(generator)
                seen.add(id(generator))
    return found


def _shape_matches(actual, expected):
    actual, expected = tuple(actual), tuple(expected)
    return len(actual) == len(expected) and all(
        e is None or a is None or int(a) == int(e)
        for a, e in zip(actual, expected, strict=True)
    )


def _is_shape(value):
    return isinstance(value, (tuple, list)) and all(
        v is None or isinstance(v, (int, np.integer)) for v in value
    )


def _shape_structure(shapes):
    """Turns lists that are shapes into tuples so keras.tree sees leaves."""
    if _is_shape(shapes):
        return tuple(shapes)
    if isinstance(shapes, dict):
        return {k: _shape_structure(v) for k, v in shapes.items()}
    return [_shape_structure(s) for s in shapes]


def _flat_shapes(shapes):
    if _is_shape(shapes):
        return [tuple(shapes)]
    if isinstance(shapes, dict):
        return [s for k in sorted(shapes) for s in _flat_shapes(shapes[k])]
    return [s for v in shapes for s in _flat_shapes(v)]


def _overrides(layer, method):
    return getattr(type(layer), method) is not getattr(keras.Layer, method)


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
            self._check_serialization(
                layer_cls, init_kwargs, custom_objects, registered_package
            )
            self._check_eager_call(
                layer_cls,
                init_kwargs,
                input_data,
                input_mask,
                call_kwargs,
                expected_output_shape,
                expected_output_dtype,
                expected_num_trainable_weights,
                expected_num_non_trainable_weights,
                expected_num_seed_generators,
            )
            if run_symbolic_check:
                self._check_symbolic_call(
                    layer_cls, init_kwargs, input_data, input_mask, call_kwargs
                )
            if run_training_check:
                self._check_training(
                    layer_cls,
                    init_kwargs,
                    input_data,
                    input_mask,
                    call_kwargs,
                    allow_unchanged_weights,
                )
            layer = layer_cls(**init_kwargs)
            if supports_masking is not None:
                self.assertEqual(
                    layer.supports_masking,
                    supports_masking,
                    f"{name}.supports_masking is {layer.supports_masking}, "
                    f"expected {supports_masking}.",
                )
            if expected_output_mask is not NOT_GIVEN:
                self._call(layer, input_data, input_mask, call_kwargs)
                mask = layer.compute_mask(
                    _map(keras.ops.convert_to_tensor, input_data),
                    None
                    if input_mask is None
                    else _map(keras.ops.convert_to_tensor, input_mask),
                )
                assert_all_equal(
                    mask,
                    expected_output_mask,
                    msg=f"{name}.compute_mask(inputs, mask) is not the "
                    "expected output mask.",
                )

    def _call(self, layer, inputs, mask, call_kwargs, **extra):
        if mask is not None:
            return layer(inputs, mask=mask, **call_kwargs, **extra)
        return layer(inputs, **call_kwargs, **extra)

    def _check_serialization(
        self, layer_cls, init_kwargs, custom_objects, registered_package
    ):
        name = layer_cls.__name__
        layer = layer_cls(**init_kwargs)
        config = layer.get_config()
        missing = [k for k in init_kwargs if k not in config]
        if missing:
            raise AssertionError(
                f"{name}.get_config() is missing init argument(s) {missing}. "
                f"Add them to the dict returned by get_config(). "
                f"Config keys: {sorted(config)}"
            )
        for key, value in init_kwargs.items():
            simple = (bool, int, float, np.integer, np.floating)
            if isinstance(value, simple) and config[key] != value:
                raise AssertionError(
                    f"{name}.get_config()[{key!r}] is {config[key]!r}, but "
                    f"the layer was created with {key}={value!r}."
                )
        revived = layer_cls.from_config(config)
        revived_config = revived.get_config()
        if revived_config != config:
            raise AssertionError(
                f"{name}.from_config(config).get_config() differs from "
                f"config.\n{_dict_diff(config, revived_config)}"
            )
        serialized = keras.saving.serialize_keras_object(layer)
        deserialized = keras.saving.deserialize_keras_object(
            serialized, custom_objects=custom_objects
        )
        if not isinstance(deserialized, layer_cls):
            raise AssertionError(
                f"deserialize_keras_object(serialize_keras_object(layer)) "
                f"returned a {type(deserialized).__name__}, not a {name}."
            )
        if deserialized.get_config() != config:
            raise AssertionError(
                f"{name}: the serialize_keras_object / "
                "deserialize_keras_object round trip changed the config.\n"
                f"{_dict_diff(config, deserialized.get_config())}"
            )
        if registered_package is not None:
            registered = keras.saving.get_registered_name(layer_cls)
            if not registered.startswith(f"{registered_package}>"):
                raise AssertionError(
                    f"{name} is not registered as a Keras serializable "
                    f"(registered name: {registered!r}). Decorate it with "
                    "@keras.saving.register_keras_serializable("
                    f'package="{registered_package}").'
                )

    def _check_eager_call(
        self,
        layer_cls,
        init_kwargs,
        input_data,
        input_mask,
        call_kwargs,
        expected_output_shape,
        expected_output_dtype,
        expected_num_trainable_weights,
        expected_num_non_trainable_weights,
        expected_num_seed_generators,
    ):
        name = layer_cls.__name__
        layer = layer_cls(**init_kwargs)
        output = self._call(layer, input_data, input_mask, call_kwargs)
        flat_out = _flatten(output)
        shapes = [tuple(keras.ops.shape(o)) for o in flat_out]
        if expected_output_shape is not None:
            expected = _flat_shapes(expected_output_shape)
            if len(expected) != len(shapes) or not all(
                _shape_matches(a, e)
                for a, e in zip(shapes, expected, strict=True)
            ):
                raise AssertionError(
                    f"{name} output shape(s) {_show(shapes)} do not match "
                    f"expected_output_shape {_show(expected)} (None entries "
                    "match any size)."
                )
        if expected_output_dtype is not None:
            expected = expected_output_dtype
            expected = (
                [expected] * len(flat_out)
                if isinstance(expected, str)
                else _flatten(expected)
            )
            dtypes = [
                keras.backend.standardize_dtype(o.dtype) for o in flat_out
            ]
            expected = [keras.backend.standardize_dtype(d) for d in expected]
            if dtypes != expected:
                raise AssertionError(
                    f"{name} output dtype(s) {dtypes} do not match "
                    f"expected_output_dtype {expected}."
                )
        counts = [
            (
                "trainable",
                layer.trainable_weights,
                expected_num_trainable_weights,
            ),
            (
                "non-trainable",
                layer.non_trainable_weights,
                expected_num_non_trainable_weights,
            ),
        ]
        for kind, weights, expected in counts:
            if expected is not None and len(weights) != expected:
                paths = [w.path for w in weights]
                raise AssertionError(
                    f"{name} has {len(weights)} {kind} weights, expected "
                    f"{expected}: {paths}"
                )
        if expected_num_seed_generators is not None:
            found = len(_seed_generators(layer))
            if found != expected_num_seed_generators:
                raise AssertionError(
                    f"{name} has {found} seed generators, expected "
                    f"{expected_num_seed_generators}."
                )
        return shapes

    def _symbolic_inputs(self, input_data, input_mask):
        def make_input(x):
            x = _to_numpy(x)
            return keras.Input(shape=x.shape[1:], dtype=str(x.dtype))

        inputs = _map(make_input, input_data)
        masks = None
        if input_mask is not None:

            def make_mask(m):
                m = _to_numpy(m)
                return keras.Input(shape=m.shape[1:], dtype="bool")

            masks = _map(make_mask, input_mask)
        return inputs, masks

    def _check_symbolic_call(
        self, layer_cls, init_kwargs, input_data, input_mask, call_kwargs
    ):
        name = layer_cls.__name__
        eager_layer = layer_cls(**init_kwargs)
        eager = _flatten(
            self._call(eager_layer, input_data, input_mask, call_kwargs)
        )
        eager_shapes = [(None,) + tuple(o.shape)[1:] for o in eager]
        layer = layer_cls(**init_kwargs)
        inputs, masks = self._symbolic_inputs(input_data, input_mask)
        symbolic = _flatten(self._call(layer, inputs, masks, call_kwargs))
        symbolic_shapes = [tuple(o.shape) for o in symbolic]
        if len(symbolic_shapes) != len(eager_shapes) or not all(
            _shape_matches(s, e)
            for s, e in zip(symbolic_shapes, eager_shapes, strict=True)
        ):
            raise AssertionError(
                f"{name}: symbolic call gives output shape(s) "
                f"{_show(symbolic_shapes)} but the eager call gives "
                f"{_show(eager_shapes)} (batch dimension shown as None)."
                + (
                    " The symbolic call goes through the layer's "
                    "compute_output_shape, which must agree with call()."
                    if _overrides(layer, "compute_output_shape")
                    else ""
                )
            )
        if _overrides(layer, "compute_output_shape"):
            input_shapes = _map(lambda t: tuple(t.shape), inputs)
            computed = layer.compute_output_shape(
                _shape_structure(input_shapes)
            )
            computed = _flat_shapes(computed)
            if len(computed) != len(eager_shapes) or not all(
                _shape_matches(c, e)
                for c, e in zip(computed, eager_shapes, strict=True)
            ):
                raise AssertionError(
                    f"{name}.compute_output_shape({_show(input_shapes)}) "
                    f"returns {_show(computed)} but calling the layer gives "
                    f"{_show(eager_shapes)}."
                )

    def _check_training(
        self,
        layer_cls,
        init_kwargs,
        input_data,
        input_mask,
        call_kwargs,
        allow_unchanged_weights,
    ):
        name = layer_cls.__name__
        layer = layer_cls(**init_kwargs)
        inputs, masks = self._symbolic_inputs(input_data, input_mask)
        outputs = _flatten(self._call(layer, inputs, masks, call_kwargs))
        flat_inputs = _flatten(inputs) + (
            [] if masks is None else _flatten(masks)
        )
        model = keras.Model(
            flat_inputs, outputs[0] if len(outputs) == 1 else outputs
        )
        model.compile(
            optimizer=keras.optimizers.Adam(learning_rate=1e-2),
            loss=["mse"] * len(outputs) if len(outputs) > 1 else "mse",
        )
        x = [_to_numpy(v) for v in _flatten(input_data)]
        if input_mask is not None:
            x += [_to_numpy(m).astype(bool) for m in _flatten(input_mask)]
        rng = np.random.default_rng(0)
        eager = _flatten(model(x, training=False))
        y = [rng.normal(size=tuple(o.shape)).astype("float32") for o in eager]
        before = [_to_numpy(w).copy() for w in layer.trainable_weights]
        history = model.fit(
            x,
            y[0] if len(y) == 1 else y,
            batch_size=len(x[0]),
            epochs=1,
            verbose=0,
            shuffle=False,
        )
        loss = history.history["loss"][-1]
        if not np.isfinite(loss):
            raise AssertionError(f"{name}: the fit step gave loss {loss}.")
        unchanged = []
        for weight, old in zip(layer.trainable_weights, before, strict=True):
            if weight.name in allow_unchanged_weights:
                continue
            if weight.path in allow_unchanged_weights:
                continue
            if np.array_equal(_to_numpy(weight), old):
                unchanged.append(weight.path)
        if unchanged:
            raise AssertionError(
                f"{name}: trainable weight(s) {unchanged} did not change in "
                "one fit step, so they get no gradient. Fix the layer, or "
                "list them in `allow_unchanged_weights` if that is intended."
            )

    # Models -----------------------------------------------------------------

    def run_model_saving_test(
        self, model, input_data, atol=1e-6, custom_objects=None
    ):
        """Saves `model` as .keras, reloads it (safe mode), compares outputs.

        Returns the reloaded model.
        """
        expected = _to_numpy_structure(model(input_data, training=False))
        path = os.path.join(self.get_temp_dir(), "model.keras")
        model.save(path)
        reloaded = keras.saving.load_model(
            path, custom_objects=custom_objects, safe_mode=True
        )
        actual = _to_numpy_structure(reloaded(input_data, training=False))
        assert_all_close(
            actual,
            expected,
            atol=atol,
            rtol=atol,
            msg="The reloaded .keras model gives different outputs.",
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
        expected = _to_numpy_structure(model(input_data, training=False))
        path = os.path.join(self.get_temp_dir(), "model.weights.h5")
        model.save_weights(path)
        with keras.saving.custom_object_scope(custom_objects or {}):
            config = model.get_config()
            if isinstance(model, keras.Sequential):
                fresh = keras.Sequential.from_config(config)
            elif _is_functional(model):
                fresh = keras.Model.from_config(config)
            else:
                fresh = model.__class__.from_config(config)
        fresh(input_data, training=False)
        rng = np.random.default_rng(0)
        float_weights = [
            w for w in fresh.weights if keras.backend.is_float_dtype(w.dtype)
        ]
        for w in float_weights:
            value = _to_numpy(w)
            w.assign(value + rng.uniform(0.1, 0.5, size=value.shape))
        if float_weights:
            before = _to_numpy_structure(fresh(input_data, training=False))
            try:
                assert_all_close(before, expected, atol=atol, rtol=atol)
            except AssertionError:
                pass
            else:
                raise AssertionError(
                    "The fresh model gives the original outputs before "
                    "load_weights, even with redrawn weights: the round "
                    "trip would pass vacuously."
                )
        fresh.load_weights(path)
        actual = _to_numpy_structure(fresh(input_data, training=False))
        assert_all_close(
            actual,
            expected,
            atol=atol,
            rtol=atol,
            msg="After load_weights the fresh model gives different outputs.",
        )
        return fresh


def _is_functional(model):
    return type(model).__name__ == "Functional" or (
        hasattr(model, "_is_graph_network") and model._is_graph_network
    )


def _show(shapes):
    return [tuple(s) for s in shapes] if isinstance(shapes, list) else shapes


def _dict_diff(expected, actual):
    lines = []
    for key in sorted(set(expected) | set(actual), key=str):
        if key not in actual:
            lines.append(f"  {key!r}: missing (was {expected[key]!r})")
        elif key not in expected:
            lines.append(f"  {key!r}: new key with value {actual[key]!r}")
        elif expected[key] != actual[key]:
            lines.append(f"  {key!r}: {expected[key]!r} became {actual[key]!r}")
    return "\n".join(lines)
