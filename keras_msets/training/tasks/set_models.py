"""The models of Selby et al.'s App. B, as the set tasks train them.

`build_model(task_name, **overrides)` gives the App. B model of a task
(`APP_B_MODELS`); `build_counting_model` puts App. B's MNIST or Omniglot
CNN in front of any set model that reads encoded images.

- KL divergence and mutual information: the dimension-equivariant
  Multi-Set Transformer (Sec. 3.5) with 16 channels and feedforward width
  32 per input dimension, 4 blocks, 4 heads, PMA pooling, a decoder with
  one hidden layer. The split mutual-information model scales its output
  by `d` (`scale_output_by_dim`, ours); the joint one (ours) is the KL
  model.
- Two-sample: latent size 8 and hidden size 16, a sigmoid output, and
  (ours) the dimension-equivariant model with those widths per
  coordinate: the paper's plain Multi-Set Transformer plateaued at 0.70
  accuracy, this one reached 0.75 (benchmarks/RESULTS.md, Table 4).
- Counting: `build_counting_model` (App. B, MNIST).
"""

import keras

from keras_msets.models import MULTISET_MODEL_NAMES
from keras_msets.models import DimensionEquivariantMultiSetTransformer
from keras_msets.models import build_multiset_model
from keras_msets.models._trainer_guards import GuardedFunctional
from keras_msets.utils.validation import check_choice

_EQUIVARIANT = {
    "latent_dim": 16,
    "ff_dim": 32,
    "num_blocks": 4,
    "num_heads": 4,
}
# `DimensionEquivariantMultiSetTransformer` arguments of each task's App. B
# model.
APP_B_MODELS = {
    "kl_divergence": dict(_EQUIVARIANT, name="mst_kl_divergence"),
    "mutual_information": dict(
        _EQUIVARIANT, scale_output_by_dim=True, name="mst_mutual_information"
    ),
    "mutual_information_joint": dict(
        _EQUIVARIANT, name="mst_mutual_information_joint"
    ),
    "two_sample": dict(
        _EQUIVARIANT,
        latent_dim=8,
        ff_dim=16,
        output_activation="sigmoid",
        name="mst_two_sample",
    ),
}
# App. B's CNNs: `build_image_encoder` (MNIST), `build_omniglot_encoder`.
IMAGE_ENCODERS = ("mnist", "omniglot")
OMNIGLOT_FILTERS = (32, 32, 64, 128)
# The set models that can read CNN embeddings: every one but the
# dimension-equivariant model, whose coordinates must be exchangeable
# (those of a CNN embedding are not; the paper's Table 2 has no such row).
COUNTING_MODEL_NAMES = tuple(
    n for n in MULTISET_MODEL_NAMES if n != "dimension_equivariant"
)


def build_model(task_name, **overrides):
    """The App. B model of task `task_name` (`APP_B_MODELS`, or
    `"counting"`: `build_counting_model`); `overrides` replace any of
    its arguments (e.g. tiny sizes in tests)."""
    check_choice("task_name", task_name, (*APP_B_MODELS, "counting"))
    if task_name == "counting":
        return build_counting_model(**overrides)
    return DimensionEquivariantMultiSetTransformer(
        **dict(APP_B_MODELS[task_name], **overrides)
    )


def _conv(filters, name, size=3, strides=1):
    return keras.layers.Conv2D(
        filters,
        size,
        strides=strides,
        padding="same",
        activation="relu",
        name=name,
    )


def _conv_blocks(filters, parts):
    """Per entry `f` of `filters`: one 3x3 convolution of `f` filters per
    name suffix in `parts`, then a 2x2 max pool."""
    layers = []
    for i, f in enumerate(filters):
        layers += [_conv(f, f"conv_{i}{part}") for part in parts]
        layers.append(keras.layers.MaxPooling2D(name=f"pool_{i}"))
    return layers


def _encoder(image_shape, layers, latent_dim, name):
    """`layers` after an `Input`, then flattened and projected linearly to
    `latent_dim`."""
    return keras.Sequential(
        [
            keras.layers.Input(image_shape),
            *layers,
            keras.layers.Flatten(name="flatten"),
            keras.layers.Dense(latent_dim, name="projection"),
        ],
        name=name,
    )


def build_image_encoder(
    image_shape=(8, 8, 1), latent_dim=128, filters=(32, 64), name="encoder"
):
    """The counting task's CNN (App. B, MNIST): one image to a vector.

    3x3 convolutions of 32 and 64 filters, each followed by a 2x2 max
    pool, then a linear projection to `latent_dim`.
    """
    layers = _conv_blocks(filters, parts=("",))
    return _encoder(image_shape, layers, latent_dim, name)


def build_omniglot_encoder(
    image_shape=(28, 28, 1),
    latent_dim=128,
    filters=OMNIGLOT_FILTERS,
    name="encoder",
):
    """App. B's Omniglot CNN: one image to a vector.

    A 7x7 convolution with stride 2 and `filters[0]` filters, then one
    block per further entry of `filters` (two 3x3 convolutions and a 2x2
    max pool), then a linear projection to `latent_dim`. On 28x28 images
    (Fashion-MNIST, our Omniglot stand-in) the default filters take the
    image to 14x14, then 7x7, 3x3 and 1x1.
    """
    layers = [
        _conv(filters[0], "conv_in", size=7, strides=2),
        *_conv_blocks(filters[1:], parts=("a", "b")),
    ]
    return _encoder(image_shape, layers, latent_dim, name)


def build_counting_model(
    image_shape=(8, 8, 1),
    latent_dim=128,
    ff_dim=256,
    filters=(32, 64),
    name="mst_counting",
    *,
    model_name="multiset_transformer",
    image_encoder="mnist",
    **mst_kwargs,
):
    """CNN encoder + a multi-set model for counting shared classes.

    App. B (MNIST): every image goes through `build_image_encoder` (the
    same encoder for both sets), then a Multi-Set Transformer with latent
    size 128, hidden size 256 and a single projection layer as decoder
    (`decoder_units=[]`). A functional model (`GuardedFunctional`, with
    the package's `TrainerGuards`): its input is
    `{"sets": [x, y], "masks": [x_mask, y_mask]}` with images
    `[batch, n, *image_shape]`; the encoder is the layer `"encoder"`
    inside the `TimeDistributed` layer `"encode"` (where
    `pretrain_encoder` finds it), the set model the layer named
    `model_name`.

    Args:
        image_shape: one image, `(8, 8, 1)` for `"digits"`, `(28, 28, 1)`
            for `"mnist_5k"` and `"fashion_mnist"`.
        latent_dim: the encoder's output size and the set model's latent
            size.
        ff_dim: the set model's hidden size.
        filters: the CNN's filters: App. B's MNIST ones by default; pass
            `OMNIGLOT_FILTERS` for App. B's Omniglot CNN.
        name: the model's name.
        model_name: the set model, one of `COUNTING_MODEL_NAMES`, built by
            `build_multiset_model`.
        image_encoder: `"mnist"` (`build_image_encoder`) or `"omniglot"`
            (`build_omniglot_encoder`), App. B's CNNs.
        **mst_kwargs: further arguments of the set model (they replace
            `num_blocks=4` and `decoder_units=[]`).
    """
    if model_name not in COUNTING_MODEL_NAMES:
        raise ValueError(
            f"`model_name` must be one of {COUNTING_MODEL_NAMES} (the "
            "dimension-equivariant model needs exchangeable coordinates, "
            "which a CNN embedding does not have). Received: "
            f"model_name={model_name!r}"
        )
    check_choice("image_encoder", image_encoder, IMAGE_ENCODERS)
    sets = [
        keras.Input((None,) + tuple(image_shape), name=n) for n in ("x", "y")
    ]
    masks = [
        keras.Input((None,), dtype="bool", name=n) for n in ("x_mask", "y_mask")
    ]
    build_encoder = (
        build_image_encoder
        if image_encoder == "mnist"
        else build_omniglot_encoder
    )
    encoder = build_encoder(image_shape, latent_dim, filters)
    encode = keras.layers.TimeDistributed(encoder, name="encode")
    kwargs = {
        "latent_dim": latent_dim,
        "ff_dim": ff_dim,
        "num_blocks": 4,
        "decoder_units": [],
    }
    kwargs.update(mst_kwargs)
    mst = build_multiset_model(model_name, **kwargs)
    output = mst({"sets": [encode(s) for s in sets], "masks": masks})
    return GuardedFunctional({"sets": sets, "masks": masks}, output, name=name)
