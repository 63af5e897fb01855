import argparse
import json
import os
import subprocess
import sys
import textwrap
import types

import keras
import numpy as np
import pytest

from keras_msets.training import distribution

BACKEND = keras.backend.backend()
ON_JAX = BACKEND == "jax"
NOT_ON_THIS_BACKEND = (
    f"Keras {keras.__version__} trains with keras.distribution only on JAX, "
    f"not on {BACKEND}; test_other_backends_refuse_data_parallel checks the "
    "error raised here instead"
)


def _fake_distribution(num_devices):
    """An object shaped like a Distribution, for the batch-size checks."""
    mesh = types.SimpleNamespace(devices=np.empty((num_devices,)))
    return types.SimpleNamespace(device_mesh=mesh)


def test_batch_size_must_be_a_multiple_of_the_device_count():
    two = _fake_distribution(2)
    assert distribution.check_batch_size(8, two) == 8
    assert distribution.per_device_batch_size(8, two) == 4
    with pytest.raises(ValueError, match=r"batch_size=9\. Use 8 or 10\."):
        distribution.check_batch_size(9, two)
    with pytest.raises(ValueError, match=r"\(4\).*batch_size=3\. Use 4\."):
        distribution.check_batch_size(3, _fake_distribution(4))
    with pytest.raises(ValueError, match="positive integer"):
        distribution.check_batch_size(0, two)


def test_no_distribution_means_one_device():
    assert distribution.device_count() == 1
    assert distribution.check_batch_size(7) == 7


def test_disabled_data_parallelism_does_nothing_on_every_backend():
    with distribution.data_parallel(False) as dist:
        assert dist is None
        assert distribution.device_count() == 1
    assert distribution.set_data_parallel(False) is None
    parser = distribution.add_distribution_arguments(argparse.ArgumentParser())
    args = parser.parse_args([])
    assert args.data_parallel is False
    assert distribution.distribution_from_arguments(args) is None
    with pytest.raises(ValueError, match="`enabled` must be a bool"):
        with distribution.data_parallel("yes"):
            pass


@pytest.mark.skipif(ON_JAX, reason="JAX supports data parallelism")
def test_other_backends_refuse_data_parallel():
    assert not distribution.data_parallel_supported()
    message = "only available on the JAX backend.*KERAS_BACKEND=" + BACKEND
    with pytest.raises(ValueError, match=message):
        with distribution.data_parallel(True):
            pass
    with pytest.raises(ValueError, match=message):
        distribution.set_data_parallel(True)
    parser = distribution.add_distribution_arguments(argparse.ArgumentParser())
    args = parser.parse_args(["--data-parallel"])
    with pytest.raises(ValueError, match=message):
        distribution.distribution_from_arguments(args)


@pytest.mark.skipif(not ON_JAX, reason=NOT_ON_THIS_BACKEND)
def test_jax_data_parallel_scope_and_arguments():
    assert distribution.data_parallel_supported()
    with distribution.data_parallel(True) as dist:
        assert isinstance(dist, keras.distribution.DataParallel)
        assert keras.distribution.distribution() is dist
        assert distribution.device_count() == len(
            keras.distribution.list_devices()
        )
    assert keras.distribution.distribution() is None
    parser = distribution.add_distribution_arguments(argparse.ArgumentParser())
    args = parser.parse_args(["--data-parallel"])
    dist = distribution.distribution_from_arguments(args)
    assert isinstance(dist, keras.distribution.DataParallel)
    try:
        assert distribution.set_data_parallel(True) is not None
        assert keras.distribution.distribution() is not None
    finally:
        distribution.set_data_parallel(False)
    assert keras.distribution.distribution() is None
    with pytest.raises(ValueError, match="non-empty list"):
        distribution.data_parallel_distribution(devices=[])


# One SGD step of a DeepSets model, on one device and split over two CPU
# devices, from the same weights and batch. Prints the weights as JSON.
TRAIN_STEP = textwrap.dedent(
    """
    import json

    import keras
    import numpy as np

    from keras_msets import models
    from keras_msets.training import distribution

    rng = np.random.default_rng(0)
    x = rng.integers(1, 10, size=(8, 6)).astype("int32")
    x[:, 4:] = 0  # padding
    y = rng.normal(size=(8, 1)).astype("float32")


    def one_step(enabled, initial=None):
        with distribution.data_parallel(enabled) as dist:
            batch_size = distribution.check_batch_size(len(x), dist)
            model = models.DeepSets(
                vocabulary_size=10, embedding_dim=8, hidden_units=5
            )
            model(x[:2])
            if initial is None:
                initial = [
                    rng.uniform(-0.5, 0.5, size=w.shape).astype("float32")
                    for w in model.get_weights()
                ]
            model.set_weights(initial)
            model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
            loss = model.train_on_batch(x[:batch_size], y[:batch_size])
            devices = sorted(
                str(d) for d in model.weights[0].value.sharding.device_set
            )
            return initial, model.get_weights(), float(loss), devices


    initial, single, single_loss, single_devices = one_step(False)
    _, parallel, parallel_loss, parallel_devices = one_step(True, initial)
    print(
        json.dumps(
            {
                "devices": len(keras.distribution.list_devices()),
                "initial": [w.tolist() for w in initial],
                "single": [w.tolist() for w in single],
                "parallel": [w.tolist() for w in parallel],
                "losses": [single_loss, parallel_loss],
                "weight_devices": [single_devices, parallel_devices],
            }
        )
    )
    """
)


@pytest.mark.skipif(not ON_JAX, reason=NOT_ON_THIS_BACKEND)
def test_data_parallel_step_equals_single_device_step():
    env = dict(os.environ)
    env["KERAS_BACKEND"] = "jax"
    env["XLA_FLAGS"] = (
        env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    ).strip()
    env["JAX_PLATFORMS"] = "cpu"
    result = subprocess.run(
        [sys.executable, "-c", TRAIN_STEP],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["devices"] == 2
    single_devices, parallel_devices = out["weight_devices"]
    assert len(single_devices) == 1
    assert len(parallel_devices) == 2  # replicated on both CPU devices
    single = [np.asarray(w) for w in out["single"]]
    parallel = [np.asarray(w) for w in out["parallel"]]
    initial = [np.asarray(w) for w in out["initial"]]
    # The step changed the weights, so equal results are not vacuous.
    assert any(
        not np.allclose(a, b, atol=1e-4)
        for a, b in zip(single, initial, strict=True)
    )
    np.testing.assert_allclose(*out["losses"], atol=1e-5, rtol=1e-5)
    for i, (a, b) in enumerate(zip(parallel, single, strict=True)):
        np.testing.assert_allclose(
            a, b, atol=1e-5, rtol=1e-5, err_msg=f"weight {i}"
        )
