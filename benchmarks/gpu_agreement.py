"""Outputs on a GPU against the same computations on the CPU.

Three checks, each reporting the largest absolute difference and the
largest difference relative to `max(1, |CPU value|)`:

- every golden case (`tests/golden/<name>.npz`, written on the CPU):
  rebuilt with its stored weights and run on this backend's device,
  against its stored outputs;
- every preset: `zoo.load(name).predict_on_batch(example input)` against
  the example output stored with the preset (computed on the CPU when it
  was saved);
- the pretrained estimators (`kl_divergence`, `mutual_information`,
  `same_distribution_probability`) on fixed samples, with 90 % intervals,
  against the same calls on the CPU (`--write-reference` stores those;
  the nearest-neighbour statistics are numpy on the CPU in both runs, only
  the models run on the device).

A case passes at the tolerance of the CPU tests, `1e-5` absolute and
relative (`numpy.testing.assert_allclose(atol=1e-5, rtol=1e-5)`); the
largest differences are stored for every case so that a looser stated
tolerance can be read off. On the CPU:

    KERAS_BACKEND=torch python benchmarks/gpu_agreement.py --write-reference

and then where the backend sees a GPU (torch or JAX):

    KERAS_BACKEND=torch python benchmarks/gpu_agreement.py \\
        --output benchmarks/results/gpu/agreement_torch.json
"""

import argparse
import json
import platform
import time
from pathlib import Path

import keras
import numpy as np

from keras_msets import estimators
from keras_msets import zoo
from keras_msets.testing import golden
from keras_msets.zoo import registry

BACKEND = keras.backend.backend()
RESULTS = Path(__file__).resolve().parent / "results" / "gpu"
ATOL = RTOL = 1e-5


def device_name():
    """The GPU the backend computes on, or "CPU"."""
    if BACKEND == "torch":
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
        return "CPU"
    if BACKEND == "jax":
        import jax

        device = jax.devices()[0]
        return "CPU" if device.platform == "cpu" else device.device_kind
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    return gpus[0].name if gpus else "CPU"


def compare(actual, expected):
    actual = [np.asarray(a, "float64") for a in keras.tree.flatten(actual)]
    expected = [np.asarray(e, "float64") for e in keras.tree.flatten(expected)]
    if len(actual) != len(expected):
        raise AssertionError(f"{len(actual)} outputs against {len(expected)}")
    absolute, relative, passes = 0.0, 0.0, True
    for a, e in zip(actual, expected, strict=True):
        if a.shape != e.shape:
            raise AssertionError(f"shape {a.shape} against {e.shape}")
        both_nan = np.isnan(a) & np.isnan(e)
        gap = np.where(both_nan, 0.0, np.abs(a - e))
        if np.any(np.isnan(gap)):
            return {"max_abs": float("nan"), "max_rel": float("nan")} | {
                "passes_1e-5": False
            }
        if gap.size:
            absolute = max(absolute, float(gap.max()))
            relative = max(
                relative, float((gap / np.maximum(1.0, np.abs(e))).max())
            )
        within = gap <= ATOL + RTOL * np.abs(np.where(both_nan, 0.0, e))
        passes &= bool(np.all(within))
    return {"max_abs": absolute, "max_rel": relative, "passes_1e-5": passes}


def _rows(names, row, label):
    """`row(name)` for each name; one that raises fails, its error kept."""
    rows = []
    for name in names:
        try:
            rows.append(row(name))
        except Exception as error:  # noqa: BLE001 - kept in the result
            message = f"{type(error).__name__}: {error}"[:2000]
            rows.append({label: name, "passes_1e-5": False, "error": message})
    return rows


def golden_rows():
    return _rows(sorted(golden.load_cases()), _golden_row, "case")


def _golden_row(name):
    stored = golden.load_golden(name)
    build_fn, _, _ = golden._get_case(name, None)
    obj = golden._build(name, build_fn, stored["inputs"], stored["call_kwargs"])
    golden._set_weights(obj, stored["weights"], stored["weight_paths"], name)
    out = golden._run(obj, stored["inputs"], stored["call_kwargs"])
    return {"case": name, **compare(out, stored["outputs"])}


def preset_rows():
    return _rows(zoo.list(), _preset_row, "preset")


def _preset_row(name):
    start = time.perf_counter()
    model = zoo.load(name)
    example = zoo.info(name)["example"]
    out = model.predict_on_batch(registry.example_input(example))
    return {
        "preset": name,
        # One array, as test_registry compares it.
        **compare(np.asarray(out), np.asarray(example["output"])),
        "seconds": round(time.perf_counter() - start, 2),
    }


def estimator_problems():
    """Fixed samples: non-Gaussian pairs at two sizes."""
    rng = np.random.default_rng(0)
    problems = {}
    for n in (150, 1000):
        x = rng.gamma(2.0, 1.0, (n, 4))
        y = rng.gamma(2.0, 1.5, (n, 4))
        problems[f"kl_gamma_d4_n{n}"] = ("kl", x, y)
        z = rng.standard_t(3, (n, 3))
        w = np.tanh(z[:, :2]) + 0.3 * rng.standard_t(3, (n, 2))
        problems[f"mi_student_3_2_n{n}"] = ("mi", z, w)
        a = rng.normal(size=(n, 8))
        b = rng.normal(size=(n, 8)) * 1.2
        problems[f"two_sample_d8_n{n}"] = ("two", a, b)
    return problems


def estimator_values():
    values = {}
    for name, (kind, x, y) in estimator_problems().items():
        if kind == "kl":
            e = estimators.kl_divergence(x, y, interval=0.9)
            values[name] = [e.value, e.low, e.high]
        elif kind == "mi":
            e = estimators.mutual_information(x, y, interval=0.9)
            values[name] = [e.value, e.low, e.high]
        else:
            values[name] = [estimators.same_distribution_probability(x, y)]
    return {k: [float(v) for v in vals] for k, vals in values.items()}


def reference_path():
    return RESULTS / f"cpu_reference_{BACKEND}.json"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--write-reference",
        action="store_true",
        help="store this device's estimator values as the reference",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace a stored reference"
    )
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument(
        "--groups",
        nargs="+",
        choices=GROUPS,
        default=list(GROUPS),
        help="which checks to run",
    )
    args = parser.parse_args(argv)
    device = device_name()
    if args.write_reference:
        path = reference_path()
        if path.exists() and not args.overwrite:
            parser.error(f"{path} exists; pass --overwrite to replace it")
        if device != "CPU":
            parser.error(f"the reference is the CPU's; this is {device}")
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"backend": BACKEND, "keras": keras.__version__}
        record["values"] = estimator_values()
        path.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {path}")
        return record
    result = {
        "command": "python benchmarks/gpu_agreement.py",
        "backend": BACKEND,
        "device": device,
        "keras": keras.__version__,
        "machine": platform.machine(),
        "tolerance": {"atol": ATOL, "rtol": RTOL},
    }
    if BACKEND == "jax":
        import jax

        result["jax_default_matmul_precision"] = str(
            jax.config.jax_default_matmul_precision
        )
    result["complete"] = False
    for group in args.groups:
        result[group] = GROUPS[group]()
        _report(result, group, LABELS[group])
        _write(args.output, result)  # a partial result survives
    result["complete"] = True
    _write(args.output, result)
    return result


def estimator_rows():
    reference = json.loads(reference_path().read_text())["values"]
    values = estimator_values()
    return [
        {
            "problem": name,
            "cpu": reference[name],
            "here": values[name],
            **compare(values[name], reference[name]),
        }
        for name in sorted(values)
    ]


GROUPS = {
    "golden": golden_rows,
    "presets": preset_rows,
    "estimators": estimator_rows,
}
LABELS = {"golden": "case", "presets": "preset", "estimators": "problem"}


def _write(output, result):
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(result, indent=1) + "\n")


def _report(result, key, label):
    rows = result[key]
    failed = [r[label] for r in rows if not r["passes_1e-5"]]
    worst = max((r["max_abs"] for r in rows), default=0.0)
    print(
        f"{BACKEND} on {result['device']}: {key}: {len(rows) - len(failed)}"
        f"/{len(rows)} within 1e-5, largest absolute difference "
        f"{worst:.2e}; outside: {failed}",
        flush=True,
    )


if __name__ == "__main__":
    main()
