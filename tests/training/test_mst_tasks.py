"""Tests of the Multi-Set Transformer tasks and their fresh-batch training.

No real training here: tiny models run a few steps (the loss must stay
finite), the streaming batches are checked for reproducibility, freshness
and balance, the evaluations against the classical estimators called
directly, and a checkpointed run against an uninterrupted one.
"""

import json

import keras
import numpy as np
import pytest

from keras_msets.data import mixtures
from keras_msets.data import set_counting
from keras_msets.estimators import pretrained
from keras_msets.stats import classical
from keras_msets.training.set_batches import SetBatches
from keras_msets.training.tasks import KLDivergence
from keras_msets.training.tasks import SharedClassCount
from keras_msets.training.tasks import mst

# Small graphs compile fast: one block, one head, mean pooling, a linear
# decoder.
TINY = {
    "latent_dim": 4,
    "ff_dim": 4,
    "num_blocks": 1,
    "num_heads": 1,
    "pooling": "mean",
    "decoder_units": [],
}
TINY_COUNTING = dict(TINY, filters=(2,))


def _masked_moments(values, mask):
    v = values[mask].astype(np.float64)
    return v.mean(0), np.cov(v.T, ddof=1)


# Batches ---------------------------------------------------------------------


def test_batches_are_reproducible_fresh_and_balanced():
    dims = (2, 3, 4)
    data = SetBatches(
        mst.task("kl_divergence"), 2, 6, dims=dims, seed=5, set_size=(6, 9)
    )
    first = data[0]
    again = SetBatches(
        mst.task("kl_divergence"), 2, 6, dims=dims, seed=5, set_size=(6, 9)
    )[0]
    inputs, targets = first
    assert set(inputs) == {"sets", "masks"}
    x, y = inputs["sets"]
    x_mask, y_mask = inputs["masks"]
    assert x.dtype == np.float32 and x_mask.dtype == bool
    assert x.shape[:2] == (2, 9) and x_mask.shape == (2, 9)
    assert targets.shape == (2, 1) and targets.dtype == np.float32
    np.testing.assert_array_equal(x, again[0]["sets"][0])
    np.testing.assert_array_equal(targets, again[1])
    # Each block of len(dims) batches holds every d once.
    seen = [data.dim_of(e, i) for e in range(2) for i in range(6)]
    for start in range(0, 12, 3):
        assert sorted(seen[start : start + 3]) == list(dims)
    assert seen[0] != seen[1]  # TensorFlow infers a free d from these two
    assert data[1][0]["sets"][0].shape[-1] == seen[1]
    # A new epoch draws new data.
    data.on_epoch_end()
    later = data[0]
    assert data.dim_of(1, 0) == later[0]["sets"][0].shape[-1]
    assert not np.array_equal(later[1], targets)
    assert mst.batch_seed(5, 0, 0) < mst.TEST_SEED
    with pytest.raises(IndexError):
        data[6]


def test_make_batch_prepares_inputs_as_the_estimators_do():
    inputs, kl = mst.make_batch("kl_divergence", 3, 2, seed=1)
    x, y = inputs["sets"]
    x_mask, y_mask = inputs["masks"]
    assert x.shape[1] == 150 and np.all(kl > -1.0)
    for b in range(3):
        union = np.concatenate([x[b][x_mask[b]], y[b][y_mask[b]]])
        np.testing.assert_allclose(union.mean(0), 0, atol=1e-5)
        np.testing.assert_allclose(np.cov(union.T), np.eye(2), atol=1e-4)
        assert np.all(x[b][~x_mask[b]] == 0)
    # The label is the generator's, unchanged by the preprocessing.
    _, expected = mixtures.kl_divergence_pairs(3, 2, seed=1, whiten=False)
    np.testing.assert_array_equal(kl, expected)

    inputs, mi = mst.make_batch("mutual_information", 2, 3, seed=2)
    for values, mask in zip(inputs["sets"], inputs["masks"], strict=True):
        mean, cov = _masked_moments(values[1], mask[1])
        np.testing.assert_allclose(mean, 0, atol=1e-5)
        np.testing.assert_allclose(np.diag(cov), 1, atol=1e-4)
    rho = np.sqrt(1 - np.exp(-2 * mi[:, 0] / 3))
    assert np.all((rho >= 0) & (rho <= 0.999 + 1e-6))

    # The joint task: [x_j, y_j] against [x_j, y_pi(j)], whitened as a KL
    # pair, on the same joint samples and labels as the split task.
    inputs, joint_mi = mst.make_batch("mutual_information_joint", 2, 3, seed=2)
    np.testing.assert_array_equal(joint_mi, mi)
    (x, y), (x_mask, y_mask) = inputs["sets"], inputs["masks"]
    assert x.shape[-1] == y.shape[-1] == 6
    np.testing.assert_array_equal(x_mask, y_mask)
    for b in range(2):
        union = np.concatenate([x[b][x_mask[b]], y[b][y_mask[b]]])
        np.testing.assert_allclose(np.cov(union.T), np.eye(6), atol=1e-4)

    inputs, same = mst.make_batch("two_sample", 4, 8, seed=3)
    assert inputs["sets"][0].shape[-1] == 8 and inputs["sets"][0].shape[1] == 30
    assert set(np.unique(same)) <= {0.0, 1.0}

    inputs, counts = mst.make_batch("counting", 2, None, seed=4)
    assert inputs["sets"][0].shape == (2, 30, 8, 8, 1)
    assert np.all((counts >= 0) & (counts <= 10))


def test_counting_batches_and_test_sets_take_the_image_source():
    # None is `COUNTING_SOURCE` ("digits") with App. B's MNIST set sizes.
    assert mst.COUNTING_SOURCE == "digits"
    default = mst.make_batch("counting", 2, None, seed=4)
    digits = mst.make_batch(
        "counting", 2, None, seed=4, set_size=(10, 30), source="digits"
    )
    for a, b in zip(default[0]["sets"], digits[0]["sets"], strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(default[1], digits[1])
    # Fashion-MNIST (the Omniglot stand-in): 28x28 images, sets of 6-10
    # by default, as `set_counting` draws them with the same seed.
    inputs, counts = mst.make_batch(
        "counting", 2, None, seed=4, source="fashion_mnist"
    )
    (x, _), (x_mask, _) = inputs["sets"], inputs["masks"]
    assert x.shape == (2, 10, 28, 28, 1) and x_mask.shape == (2, 10)
    assert 6 <= x_mask.sum(1).min() <= x_mask.sum(1).max() <= 10
    _, expected = set_counting.counting_shared_classes(
        2, source="fashion_mnist", split="train", seed=4
    )
    np.testing.assert_array_equal(counts, expected)
    fashion = SharedClassCount(source="fashion_mnist")
    data = SetBatches(fashion, 2, 3, seed=1, set_size=(2, 3))
    assert data.task.source == "fashion_mnist"
    assert data[2][0]["sets"][1].shape == (2, 3, 28, 28, 1)
    raw, inputs, _ = mst.test_set("counting", 3, source="fashion_mnist")
    assert raw[0].shape == inputs["sets"][0].shape == (3, 10, 28, 28, 1)
    assert mst.test_set("counting", 3)[0][0].shape[2:] == (8, 8, 1)


def test_argument_errors():
    with pytest.raises(ValueError, match="task"):
        mst.make_batch("nope", 2, 2, seed=0)
    with pytest.raises(ValueError, match="dims"):
        SetBatches(mst.task("kl_divergence"), 2, 2, dims=[])
    with pytest.raises(ValueError, match="dims=3"):
        SetBatches(mst.task("counting"), 2, 2, dims=3)
    with pytest.raises(ValueError, match="steps"):
        mst.fit_estimator(None, "kl_divergence", 2, steps=0)
    with pytest.raises(ValueError, match="test_size"):
        KLDivergence(test_size=0)
    # `source` is the counting task's image source only.
    with pytest.raises(ValueError, match="source='digits'"):
        mst.make_batch("kl_divergence", 2, 2, seed=0, source="digits")
    with pytest.raises(ValueError, match="`source`"):
        mst.test_set("mutual_information", 2, 2, source="digits")
    with pytest.raises(ValueError, match="`source`"):
        mst.fit_estimator(None, "two_sample", source="digits")
    with pytest.raises(ValueError, match="source='mnist'"):
        mst.make_batch("counting", 2, None, seed=0, source="mnist")
    with pytest.raises(ValueError, match="model_name='dimension_equivariant'"):
        mst.build_counting_model(model_name="dimension_equivariant")
    with pytest.raises(ValueError, match="image_encoder"):
        mst.build_counting_model(image_encoder="fashion_mnist")
    with pytest.raises(ValueError, match="task 'counting' has none"):
        SetBatches(mst.task("counting"), 2, 2, dim_weight_power=-2)
    with pytest.raises(ValueError, match="dim_weight_power=nan"):
        SetBatches(
            mst.task("kl_divergence"),
            2,
            2,
            dims=2,
            dim_weight_power=float("nan"),
        )


def test_dimension_weights():
    data = SetBatches(
        mst.task("mutual_information"),
        3,
        4,
        dims=[2, 5],
        set_size=(6, 9),
        dim_weight_power=-2,
    )
    plain = SetBatches(
        mst.task("mutual_information"), 3, 4, dims=[2, 5], set_size=(6, 9)
    )
    for i in range(4):
        inputs, targets, weights = data[i]
        d = inputs["sets"][0].shape[-1]
        np.testing.assert_array_equal(weights, np.full(3, d**-2.0, "float32"))
        np.testing.assert_array_equal(targets, plain[i][1])
        assert len(plain[i]) == 2


# Training and evaluation -----------------------------------------------------


@pytest.mark.parametrize(
    "task,dims",
    [
        ("kl_divergence", (2, 3)),
        # Slow; test_dimension_weights checks its batches' loss weights.
        pytest.param("mutual_information", (2, 3), marks=pytest.mark.slow),
    ],
)
def test_fit_regression(task, dims):
    model = mst.build_model(task, **TINY)
    fit = mst.fit_estimator(
        model,
        task,
        dims,
        steps=4,
        batch_size=2,
        epoch_steps=2,
        set_size=(6, 9),
        verbose=0,
    )
    # Two epochs of two batches; for KL the two batches of an epoch are in
    # d = 2 and d = 3 (on TensorFlow a fixed-d input signature would fail).
    assert fit["steps"] == 4 and len(fit["loss"]) == 2
    assert np.all(np.isfinite(fit["loss"]))
    assert fit["learning_rate"] == 1e-4 and fit["batch_size"] == 2
    expected_loss = {
        "kl_divergence": "mean_absolute_error",
        "mutual_information": "mean_squared_error",
    }[task]
    assert fit["loss_function"] == expected_loss
    assert fit["dims"] == list(np.atleast_1d(dims))
    # The MI model answers per coordinate times d; its loss is weighted
    # by d**-2 (the error per coordinate).
    is_mi = task == "mutual_information"
    assert model.scale_output_by_dim is is_mi
    assert fit["dim_weight_power"] == (-2 if is_mi else 0)


class _Constant:
    """A stand-in model whose output is `value` for every pair."""

    def __init__(self, value):
        self.value = value

    def predict_on_batch(self, inputs):
        return np.full((len(inputs["sets"][0]), 1), self.value)


def test_kl_evaluation_against_the_classical_estimator():
    metrics = mst.evaluate_kl_divergence(_Constant(0.5), dims=(2, 3), num=5)
    for d in (2, 3):
        _, inputs, labels = mst.test_set("kl_divergence", 5, d)
        truth = labels[:, 0].astype(np.float64)
        knn = classical.knn_kl_divergence_sets(
            *inputs["sets"], *inputs["masks"], k=1
        )
        assert metrics[f"mae_d{d}"] == pytest.approx(
            np.mean(np.abs(0.5 - truth))
        )
        assert metrics[f"knn_mae_d{d}"] == pytest.approx(
            np.mean(np.abs(knn - truth))
        )
    # Negative outputs are clipped at 0, as the estimator API does.
    clipped = mst.evaluate_kl_divergence(_Constant(-3.0), (2,), 5)
    assert clipped["mae_d2"] == pytest.approx(metrics["mean_label_d2"])


def test_mi_and_two_sample_evaluation():
    metrics = mst.evaluate_mutual_information(_Constant(0.0), dims=(2,), num=5)
    raw, _, labels = mst.test_set("mutual_information", 5, 2)
    ksg = classical.ksg_mutual_information_sets(raw[0], raw[1], raw[2], k=3)
    assert metrics["mae_d2"] == pytest.approx(np.mean(labels))
    assert metrics["ksg_mae_d2"] == pytest.approx(
        np.mean(np.abs(ksg - labels[:, 0]))
    )
    # The joint task scores the same joint samples, and the split model
    # on them when one is given.
    joint = mst.evaluate_mutual_information(
        _Constant(0.0),
        dims=(1, 2),
        num=5,
        task="mutual_information_joint",
        split_model=_Constant(1.0),
    )
    for key in ("mae_d2", "ksg_mae_d2", "median_mae_d2"):
        assert joint[key] == pytest.approx(metrics[key]), key
    assert joint["split_mae_d2"] == pytest.approx(np.mean(np.abs(1 - labels)))
    assert "split_mae_d1" not in joint and "mae_d1" in joint
    # The estimator's answer on the same joint samples (here the split
    # task's raw sets, x and y apart), averaged over 2 permutations.
    model = mst.build_model("mutual_information_joint", **TINY)
    model.build([(None, None, None)] * 2)
    averaged = mst.evaluate_mutual_information(
        model,
        dims=(2,),
        num=5,
        task="mutual_information_joint",
        estimator_permutations=2,
    )
    rows = [m.astype(bool) for m in raw[2]]
    answers = pretrained.mutual_information(
        [x[keep] for x, keep in zip(raw[0], rows, strict=True)],
        [y[keep] for y, keep in zip(raw[1], rows, strict=True)],
        model=model,
        mode="joint",
        permutations=2,
    )
    assert averaged["estimator_mae_d2"] == pytest.approx(
        np.mean(np.abs(answers - labels[:, 0]))
    )
    with pytest.raises(ValueError, match="estimator_permutations"):
        mst.evaluate_mutual_information(
            model, dims=(2,), num=5, estimator_permutations=2
        )
    with pytest.raises(ValueError, match="task"):
        mst.evaluate_mutual_information(
            _Constant(0.0), dims=(2,), num=5, task="kl_divergence"
        )
    same = mst.test_set("two_sample", 40, 8)[2][:, 0]
    metrics = mst.evaluate_two_sample(_Constant(0.9), num=40)
    assert metrics["accuracy"] == pytest.approx(np.mean(same))
    assert metrics["accuracy_same"] == 1.0
    assert metrics["accuracy_different"] == 0.0
    # The accuracy is the estimator's, over both orders of the sets.
    raw, _, labels = mst.test_set("two_sample", 40, 8)
    truth = labels[:, 0] > 0.5
    first_larger = raw[2].sum(1) > raw[3].sum(1)
    metrics = mst.evaluate_two_sample(_FirstSetLarger(), num=40)
    assert metrics["accuracy_one_order"] == pytest.approx(
        np.mean(first_larger == truth)
    )
    # Either order gives 1 at most once: the mean is never above 0.5.
    assert metrics["accuracy"] == pytest.approx(np.mean(~truth))


class _FirstSetLarger:
    """A stand-in model: 1 when the first set has more points."""

    def predict_on_batch(self, inputs):
        x_mask, y_mask = inputs["masks"]
        return (x_mask.sum(1) > y_mask.sum(1)).astype(float)[:, None]


def test_default_counting_model_is_unchanged():
    """The `mst_count_shared_digits` preset's model: names and sizes."""
    model = mst.build_counting_model(name="mst_count_shared_digits")
    assert [layer.name for layer in model.layers] == [
        "x",
        "y",
        "x_mask",
        "y_mask",
        "encode",
        "multiset_transformer",
    ]
    assert model.get_layer("encode").input.shape == (None, None, 8, 8, 1)
    encoder = model.get_layer("encode").layer
    assert encoder.name == "encoder"
    assert [layer.name for layer in encoder.layers] == [
        "conv_0",
        "pool_0",
        "conv_1",
        "pool_1",
        "flatten",
        "projection",
    ]
    assert [encoder.get_layer(f"conv_{i}").filters for i in (0, 1)] == [32, 64]
    inner = model.get_layer("multiset_transformer")
    assert type(inner).__name__ == "MultiSetTransformer"
    config = inner.get_config()
    assert (config["latent_dim"], config["ff_dim"]) == (128, 256)
    assert (config["num_blocks"], config["num_heads"]) == (4, 4)
    assert list(config["decoder_units"]) == []
    assert not config["cross_only"] and not inner.dimension_equivariant
    assert model.count_params() == 2_718_593
    assert model.weights[0].path == "encoder/conv_0/kernel"


def test_counting_model_takes_any_set_model_and_ignores_padding():
    """Predictions only: no training here."""
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(2, 5, 8, 8, 1)).astype("float32")
    y = rng.uniform(size=(2, 4, 8, 8, 1)).astype("float32")
    x_mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    y_mask = np.array([[1, 1, 0, 0], [1, 0, 0, 0]], bool)
    noisy_x = np.where(x_mask[..., None, None, None], x, 7.0)
    noisy_y = np.where(y_mask[..., None, None, None], y, -3.0)
    model = mst.build_counting_model(model_name="multiset_rn", **TINY_COUNTING)
    # `pretrain_encoder` finds the encoder here.
    assert model.get_layer("encode").layer.name == "encoder"
    inner = model.get_layer("multiset_rn")
    assert type(inner).__name__ == "MultiSetRelationNetwork"
    assert inner.latent_dim == 4 and inner.num_blocks == 1
    masks = [x_mask, y_mask]
    out = model.predict_on_batch({"sets": [x, y], "masks": masks})
    noisy = model.predict_on_batch({"sets": [noisy_x, noisy_y], "masks": masks})
    assert out.shape == (2, 1)
    np.testing.assert_allclose(noisy, out, rtol=1e-5, atol=1e-5)


def test_omniglot_encoder():
    # App. B's Omniglot CNN on 28x28 images: 28 -> 14 (stride 2) -> 7 -> 3
    # -> 1 after the three pooled blocks, then the projection.
    encoder = mst.build_omniglot_encoder(latent_dim=3, filters=(2, 2, 2, 4))
    assert encoder.output_shape == (None, 3)
    assert encoder.get_layer("flatten").output.shape == (None, 4)
    convs = [x for x in encoder.layers if "conv" in x.name]
    assert [c.filters for c in convs] == [2, 2, 2, 2, 2, 4, 4]
    assert convs[0].kernel_size == (7, 7) and convs[0].strides == (2, 2)
    assert {c.kernel_size for c in convs[1:]} == {(3, 3)}
    assert mst.OMNIGLOT_FILTERS == (32, 32, 64, 128)


def test_counting_on_fashion_mnist():
    model = mst.build_counting_model(
        (28, 28, 1), image_encoder="omniglot", **TINY_COUNTING
    )
    encoder = model.get_layer("encode").layer
    assert encoder.get_layer("conv_in").strides == (2, 2)
    # A batch of 4,096: one epoch over the 60,000 training images.
    accuracy = mst.pretrain_encoder(
        model, steps=1, batch_size=4096, source="fashion_mnist"
    )
    assert 0.0 <= accuracy <= 1.0
    # (`fit_estimator(source=...)`: tests/benchmarks/test_mst_tables.py.)
    metrics = mst.evaluate_counting(model, num=2, source="fashion_mnist")
    assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["l1"] >= 0.0
    # The 8x8 digits do not fit this encoder, and the message says so.
    with pytest.raises(ValueError, match="source='digits'"):
        mst.pretrain_encoder(model, steps=1, source="digits")


@pytest.mark.slow
def test_fit_and_evaluate_counting():
    model = mst.build_counting_model(**TINY_COUNTING)
    accuracy = mst.pretrain_encoder(model, steps=1, batch_size=64)
    assert 0.0 <= accuracy <= 1.0
    fit = mst.fit_estimator(
        model,
        "counting",
        steps=2,
        batch_size=2,
        set_size=(3, 5),
        verbose=0,
    )
    assert np.all(np.isfinite(fit["loss"])) and fit["dims"] is None


class _Oracle:
    """Predicts the true count, plus 0.3 on even rows and 0.7 on odd."""

    def __init__(self, counts):
        self.counts = counts[:, 0]

    def predict(self, inputs, batch_size=None, verbose=0):
        offset = np.where(np.arange(len(self.counts)) % 2, 0.7, 0.3)
        return (self.counts + offset)[:, None]


@pytest.mark.parametrize("source", [None, "fashion_mnist"])
def test_counting_metrics(source):
    _, _, counts = mst.test_set("counting", 6, source=source)
    metrics = mst.evaluate_counting(_Oracle(counts), num=6, source=source)
    # Rounding is right on the even rows only; L1 is (0.3 + 0.7) / 2.
    assert metrics == pytest.approx({"accuracy": 0.5, "l1": 0.5})


def test_test_sets_are_fixed_and_never_drawn_in_training():
    a = mst.test_set("two_sample", 4, 8)[2]
    b = mst.test_set("two_sample", 4, 8)[2]
    np.testing.assert_array_equal(a, b)
    # Training seeds are 32-bit; test seeds start at 2**32.
    seeds = [mst.batch_seed(s, e, i) for s in (0, 1) for e in (0, 9)
             for i in (0, 99)]  # fmt: skip
    assert max(seeds) < 2**32 == mst.TEST_SEED


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(steps=1), r"steps=1, dims"),
        (
            dict(steps=4, epoch_steps=4, gradient_accumulation_steps=2),
            r"dims=\(2, 3\), gradient_accumulation_steps=2",
        ),
    ],
    ids=["one_step", "gradient_accumulation"],
)
def test_several_dims_need_two_batches_first_on_tensorflow(options, message):
    # TensorFlow infers the input signature from an epoch's first two
    # items: one batch alone or two slices of one batch would fix d, so it
    # is a clear error there; the other backends train.
    if keras.backend.backend() == "tensorflow":
        with pytest.raises(ValueError, match=message):
            mst.fit_estimator(
                None, "kl_divergence", (2, 3), batch_size=4, **options
            )
    else:
        model = mst.build_model("kl_divergence", **TINY)
        fit = mst.fit_estimator(
            model,
            "kl_divergence",
            (2, 3),
            batch_size=4,
            set_size=(6, 9),
            verbose=0,
            **options,
        )
        assert fit["steps"] == options["steps"]
        assert np.all(np.isfinite(fit["loss"]))


def test_micro_batches_slice_each_batch_in_order():
    whole = SetBatches(
        mst.task("kl_divergence"), 4, 3, dims=(2, 3), seed=1, set_size=(6, 9)
    )
    sliced = SetBatches(
        mst.task("kl_divergence"),
        4,
        3,
        dims=(2, 3),
        seed=1,
        set_size=(6, 9),
        micro_batches=2,
    )
    assert len(sliced) == 6
    for step in range(3):
        inputs, targets = whole[step]
        for part in range(2):
            piece, piece_targets = sliced[2 * step + part]
            rows = slice(2 * part, 2 * part + 2)
            np.testing.assert_array_equal(piece_targets, targets[rows])
            for key in ("sets", "masks"):
                for a, b in zip(piece[key], inputs[key], strict=True):
                    np.testing.assert_array_equal(a, b[rows])
    with pytest.raises(IndexError):
        sliced[6]
    with pytest.raises(ValueError, match="micro_batches=3, batch_size=4"):
        SetBatches(mst.task("kl_divergence"), 4, 3, dims=2, micro_batches=3)


def _same_start_models():
    """A factory of tiny KL models that all start from the same weights,
    and those weights (a list of arrays)."""
    inputs, _ = mst.make_batch("kl_divergence", 2, 2, seed=0)
    model = mst.build_model("kl_divergence", **TINY)
    model(inputs)
    initial = [np.asarray(w) for w in model.get_weights()]

    def fresh_model():
        model = mst.build_model("kl_divergence", **TINY)
        model(inputs)
        model.set_weights(initial)
        return model

    return fresh_model, initial


@pytest.mark.slow
def test_gradient_accumulation_gives_the_whole_batch_update():
    """`k` slices with accumulated gradients = one step on the batch."""
    fresh_model, initial = _same_start_models()
    weights = {}
    for accumulate in (None, 2):
        model = fresh_model()
        fit = mst.fit_estimator(
            model,
            "kl_divergence",
            2,
            steps=3,
            batch_size=4,
            learning_rate=1e-2,
            epoch_steps=3,
            set_size=(6, 9),
            verbose=0,
            gradient_accumulation_steps=accumulate,
            shuffle=False,
        )
        assert fit["steps"] == 3
        assert fit["gradient_accumulation_steps"] == (accumulate or 1)
        weights[accumulate] = [np.asarray(w) for w in model.get_weights()]
    # Three Adam steps at 1e-2 moved the weights, so the comparison below
    # would see a wrong number of updates or a wrong gradient.
    moved = [
        np.max(np.abs(w - w0))
        for w, w0 in zip(weights[2], initial, strict=True)
    ]
    assert max(moved) > 1e-3
    # Up to float error, which Adam's normalisation can scale up to about
    # 3e-5 for a weight whose gradient is near 0 (1/300 of a step).
    for plain, accumulated in zip(weights[None], weights[2], strict=True):
        np.testing.assert_allclose(accumulated, plain, rtol=1e-3, atol=2e-4)
    with pytest.raises(ValueError, match="gradient_accumulation_steps=3"):
        mst.fit_estimator(
            None,
            "kl_divergence",
            2,
            batch_size=4,
            gradient_accumulation_steps=3,
        )
    with pytest.raises(ValueError, match="shuffle=True"):
        mst.fit_estimator(
            None,
            "kl_divergence",
            2,
            gradient_accumulation_steps=2,
            shuffle=True,
        )
    with pytest.raises(ValueError, match="gradient_accumulation_steps=0"):
        mst.fit_estimator(
            None, "kl_divergence", 2, gradient_accumulation_steps=0
        )


class _Interrupt(Exception):
    pass


class _InterruptAt(keras.callbacks.Callback):
    """Raises `_Interrupt` when the `at`-th batch of the run begins."""

    def __init__(self, at):
        super().__init__()
        self.at = at
        self.seen = 0

    def on_train_batch_begin(self, batch, logs=None):
        self.seen += 1
        if self.seen == self.at:
            raise _Interrupt()


def _eager_on_tensorflow(model):
    """`model`, whose `compile` makes its steps run eagerly on TensorFlow.

    There, each new model traces its train step again (seconds for a tiny
    one, more with gradient accumulation). What the checkpoint tests check
    (the pieces, the stored settings, weights and optimizer state, the
    resumed result) does not depend on tracing; the traced step,
    accumulated or not, is checked by
    test_gradient_accumulation_gives_the_whole_batch_update and
    test_fit_regression.
    """
    if keras.backend.backend() != "tensorflow":
        return model
    compile_model = model.compile

    def compile_eagerly(*args, **kwargs):
        compile_model(*args, **dict(kwargs, run_eagerly=True))

    model.compile = compile_eagerly
    return model


# Slow (three runs of several steps each): in the fast set,
# test_checkpoint_of_other_settings_is_an_error reads a checkpoint back and
# test_gradient_accumulation_gives_the_whole_batch_update checks the
# accumulated step.
@pytest.mark.slow
@pytest.mark.parametrize("accumulate", [None, 2], ids=["plain", "accumulated"])
def test_checkpointed_run_resumes_to_the_uninterrupted_result(
    tmp_path, accumulate
):
    """Killed in its third of six batches, resumed in a new model: the
    weights at the end are those of the run that was never stopped."""
    options = dict(
        steps=5,
        batch_size=4,
        learning_rate=1e-2,
        epoch_steps=3,
        set_size=(6, 9),
        verbose=0,
        gradient_accumulation_steps=accumulate,
        # The order of a checkpointed run (its default).
        shuffle=False,
    )
    same_start_model, initial = _same_start_models()

    def fresh_model():
        return _eager_on_tensorflow(same_start_model())

    plain_model = fresh_model()
    plain = mst.fit_estimator(plain_model, "kl_divergence", 2, **options)
    # 5 batches round up to 2 epochs of 3; checkpoints after every 2
    # batches of an epoch: pieces of 2, 1 | 2, 1. Keras counts a batch's
    # slices as its batches.
    slices = accumulate or 1
    folder = tmp_path / "run"
    with pytest.raises(_Interrupt):
        mst.fit_estimator(
            fresh_model(),
            "kl_divergence",
            2,
            checkpoint_dir=folder,
            checkpoint_steps=2,
            callbacks=[_InterruptAt(2 * slices + 1)],
            **options,
        )
    progress = json.loads((folder / "progress.json").read_text())
    assert [
        (c["epoch"], c["start"], c["count"]) for c in progress["chunks"]
    ] == [(0, 0, 2)]
    resumed_model = fresh_model()
    resumed = mst.fit_estimator(
        resumed_model,
        "kl_divergence",
        2,
        checkpoint_dir=folder,
        checkpoint_steps=2,
        **options,
    )
    assert resumed["resumed_chunks"] == 1
    assert resumed["steps"] == plain["steps"] == 6
    assert resumed["checkpoint_steps"] == 2
    progress = json.loads((folder / "progress.json").read_text())
    assert [
        (c["epoch"], c["start"], c["count"]) for c in progress["chunks"]
    ] == [
        (0, 0, 2),
        (0, 2, 1),
        (1, 0, 2),
        (1, 2, 1),
    ]
    moved = [
        np.max(np.abs(np.asarray(w) - w0))
        for w, w0 in zip(plain_model.get_weights(), initial, strict=True)
    ]
    assert max(moved) > 1e-3
    for a, b in zip(
        resumed_model.get_weights(), plain_model.get_weights(), strict=True
    ):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    # Each epoch's loss is the mean over its batches, as without pieces.
    np.testing.assert_allclose(resumed["loss"], plain["loss"], rtol=1e-4)
    # A finished run resumes to its end without training.
    again_model = fresh_model()
    again = mst.fit_estimator(
        again_model,
        "kl_divergence",
        2,
        checkpoint_dir=folder,
        checkpoint_steps=2,
        callbacks=[_InterruptAt(1)],
        **options,
    )
    assert again["resumed_chunks"] == 4
    assert again["seconds"] == resumed["seconds"]
    for a, b in zip(
        again_model.get_weights(), resumed_model.get_weights(), strict=True
    ):
        np.testing.assert_array_equal(a, b)


def test_checkpoint_of_other_settings_is_an_error(tmp_path):
    options = dict(
        steps=2, batch_size=4, epoch_steps=2, set_size=(6, 9), verbose=0
    )
    model = _eager_on_tensorflow(mst.build_model("kl_divergence", **TINY))
    mst.fit_estimator(
        model, "kl_divergence", 2, checkpoint_dir=tmp_path, **options
    )
    with pytest.raises(ValueError, match=r"differ in \['learning_rate'\]"):
        mst.fit_estimator(
            model,
            "kl_divergence",
            2,
            checkpoint_dir=tmp_path,
            learning_rate=0.5,
            **options,
        )
    with pytest.raises(ValueError, match="checkpoint_steps=3, checkpoint_dir"):
        mst.fit_estimator(None, "kl_divergence", 2, checkpoint_steps=3)
    with pytest.raises(ValueError, match="shuffle=True"):
        mst.fit_estimator(
            None, "kl_divergence", 2, checkpoint_dir=tmp_path, shuffle=True
        )
    with pytest.raises(ValueError, match="checkpoint_steps=0"):
        mst.fit_estimator(
            None,
            "kl_divergence",
            2,
            checkpoint_dir=tmp_path,
            checkpoint_steps=0,
        )
