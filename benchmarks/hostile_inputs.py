"""A matrix of hostile inputs: bad, extreme and concurrent calls.

Drives public layers, models, presets and estimators with inputs a careless
or unlucky user sends (out-of-range ids, empty sets, batch 0, huge values,
long inputs, mixed precision, wrong presets, threads) and sorts each run:

- `correct`: a finite result that matches an independent reference (float64
  numpy, or the same computation in float32 / serially), or the documented
  answer;
- `clear`: a `ValueError` / `TypeError` whose message names the argument
  (a backquoted name or "Received:"), or a documented warning where the
  input is outside what an estimator was trained on;
- `silent`: a result that is NaN, inf or wrong;
- `internal`: any other exception (a backend error, or an error that does
  not say which argument is wrong).

    KERAS_BACKEND=jax python benchmarks/hostile_inputs.py \
        --output benchmarks/results/hostile_jax.json

Each case states what it expects; `--only NAME` runs one case. The counts
per backend are in benchmarks/RESULTS.md ("Hostile inputs").
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback
import warnings
from pathlib import Path

import keras
import numpy as np

CASES = {}


def case(expect, names=None):
    """Registers a case; `expect` is "error", "value" or "warn_or_value".

    `names`: a regular expression that a clear error message of this case
    may match instead of a backquoted argument name or "Received" (an
    error about a file names the file).
    """

    def register(fn):
        CASES[fn.__name__] = (expect, fn, names)
        return fn

    return register


class Wrong(Exception):
    """Raised by a case whose result is wrong (a silent failure)."""


def _clear(message, names=None):
    if names and re.search(names, message):
        return True
    return bool(re.search(r"`[A-Za-z_][\w.]*`|Received", message))


def _finite(value):
    value = np.asarray(keras.ops.convert_to_numpy(value), dtype="float64")
    if not np.all(np.isfinite(value)):
        raise Wrong(f"non-finite output: {value.ravel()[:4]}")
    return value


def _close(actual, expected, atol, what=""):
    actual = _finite(actual)
    expected = np.asarray(expected, dtype="float64")
    if actual.shape != expected.shape:
        raise Wrong(f"{what} shape {actual.shape}, expected {expected.shape}")
    err = float(np.max(np.abs(actual - expected))) if actual.size else 0.0
    if err > atol:
        raise Wrong(f"{what} max error {err:.3g} > {atol}")
    return err


def _angle_error(cos_sin, theta):
    """Max angle error (rad) of `[cos, sin]` outputs against `theta`."""
    cos_sin = _finite(cos_sin)
    got = np.arctan2(cos_sin[..., 1], cos_sin[..., 0])
    diff = np.angle(np.exp(1j * (got - theta)))
    err = float(np.max(np.abs(diff)))
    if err > 1e-3:
        raise Wrong(f"angle error {err:.3g} rad > 1e-3")
    return err


# -- token ids -------------------------------------------------------------


def _dma():
    from keras_msets.layers import DiagonalMultisetAutomaton

    return DiagonalMultisetAutomaton(alphabet_size=10, num_states=4)


@case("error")
def automaton_id_too_large():
    return _dma()(np.array([[3, 10]], "int32"))


@case("error")
def automaton_id_negative():
    return _dma()(np.array([[3, -1]], "int32"))


@case("error")
def automaton_float_ids():
    return _dma()(np.array([[3.9, 1.0]], "float32"))


def _coe():
    from keras_msets.layers import ComplexOrderEmbedding

    return ComplexOrderEmbedding(input_dim=10, output_dim=4)


@case("error")
def order_embedding_id_too_large():
    return _coe()(np.array([[3, 10]], "int32"))


@case("error")
def order_embedding_id_negative():
    return _coe()(np.array([[3, -1]], "int32"))


@case("error")
def order_embedding_float_ids():
    return _coe()(np.array([[3.9, 1.0]], "float32"))


@case("error")
def order_embedding_rank3_ids():
    return _coe()(np.ones((2, 3, 4), "int32"))


def _fen():
    from keras_msets.models import FusionEncoderNetwork

    return FusionEncoderNetwork(sequence_length=4, vocabulary_size=3)


@case("error")
def fen_id_equal_to_vocabulary():
    return _fen()(np.array([[1, 2, 3, 1]], "int32"))


@case("error")
def fen_id_negative():
    return _fen()(np.array([[1, 2, -1, 1]], "int32"))


@case("error")
def preset_units_digit_negative_id():
    from keras_msets import zoo

    model = zoo.load("complex_deepsets_units_digit")
    return model.predict(np.array([[3, 4, -1, 0]], "int32"), verbose=0)


@case("error")
def preset_units_digit_id_too_large():
    from keras_msets import zoo

    model = zoo.load("complex_deepsets_units_digit")
    return model.predict(np.array([[3, 4, 12, 0]], "int32"), verbose=0)


# -- long accumulations ----------------------------------------------------


def _pooling_phase(theta):
    from keras_msets.layers import ComplexMultiplicationPooling

    n = theta.shape[0]
    x = np.zeros((1, n, 3), "float32")
    x[0, :, 1] = np.cos(theta)
    x[0, :, 2] = np.sin(theta)
    out = ComplexMultiplicationPooling()(x)
    out = keras.ops.convert_to_numpy(out)
    # The angles of the float32 inputs, in float64.
    total = np.sum(
        np.arctan2(x[0, :, 2].astype("float64"), x[0, :, 1].astype("float64"))
    )
    return _angle_error(out[0, :2][None], total)


@case("value")
def pooling_1e5_angle_1_3():
    return _pooling_phase(np.full(100_000, 1.3, "float32"))


@case("value")
def pooling_1e5_random_angles_mean_0_7():
    rng = np.random.default_rng(0)
    return _pooling_phase((0.7 + rng.uniform(-1, 1, 100_000)).astype("float32"))


def _automaton_reference(layer, ids):
    """float64 [cos, sin] of the summed phases, from the layer's weights."""
    weights = {
        w.path: keras.ops.convert_to_numpy(w).astype("float64")
        for w in layer.weights
    }
    x = [v for k, v in weights.items() if "real" in k]
    y = [v for k, v in weights.items() if "imag" in k]
    if len(x) != 1 or len(y) != 1:
        raise RuntimeError(f"cannot read the automaton weights: {weights}")
    x, y = x[0], y[0]
    theta = np.arctan2(y[ids], x[ids]).sum(axis=-2)
    return theta


@case("value")
def automaton_1e5_glorot_directions():
    from keras_msets.layers import DiagonalMultisetAutomaton

    layer = DiagonalMultisetAutomaton(
        alphabet_size=10,
        num_states=3,
        direction_initializer="glorot_uniform",
    )
    rng = np.random.default_rng(1)
    ids = rng.integers(1, 10, size=(1, 100_000)).astype("int32")
    out = keras.ops.convert_to_numpy(layer(ids)).astype("float64")
    theta = _automaton_reference(layer, ids[0])
    d = 3
    return _angle_error(np.stack([out[0, :d], out[0, d : 2 * d]], -1), theta)


def _with_policy(policy, fn):
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        return fn()
    finally:
        keras.config.set_dtype_policy(previous)


def _order_embedding_policy(policy, length, atol):
    from keras_msets.layers import ComplexOrderEmbedding

    ids = (np.arange(length) % 9 + 1).astype("int32")[None]
    reference = ComplexOrderEmbedding(input_dim=10, output_dim=4)
    expected = keras.ops.convert_to_numpy(reference(ids))

    def run():
        layer = ComplexOrderEmbedding(input_dim=10, output_dim=4)
        layer.build(ids.shape)
        layer.set_weights(reference.get_weights())
        return layer(ids)

    return _close(_with_policy(policy, run), expected, atol, policy)


@case("value")
def order_embedding_float16_position_70000():
    return _order_embedding_policy("mixed_float16", 70_000, 2e-2)


@case("value")
def order_embedding_bfloat16_position_1000():
    return _order_embedding_policy("mixed_bfloat16", 1_000, 3e-2)


@case("value")
def automaton_float16_1e5_tokens():
    from keras_msets.layers import DiagonalMultisetAutomaton

    rng = np.random.default_rng(2)
    ids = rng.integers(1, 10, size=(1, 100_000)).astype("int32")
    reference = DiagonalMultisetAutomaton(alphabet_size=10, num_states=3)
    expected = keras.ops.convert_to_numpy(reference(ids)).astype("float64")

    def run():
        layer = DiagonalMultisetAutomaton(alphabet_size=10, num_states=3)
        layer.build(ids.shape)
        layer.set_weights(reference.get_weights())
        return layer(ids)

    got = _finite(_with_policy("mixed_float16", run))
    d = 3
    _angle_error(
        np.stack([got[0, :d], got[0, d : 2 * d]], -1),
        np.arctan2(expected[0, d : 2 * d], expected[0, :d]),
    )
    # sum r: relative to its size
    return _close(got[0, 2 * d :], expected[0, 2 * d :], 1e-2 * 100_000, "r")


# -- empty sets, batch 0, masks -------------------------------------------


def _layer(name, **kwargs):
    from keras_msets import layers

    return getattr(layers, name)(**kwargs)


@case("value")
def pma_empty_set():
    out = _layer("PoolingByMultiheadAttention", num_heads=2)(
        np.zeros((2, 0, 8), "float32")
    )
    _finite(out)
    if tuple(out.shape) != (2, 1, 8):
        raise Wrong(f"shape {tuple(out.shape)}, expected (2, 1, 8)")
    return 0.0


@case("value")
def mean_pooling_empty_set_no_mask():
    out = _layer("MaskedSetPooling", reduction="mean")(
        np.zeros((2, 0, 3), "float32")
    )
    return _close(out, np.zeros((2, 3)), 0.0)


@case("value")
def max_pooling_empty_set():
    out = _layer("MaskedSetPooling", reduction="max")(
        np.zeros((2, 0, 3), "float32")
    )
    _finite(out)
    if tuple(out.shape) != (2, 3):
        raise Wrong(f"shape {tuple(out.shape)}")
    return 0.0


@case("value")
def isab_empty_set():
    out = _layer(
        "InducedSetAttentionBlock", num_inducing_points=4, num_heads=2
    )(np.zeros((2, 0, 8), "float32"))
    _finite(out)
    if tuple(out.shape) != (2, 0, 8):
        raise Wrong(f"shape {tuple(out.shape)}")
    return 0.0


@case("value")
def induced_msab_empty_set():
    layer = _layer(
        "InducedMultisetAttentionBlock", num_inducing_points=4, num_heads=2
    )
    out = layer([np.zeros((2, 0, 8), "float32"), np.ones((2, 5, 8), "float32")])
    for o in out:
        _finite(o)
    return 0.0


@case("value")
def relation_block_empty_set():
    layer = _layer("MultisetRelationBlock")
    out = layer([np.ones((2, 5, 8), "float32"), np.zeros((2, 0, 8), "float32")])
    for o in out:
        _finite(o)
    return 0.0


@case("value")
def sab_batch_zero():
    out = _layer("SetAttentionBlock", num_heads=2)(
        np.zeros((0, 5, 8), "float32")
    )
    if tuple(out.shape) != (0, 5, 8):
        raise Wrong(f"shape {tuple(out.shape)}")
    return 0.0


@case("value")
def pma_batch_zero():
    out = _layer("PoolingByMultiheadAttention", num_heads=2)(
        np.zeros((0, 5, 8), "float32")
    )
    if tuple(out.shape) != (0, 1, 8):
        raise Wrong(f"shape {tuple(out.shape)}")
    return 0.0


@case("value")
def sab_all_masked():
    x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")
    out = _layer("SetAttentionBlock", num_heads=2)(
        x, mask=np.zeros((2, 5), bool)
    )
    _finite(out)
    return 0.0


@case("error")
def position_encoding_rank2_input():
    layer = _layer("AutomatonPositionEncoding", mode="diagonal_polar_fixed")
    return layer(np.zeros((2, 6), "float32"))


@case("error")
def automaton_wrong_mask_shape():
    return _dma()(np.array([[1, 2, 3]], "int32"), mask=np.ones((1, 4), bool))


@case("value")
def sab_integer_features():
    x = np.arange(2 * 5 * 8).reshape(2, 5, 8).astype("int32") % 7
    layer = _layer("SetAttentionBlock", num_heads=2)
    out = layer(x)
    expected = keras.ops.convert_to_numpy(layer(x.astype("float32")))
    return _close(out, expected, 1e-5)


@case("error")
def sab_string_mask():
    x = np.zeros((1, 3, 8), "float32")
    return _layer("SetAttentionBlock", num_heads=2)(
        x, mask=np.array([["a", "b", "c"]])
    )


# -- estimators ------------------------------------------------------------


def _gauss(n, d, seed, scale=1.0):
    return np.random.default_rng(seed).normal(size=(n, d)) * scale


@case("error")
def two_sample_with_kl_preset():
    from keras_msets import estimators

    return estimators.same_distribution_probability(
        _gauss(25, 8, 0), _gauss(25, 8, 1), model="mst_kl_divergence"
    )


@case("error")
def kl_with_two_sample_preset():
    from keras_msets import estimators

    return estimators.kl_divergence(
        _gauss(100, 8, 0), _gauss(100, 8, 1), model="mst_two_sample"
    )


@case("value")
def kl_values_near_1e155():
    from keras_msets import estimators

    x, y = _gauss(120, 4, 0), _gauss(130, 4, 1, 1.5)
    expected = estimators.kl_divergence(x, y)
    return _close(
        estimators.kl_divergence(x * 1e155, y * 1e155), expected, 1e-3
    )


@case("error")
def kl_complex_input():
    from keras_msets import estimators

    x = _gauss(120, 4, 0) + 1j * _gauss(120, 4, 2)
    return estimators.kl_divergence(x, _gauss(130, 4, 1))


@case("error")
def kl_nan_input():
    from keras_msets import estimators

    x = _gauss(120, 4, 0)
    x[3, 1] = np.nan
    return estimators.kl_divergence(x, _gauss(130, 4, 1))


@case("error")
def kl_too_few_points():
    from keras_msets import estimators

    return estimators.kl_divergence(_gauss(3, 4, 0), _gauss(130, 4, 1))


@case("value")
def kl_constant_column_in_both_sets():
    from keras_msets import estimators

    rng = np.random.default_rng(0)
    ones = np.ones((500, 1))
    x = np.c_[rng.normal(size=(500, 3)), ones]
    y = np.c_[rng.normal(size=(500, 3)) + 0.5, ones]
    answer = estimators.kl_divergence(x, y, interval=0.9)
    _finite([answer.value, answer.low, answer.high])
    # The truth is 3 / 8; the interval must hold it.
    if not answer.low <= 0.375 <= answer.high:
        raise Wrong(f"interval ({answer.low:.3f}, {answer.high:.3f})")
    return abs(answer.value - 0.375)


@case("value")
def kl_float32_sets_near_1e8():
    from keras_msets import estimators

    # float32 rounds every value to 1e8: two equal point masses, KL 0.
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(500, 3)) + 1e8).astype("float32")
    y = (rng.normal(size=(500, 3)) + 1e8).astype("float32")
    answer = estimators.kl_divergence(x, y, interval=0.9)
    _finite([answer.value, answer.low, answer.high])
    if answer.value > 0.1:
        raise Wrong(f"KL {answer.value:.3f} for two equal point masses")
    return answer.value


@case("error")
def kl_masked_array():
    from keras_msets import estimators

    x = np.ma.masked_array(_gauss(500, 2, 0))
    x[450:, 0] = np.ma.masked
    return estimators.kl_divergence(x, _gauss(400, 2, 1))


def _student_t_pairs(n, rho, df, seed):
    from scipy import stats

    rng = np.random.default_rng(seed)
    z = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n)
    u = stats.norm.cdf(z)
    t = stats.t.ppf(u, df)
    return t[:, :1], t[:, 1:], -0.5 * np.log(1 - rho**2)


@case("value")
def ksg_discrete_pair():
    from keras_msets import estimators

    # x uniform on 0..2, y = x + a fair bit: I = H(Y) - log 2.
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, size=(500, 1)).astype(float)
    y = x + rng.integers(0, 2, size=(500, 1))
    truth = np.log(6) / 3 + 2 * np.log(3) / 3 - np.log(2)
    value = estimators.ksg_mutual_information(x, y)
    if abs(value - truth) > 0.1:
        raise Wrong(f"KSG {value:.3f} for the discrete pair's {truth:.3f}")
    return abs(value - truth)


@case("warn_or_value")
def mi_student_t_one_dof():
    from keras_msets import estimators

    x, y, truth = _student_t_pairs(1000, 0.6, 1, 0)
    value = estimators.mutual_information(x, y)
    if abs(value - truth) > 0.25:
        raise Wrong(f"MI {value:.3f} for a true {truth:.3f}")
    return abs(value - truth)


@case("value")
def mi_split_mode_y_negated():
    from keras_msets import estimators

    rng = np.random.default_rng(3)
    x = rng.normal(size=(150, 10))
    y = 0.7 * x + rng.normal(size=(150, 10))
    a = estimators.mutual_information(x, y, mode="split")
    b = estimators.mutual_information(x, -y, mode="split")
    if abs(a - b) > 0.05:
        raise Wrong(f"{a:.3f} for y, {b:.3f} for -y")
    return abs(a - b)


@case("value")
def kl_four_threads():
    from keras_msets import estimators

    pairs = [(_gauss(120, 4, s), _gauss(130, 4, s + 10, 1.3)) for s in range(4)]
    serial = [estimators.kl_divergence(x, y) for x, y in pairs]
    results = [None] * 4
    errors = []

    def work(i):
        try:
            results[i] = estimators.kl_divergence(*pairs[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(errors[0])
    return _close(results, serial, 1e-6)


@case("value")
def zoo_load_four_threads():
    from keras_msets import zoo

    ids = np.array([[3, 4, 5, 0]], "int32")
    serial = zoo.load("complex_deepsets_units_digit").predict(ids, verbose=0)
    results = [None] * 4
    errors = []

    def work(i):
        try:
            model = zoo.load("complex_deepsets_units_digit")
            results[i] = model.predict(ids, verbose=0)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(errors[0])
    return _close(np.stack(results), np.stack([serial] * 4), 1e-6)


@case("error")
def cnn_preset_row_shorter_than_its_kernel():
    from keras_msets import zoo

    model = zoo.load("complex_order_cnn_mr")
    return model.predict(np.array([[5, 6, 7]], "int32"), verbose=0)


@case("error")
def text_preset_called_on_strings():
    from keras_msets import zoo

    return zoo.load("complex_order_cnn_mr")(np.array(["a fine film"]))


@case("error")
def fen_preset_given_strings():
    from keras_msets import zoo

    return zoo.load("fen_dyck_64").predict(np.array(["(())"]), verbose=0)


@case("value")
def mst_preset_predict_after_a_refused_predict():
    from keras_msets import zoo
    from keras_msets.zoo import registry

    model = zoo.load("mst_kl_divergence")
    inputs = registry.example_input(zoo.info("mst_kl_divergence")["example"])
    expected = model.predict_on_batch(inputs)
    _refused(model, dict(inputs, masks=np.asarray(inputs["masks"])[..., :100]))
    return _close(model.predict(inputs, verbose=0), expected, 1e-5)


def _refused(model, bad):
    """`model.predict(bad)` must raise a `ValueError` (a misshapen mask)."""
    try:
        model.predict(bad, verbose=0)
    except ValueError:
        return
    raise Wrong("a mask of the wrong shape was accepted")


@case("value")
def count_preset_predict_after_a_refused_predict():
    from keras_msets import zoo
    from keras_msets.zoo import registry

    model = zoo.load("mst_count_shared_digits")
    inputs = registry.example_input(
        zoo.info("mst_count_shared_digits")["example"]
    )
    expected = model.predict_on_batch(inputs)
    _refused(
        model,
        dict(inputs, masks=[np.asarray(m)[..., :5] for m in inputs["masks"]]),
    )
    empty = model.predict(
        {k: [np.asarray(a)[:0] for a in v] for k, v in inputs.items()},
        verbose=0,
    )
    if np.shape(empty) != (0, 1):
        raise Wrong(f"no rows gave shape {np.shape(empty)}, expected (0, 1)")
    return _close(model.predict(inputs, verbose=0), expected, 1e-5)


@case("error", names=r"batch_size")
def kl_default_preset_bad_batch_size():
    from keras_msets import estimators

    return estimators.kl_divergence(
        _gauss(120, 3, 0), _gauss(120, 3, 1), batch_size="64"
    )


@case("value")
def preset_predict_of_no_rows():
    from keras_msets import zoo

    model = zoo.load("complex_deepsets_units_digit")
    out = model.predict(np.zeros((0, 4), "int32"), verbose=0)
    if np.shape(out) != (0, 1):
        raise Wrong(f"shape {np.shape(out)}, expected (0, 1)")
    return 0.0


@case("error", names=r"deepsets_digit_sum.*config\.json")
def preset_with_changed_config():
    from keras_msets import zoo

    source = Path(zoo.info("deepsets_digit_sum")["path"])
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "deepsets_digit_sum"
        shutil.copytree(source, target)
        config = json.loads((target / "config.json").read_text())
        text = json.dumps(config).replace('"relu"', '"tanh"', 1)
        (target / "config.json").write_text(text)
        old = os.environ.get("KERAS_MSETS_ZOO_DIR")
        os.environ["KERAS_MSETS_ZOO_DIR"] = tmp
        try:
            return zoo.load("deepsets_digit_sum").predict(
                np.array([[1, 2, 0]], "int32"), verbose=0
            )
        finally:
            if old is None:
                del os.environ["KERAS_MSETS_ZOO_DIR"]
            else:
                os.environ["KERAS_MSETS_ZOO_DIR"] = old


def run_case(name):
    expect, fn, names = CASES[name]
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn()
            outcome, detail = (
                ("silent", "returned without an error")
                if expect == "error"
                else ("correct", "")
            )
            if outcome == "correct" and isinstance(result, float):
                # The value cases return their error against the reference.
                detail = f"error {result:.3g}"
        except Wrong as e:
            outcome, detail = "silent", str(e)
        except (ValueError, TypeError) as e:
            message = str(e).splitlines()[0] if str(e) else repr(e)
            outcome = "clear" if _clear(str(e), names) else "internal"
            detail = f"{type(e).__name__}: {message[:200]}"
        except Exception as e:  # noqa: BLE001 - sorted as internal
            message = str(e).splitlines()[0] if str(e) else ""
            outcome = "internal"
            detail = f"{type(e).__name__}: {message[:200]}"
            if os.environ.get("HOSTILE_TRACEBACK"):
                traceback.print_exc()
    # Only a warning about the input's tails counts as saying so.
    ours = [str(w.message) for w in caught if "tail" in str(w.message)]
    if expect == "warn_or_value" and outcome == "silent" and ours:
        outcome, detail = "clear", f"warned: {ours[0][:200]}"
    return {
        "case": name,
        "expect": expect,
        "outcome": outcome,
        "detail": detail,
        "seconds": round(time.perf_counter() - start, 2),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", help="write the results (JSON) here")
    parser.add_argument("--only", action="append", help="run only these")
    args = parser.parse_args(argv)
    names = args.only or list(CASES)
    rows = []
    for name in names:
        row = run_case(name)
        rows.append(row)
        print(f"{row['outcome']:9s} {name}: {row['detail']}", flush=True)
    counts = {
        k: sum(r["outcome"] == k for r in rows)
        for k in ("correct", "clear", "silent", "internal")
    }
    summary = {
        "backend": keras.backend.backend(),
        "cases": len(rows),
        "counts": counts,
        "rows": rows,
    }
    print(json.dumps({"backend": summary["backend"], **counts}))
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
