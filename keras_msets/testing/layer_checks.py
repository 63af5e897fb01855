"""The checks behind `TestCase.run_layer_test`, one function per check.

Each `check_*` function builds a fresh layer from `layer_cls(**init_kwargs)`
and raises an AssertionError that says what is wrong and how to fix it.
"""

import keras
import numpy as np

from keras_msets.testing.comparisons import map_structure
from keras_msets.testing.comparisons import to_numpy


def _flatten(structure):
    return keras.tree.flatten(structure)


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


def _shapes_agree(actual, expected):
    """Two lists of shapes match one to one (None matches any size)."""
    return len(actual) == len(expected) and all(
        _shape_matches(a, e) for a, e in zip(actual, expected, strict=True)
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


def call_layer(layer, inputs, mask, call_kwargs, **extra):
    """Calls `layer(inputs, **call_kwargs)`, with `mask=` when not None."""
    if mask is not None:
        return layer(inputs, mask=mask, **call_kwargs, **extra)
    return layer(inputs, **call_kwargs, **extra)


def check_serialization(
    layer_cls, init_kwargs, custom_objects, registered_package
):
    """`get_config`, `from_config` and `serialize_keras_object` round trips."""
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


def check_eager_call(
    layer_cls, init_kwargs, input_data, input_mask, call_kwargs, expected
):
    """Eager call: output shapes and dtypes, weight and seed counts.

    `expected` maps `output_shape`, `output_dtype`,
    `num_trainable_weights`, `num_non_trainable_weights` and
    `num_seed_generators` to their expected values (None or absent: not
    checked).

    Returns the called layer and its output shapes.
    """
    name = layer_cls.__name__
    layer = layer_cls(**init_kwargs)
    output = call_layer(layer, input_data, input_mask, call_kwargs)
    flat_out = _flatten(output)
    shapes = [tuple(keras.ops.shape(o)) for o in flat_out]
    if expected.get("output_shape") is not None:
        expected_shapes = _flat_shapes(expected["output_shape"])
        if not _shapes_agree(shapes, expected_shapes):
            raise AssertionError(
                f"{name} output shape(s) {_show(shapes)} do not match "
                f"expected_output_shape {_show(expected_shapes)} (None "
                "entries match any size)."
            )
    if expected.get("output_dtype") is not None:
        dtype = expected["output_dtype"]
        dtype = [dtype] * len(flat_out) if isinstance(dtype, str) else dtype
        dtypes = [keras.backend.standardize_dtype(o.dtype) for o in flat_out]
        expected_dtypes = [
            keras.backend.standardize_dtype(d) for d in _flatten(dtype)
        ]
        if dtypes != expected_dtypes:
            raise AssertionError(
                f"{name} output dtype(s) {dtypes} do not match "
                f"expected_output_dtype {expected_dtypes}."
            )
    for kind in ("trainable", "non_trainable"):
        weights = getattr(layer, f"{kind}_weights")
        count = expected.get(f"num_{kind}_weights")
        if count is not None and len(weights) != count:
            paths = [w.path for w in weights]
            raise AssertionError(
                f"{name} has {len(weights)} {kind.replace('_', '-')} "
                f"weights, expected {count}: {paths}"
            )
    count = expected.get("num_seed_generators")
    if count is not None:
        found = len(_seed_generators(layer))
        if found != count:
            raise AssertionError(
                f"{name} has {found} seed generators, expected {count}."
            )
    return layer, shapes


def symbolic_inputs(input_data, input_mask):
    """`keras.Input`s (batch None) mirroring the data and the masks."""

    def make_input(x):
        x = to_numpy(x)
        return keras.Input(shape=x.shape[1:], dtype=str(x.dtype))

    inputs = map_structure(make_input, input_data)
    masks = None
    if input_mask is not None:

        def make_mask(m):
            m = to_numpy(m)
            return keras.Input(shape=m.shape[1:], dtype="bool")

        masks = map_structure(make_mask, input_mask)
    return inputs, masks


def check_symbolic_call(
    layer_cls, init_kwargs, input_data, input_mask, call_kwargs, eager_shapes
):
    """Symbolic shapes agree with eager ones and `compute_output_shape`.

    `eager_shapes` are the output shapes of an eager call on `input_data`
    (as returned by `check_eager_call`).
    """
    name = layer_cls.__name__
    eager_shapes = [(None,) + tuple(s)[1:] for s in eager_shapes]
    layer = layer_cls(**init_kwargs)
    inputs, masks = symbolic_inputs(input_data, input_mask)
    symbolic = _flatten(call_layer(layer, inputs, masks, call_kwargs))
    symbolic_shapes = [tuple(o.shape) for o in symbolic]
    if not _shapes_agree(symbolic_shapes, eager_shapes):
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
        input_shapes = map_structure(lambda t: tuple(t.shape), inputs)
        computed = layer.compute_output_shape(_shape_structure(input_shapes))
        computed = _flat_shapes(computed)
        if not _shapes_agree(computed, eager_shapes):
            raise AssertionError(
                f"{name}.compute_output_shape({_show(input_shapes)}) "
                f"returns {_show(computed)} but calling the layer gives "
                f"{_show(eager_shapes)}."
            )


def check_training(
    layer_cls,
    init_kwargs,
    input_data,
    input_mask,
    call_kwargs,
    allow_unchanged_weights,
):
    """One `fit` step: finite loss, every trainable weight changes.

    The step is sign descent (`w -= 0.01 * sign(grad)`, `SignDescent`):
    each element with a nonzero gradient moves by 0.01 whatever the
    gradient's size, so a weight stays unchanged only where its gradient
    is exactly zero (Adam's first step shrinks below float32 resolution
    for very small gradients), and a NaN gradient makes the weight NaN,
    which fails the check. Its compiled update is small: on TensorFlow,
    tracing Adam's per-weight update costs about twice the rest of the
    step.
    """
    name = layer_cls.__name__
    layer = layer_cls(**init_kwargs)
    inputs, masks = symbolic_inputs(input_data, input_mask)
    outputs = _flatten(call_layer(layer, inputs, masks, call_kwargs))
    flat_inputs = _flatten(inputs) + ([] if masks is None else _flatten(masks))
    model = keras.Model(
        flat_inputs, outputs[0] if len(outputs) == 1 else outputs
    )
    model.compile(
        optimizer=SignDescent(learning_rate=1e-2),
        loss=["mse"] * len(outputs) if len(outputs) > 1 else "mse",
    )
    x = [to_numpy(v) for v in _flatten(input_data)]
    if input_mask is not None:
        x += [to_numpy(m).astype(bool) for m in _flatten(input_mask)]
    rng = np.random.default_rng(0)
    eager = _flatten(model(x, training=False))
    y = [rng.normal(size=tuple(o.shape)).astype("float32") for o in eager]
    before = [to_numpy(w).copy() for w in layer.trainable_weights]
    # Built here, not inside the first traced train step: on TensorFlow
    # an optimizer that creates its variables (its iteration counter)
    # while `fit` traces the step makes tf.function trace it twice.
    model.optimizer.build(model.trainable_variables)
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
    unchanged, not_finite = [], []
    for weight, old in zip(layer.trainable_weights, before, strict=True):
        if not np.isfinite(to_numpy(weight)).all():
            not_finite.append(weight.path)
        if weight.name in allow_unchanged_weights:
            continue
        if weight.path in allow_unchanged_weights:
            continue
        if np.array_equal(to_numpy(weight), old):
            unchanged.append(weight.path)
    if not_finite:
        raise AssertionError(
            f"{name}: trainable weight(s) {not_finite} are not finite "
            "after one fit step: their gradient is NaN or infinite."
        )
    if unchanged:
        raise AssertionError(
            f"{name}: trainable weight(s) {unchanged} did not change in "
            "one fit step, so they get no gradient. Fix the layer, or "
            "list them in `allow_unchanged_weights` if that is intended."
        )


class SignDescent(keras.optimizers.Optimizer):
    """`w -= learning_rate * sign(grad)`: the optimizer of `check_training`.

    Every element whose gradient is nonzero moves by exactly
    `learning_rate`, and no optimizer state is kept, so the compiled train
    step is small.
    """

    def update_step(self, gradient, variable, learning_rate):
        learning_rate = keras.ops.cast(learning_rate, variable.dtype)
        gradient = keras.ops.cast(gradient, variable.dtype)
        step = keras.ops.multiply(keras.ops.sign(gradient), learning_rate)
        self.assign_sub(variable, step)


# Models -----------------------------------------------------------------


def is_functional(model):
    """Whether `model` is a functional (graph) model."""
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
