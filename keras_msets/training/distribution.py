"""Data-parallel training through `keras.distribution`, one switch per recipe.

A recipe trains on one device by default. With data parallelism on, the
model's variables are replicated on every visible device and each batch is
split along its first axis, one equal slice per device; gradients are
averaged across devices, so one step computes the same update as on one
device with the same global batch. The recipe's code does not change:

    add_distribution_arguments(parser)  # adds --data-parallel
    args = parser.parse_args()
    with data_parallel(args.data_parallel):
        model = build_model()
        model.compile(...)
        model.fit(x, y, batch_size=check_batch_size(batch_size))

What each backend does (Keras 3 as installed; checked in
`keras/src/distribution` and `keras/src/backend/*/distribution_lib.py`):

- JAX: `keras.distribution.DataParallel` over all visible devices (every
  GPU, or every CPU device that
  `XLA_FLAGS=--xla_force_host_platform_device_count=N` creates). Keras's
  JAX trainer and variables honour it.
- TensorFlow: Keras ships only a prototype `distribution_lib` there
  ("DO NOT USE"); a `DataParallel` can be created, but neither the
  TensorFlow trainer nor its variables read it, so training would silently
  stay on one device. Asking for data parallelism raises a ValueError.
- PyTorch: Keras has no `distribution_lib` for torch, and asking for data
  parallelism raises a ValueError.

With data parallelism off (`enabled=False`), every function here does
nothing on every backend, so recipes may call them unconditionally.
"""

import contextlib

import keras

from keras_msets.utils.validation import check_bool
from keras_msets.utils.validation import check_positive_int

SUPPORTED_BACKENDS = ("jax",)


def data_parallel_supported(backend=None):
    """Whether Keras distributes training on `backend` (default: current)."""
    return (backend or keras.backend.backend()) in SUPPORTED_BACKENDS


def _check_supported():
    backend = keras.backend.backend()
    if not data_parallel_supported(backend):
        raise ValueError(
            "Data-parallel training through `keras.distribution` is only "
            f"available on the JAX backend (Keras {keras.__version__}). "
            f"Received: KERAS_BACKEND={backend}. Run with KERAS_BACKEND=jax, "
            "or train without data parallelism."
        )


def data_parallel_distribution(devices=None):
    """A `keras.distribution.DataParallel` over `devices`.

    Args:
        devices: None (every device `keras.distribution.list_devices()`
            returns: the GPUs or TPUs if there are any, else the CPUs) or a
            list of device names such as `["gpu:0", "gpu:1"]`.

    Returns:
        The `DataParallel` distribution; it is not made current (use its
        `scope()` or `set_data_parallel`).

    Raises:
        ValueError: on a backend other than JAX, or when `devices` is empty.
    """
    _check_supported()
    if devices is not None:
        devices = list(devices)
        if not devices:
            raise ValueError(
                "`devices` must be None or a non-empty list of device names. "
                f"Received: devices={devices!r}"
            )
    return keras.distribution.DataParallel(devices=devices)


def set_data_parallel(enabled=True, devices=None):
    """Makes data parallelism the global setting (or removes it).

    Args:
        enabled: bool. True sets a `DataParallel` distribution over
            `devices` for everything built and trained afterwards; False
            removes any global distribution.
        devices: see `data_parallel_distribution`.

    Returns:
        The distribution now in use, or None when `enabled` is False.
    """
    enabled = check_bool("enabled", enabled)
    if not enabled:
        if data_parallel_supported():
            keras.distribution.set_distribution(None)
        return None
    distribution = data_parallel_distribution(devices)
    keras.distribution.set_distribution(distribution)
    return distribution


@contextlib.contextmanager
def data_parallel(enabled=True, devices=None):
    """Context manager: data-parallel training inside the block if `enabled`.

    Build, compile and fit the model inside the block: variables are
    created replicated on every device, and `fit` splits each batch
    between them. With `enabled=False` the block runs as without it (on
    every backend), so a recipe passes its `--data-parallel` flag
    straight through.

    Args:
        enabled: bool, whether to distribute.
        devices: see `data_parallel_distribution`.

    Yields:
        The `DataParallel` distribution, or None when `enabled` is False.

    Example:

    ```python
    with data_parallel(True) as distribution:
        batch_size = check_batch_size(64, distribution)
        model = keras_msets.models.DeepSets(embedding_dim=16)
        model.compile(optimizer="adam", loss="mse")
        model.fit(x, y, batch_size=batch_size)
    ```
    """
    enabled = check_bool("enabled", enabled)
    if not enabled:
        yield None
        return
    distribution = data_parallel_distribution(devices)
    with distribution.scope():
        yield distribution


def device_count(distribution=None):
    """The number of devices a batch is split over (1 without distribution).

    Args:
        distribution: a `keras.distribution.Distribution` or None; None
            reads the current global distribution (none on TensorFlow and
            torch, where this returns 1).
    """
    if distribution is None and data_parallel_supported():
        distribution = keras.distribution.distribution()
    if distribution is None:
        return 1
    return int(distribution.device_mesh.devices.size)


def check_batch_size(batch_size, distribution=None):
    """Returns the global `batch_size` if every device gets an equal slice.

    Under data parallelism each batch is cut into `device_count()` equal
    slices, so the global batch size must be a multiple of the device
    count. Batches that `fit` draws from arrays must all be full too:
    give it a number of examples that is a multiple of `batch_size`, or
    batches of that size from a generator.

    Args:
        batch_size: positive int, the global batch size (all devices).
        distribution: see `device_count`.

    Returns:
        `batch_size`, as an int.

    Raises:
        ValueError: if `batch_size` is not a positive integer or not a
            multiple of the device count; the message names the nearest
            valid sizes.
    """
    batch_size = check_positive_int("batch_size", batch_size)
    devices = device_count(distribution)
    if batch_size % devices:
        lower = batch_size - batch_size % devices
        upper = lower + devices
        nearest = f"{lower} or {upper}" if lower else f"{upper}"
        raise ValueError(
            "`batch_size` must be a multiple of the number of devices "
            f"({devices}) under data parallelism, so that every device gets "
            f"an equal slice of each batch. Received: batch_size="
            f"{batch_size}. Use {nearest}."
        )
    return batch_size


def per_device_batch_size(batch_size, distribution=None):
    """The slice of a global batch that each device gets."""
    return check_batch_size(batch_size, distribution) // device_count(
        distribution
    )


def add_distribution_arguments(parser):
    """Adds `--data-parallel` to an `argparse` parser; returns the parser.

    `--data-parallel` (off by default) trains with `keras.distribution`'s
    `DataParallel` over every visible device (JAX backend only: on the
    other backends `distribution_from_arguments` raises a ValueError that
    says so). Read it back with `distribution_from_arguments(args)`.
    """
    parser.add_argument(
        "--data-parallel",
        action="store_true",
        help=(
            "split each batch over every visible device with "
            "keras.distribution.DataParallel (JAX backend only)"
        ),
    )
    return parser


def distribution_from_arguments(args):
    """The distribution `args.data_parallel` asks for, or None.

    Args:
        args: the namespace of a parser given `add_distribution_arguments`
            (a missing `data_parallel` attribute counts as off).

    Returns:
        A `DataParallel` distribution (not yet current: enter its `scope()`
        or pass `args.data_parallel` to `data_parallel`) or None.

    Raises:
        ValueError: if `--data-parallel` was given on a backend other than
            JAX.
    """
    if not getattr(args, "data_parallel", False):
        return None
    return data_parallel_distribution()
