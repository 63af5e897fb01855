"""Tests of the pretrained-estimator API (`keras_msets.estimators.pretrained`).

The presets are not trained yet, so the API runs on tiny untrained models
built by `build_multiset_model`; what is tested is what does not depend
on training: the preprocessing (against numpy references written here),
exact invariances, batching, the default-preset path through a temporary
zoo folder, and the errors.
"""

import json
import shutil
import warnings

import numpy as np
import pytest

from keras_msets import zoo
from keras_msets.estimators import multiset
from keras_msets.estimators import pretrained
from keras_msets.estimators.pretrained import kl_divergence
from keras_msets.estimators.pretrained import mutual_information
from keras_msets.estimators.pretrained import same_distribution_probability
from keras_msets.estimators.pretrained import standardize_pairs
from keras_msets.estimators.pretrained import whiten_pairs
from keras_msets.models.mst.multiset_transformer import build_multiset_model
from keras_msets.zoo import registry

# Which preset answers a pair (by d, by the installed presets' metadata)
# is decided in numpy before any model runs; the tiny stand-in models'
# save, load and outputs on every backend are checked by the layer and
# registry tests. So `make test` runs the routing tests on one backend.
ROUTING = pytest.mark.backend_independent
TINY = {"latent_dim": 4, "ff_dim": 8, "num_blocks": 1, "num_heads": 2}


@pytest.fixture(scope="module")
def equivariant():
    """A tiny dimension-equivariant model (any d), built on d = 3."""
    model = build_multiset_model("dimension_equivariant", **TINY)
    model([np.zeros((1, 4, 3), "float32")] * 2)
    return model


@pytest.fixture(scope="module")
def eight_d():
    """A tiny fixed-dimension model for d = 8 with a sigmoid output."""
    model = build_multiset_model(
        "multiset_transformer", output_activation="sigmoid", **TINY
    )
    model([np.zeros((1, 4, 8), "float32")] * 2)
    return model


def _pair(rng, n=110, m=120, d=3):
    x = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + 2.0
    y = rng.standard_t(5, size=(m, d)) + rng.normal(size=d)
    return x, y


def _random_affine(rng, d):
    while True:
        a = rng.normal(size=(d, d))
        if abs(np.linalg.det(a)) > 0.3:
            return a, rng.normal(size=d) * 5


# The shipped estimator presets' `serves` records (read before a test
# points the zoo at a temporary folder).
SERVES = {
    name: zoo.info(name)["serves"]
    for name in (
        "mst_kl_divergence",
        "mst_kl_divergence_low_d",
        "mst_mutual_information",
        "mst_mutual_information_joint",
        "mst_two_sample",
    )
}


def _spec(key):
    """The spec of a shipped preset by its old key."""
    return pretrained.SPECS[key]


def _estimator(key):
    return {
        "kl_divergence_low_d": "kl_divergence",
        "mutual_information_joint": "mutual_information",
    }.get(key, key)


def _estimate(key, x, y, model, batch_size=64, **options):
    return multiset.estimate_pairs(
        _estimator(key), _spec(key), x, y, model, batch_size, **options
    )


def _unclipped(estimator, x, y, model):
    return _estimate(estimator, x, y, model, clip=False)


def _save(model, folder, **serves):
    """Saves `model` as a preset named like the folder, serving what the
    shipped preset of that name serves (changed by `serves`)."""
    registry.save_preset(
        model,
        folder,
        data="none",
        metrics={},
        card="test",
        serves=dict(SERVES[folder.name], **serves),
    )


# Preprocessing -------------------------------------------------------------


def _reference_whiten(x, y):
    """Eq. 15 from the definitions, then the canonical rotation."""
    union = np.concatenate([x, y])
    mean = union.mean(0)
    cov = np.cov(union.T)
    vals, vecs = np.linalg.eigh(cov)
    root = vecs @ np.diag(vals**-0.5) @ vecs.T
    xw, yw = (x - mean) @ root.T, (y - mean) @ root.T
    vals, vecs = np.linalg.eigh(np.cov(xw.T))
    vecs = vecs[:, np.argsort(vals)[::-1]]
    vecs *= np.where(xw.mean(0) @ vecs < 0, -1.0, 1.0)
    return xw @ vecs, yw @ vecs


def test_whiten_pairs_matches_a_numpy_reference_and_ignores_padding():
    rng = np.random.default_rng(0)
    x, y = _pair(rng, n=20, m=25, d=3)
    px = np.zeros((1, 32, 3))
    py = np.zeros((1, 30, 3))
    px[0, :20], py[0, :25] = x, y
    mx, my = px[..., 0] != 0, py[..., 0] != 0
    mx[0, :20], my[0, :25] = True, True
    xw, yw = whiten_pairs(px, py, mx, my)
    rx, ry = _reference_whiten(x, y)
    np.testing.assert_allclose(xw[0, :20], rx, atol=1e-10)
    np.testing.assert_allclose(yw[0, :25], ry, atol=1e-10)
    assert np.all(xw[0, 20:] == 0) and np.all(yw[0, 25:] == 0)
    union = np.concatenate([rx, ry])
    np.testing.assert_allclose(np.cov(union.T), np.eye(3), atol=1e-10)
    cov_x = np.cov(rx.T)
    np.testing.assert_allclose(cov_x, np.diag(np.diag(cov_x)), atol=1e-10)
    assert np.all(np.diff(np.diag(cov_x)) <= 0)
    assert np.all(rx.mean(0) > 0)


def test_whiten_pairs_removes_any_affine_map():
    rng = np.random.default_rng(1)
    x, y = _pair(rng, d=4)
    a, b = _random_affine(rng, 4)
    before = whiten_pairs(x[None], y[None])
    after = whiten_pairs((x @ a.T + b)[None], (y @ a.T + b)[None])
    for u, v in zip(before, after, strict=True):
        np.testing.assert_allclose(u, v, atol=1e-8)


def test_standardize_pairs_matches_numpy_per_set_and_coordinate():
    rng = np.random.default_rng(2)
    x = rng.normal(3.0, 2.0, size=(2, 12, 3))
    y = rng.normal(-1.0, 0.5, size=(2, 12, 3))
    mask = np.arange(12)[None, :] < np.array([[12], [9]])
    xs, ys = standardize_pairs(x, y, mask, mask)
    for b, n in enumerate((12, 9)):
        for raw, out in ((x, xs), (y, ys)):
            expected = (raw[b, :n] - raw[b, :n].mean(0)) / raw[b, :n].std(
                0, ddof=1
            )
            np.testing.assert_allclose(out[b, :n], expected, atol=1e-12)
            assert np.all(out[b, n:] == 0)
    with pytest.raises(ValueError, match="constant"):
        standardize_pairs(np.ones((1, 5, 2)), y[:1, :5])


# Invariances and batching --------------------------------------------------


def test_kl_is_exactly_invariant_under_affine_maps(equivariant):
    rng = np.random.default_rng(3)
    x, y = _pair(rng, d=3)
    a, b = _random_affine(rng, 3)
    # Unclipped model outputs: an untrained model may well be negative.
    raw = _unclipped("kl_divergence", x, y, equivariant)
    moved = _unclipped("kl_divergence", x @ a.T + b, y @ a.T + b, equivariant)
    np.testing.assert_allclose(moved, raw, rtol=1e-5, atol=1e-6)
    # The model is not constant: another y changes the output.
    other = _unclipped("kl_divergence", x, y + [3.0, 0, 0], equivariant)
    assert abs(other - raw) > 1e-4
    kl = kl_divergence(x, y, model=equivariant)
    assert isinstance(kl, float) and kl == max(raw, 0.0)


def test_kl_of_a_batch_equals_pair_by_pair(equivariant):
    rng = np.random.default_rng(4)
    pairs = [_pair(rng, n, m, d) for n, m, d in ((100, 140, 3), (120, 101, 3))]
    pairs.append(_pair(rng, 130, 110, 2))  # another dimension in the batch
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    together = kl_divergence(xs, ys, model=equivariant, batch_size=2)
    one_by_one = [kl_divergence(x, y, model=equivariant) for x, y in pairs]
    assert together.shape == (3,) and together.dtype == np.float64
    np.testing.assert_allclose(together, one_by_one, rtol=1e-5, atol=1e-6)
    # A 3-D array is a batch too.
    stacked = kl_divergence(
        np.stack([x[:100] for x in xs[:2]]),
        np.stack([y[:100] for y in ys[:2]]),
        model=equivariant,
    )
    single = [
        kl_divergence(x[:100], y[:100], model=equivariant)
        for x, y in zip(xs[:2], ys[:2], strict=True)
    ]
    np.testing.assert_allclose(stacked, single, rtol=1e-5, atol=1e-6)


def test_mutual_information_is_invariant_per_coordinate(equivariant):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(120, 3))
    y = 0.8 * x + 0.6 * rng.normal(size=(120, 3))
    scale_x, scale_y = rng.uniform(0.1, 10, 3), rng.uniform(0.1, 10, 3)
    raw = _unclipped("mutual_information", x, y, equivariant)
    moved = _unclipped(
        "mutual_information", x * scale_x + 4.0, y * scale_y - 7.0, equivariant
    )
    np.testing.assert_allclose(moved, raw, rtol=1e-5, atol=1e-6)
    assert mutual_information(x, y, model=equivariant) == max(raw, 0.0)


def test_joint_and_product_sets_pair_the_rows_and_permute_y():
    rng = np.random.default_rng(11)
    xs = [rng.normal(size=(n, 2)) for n in (7, 9)]
    ys = [rng.normal(size=(n, 3)) for n in (7, 9)]
    joint, product = pretrained.joint_and_product_sets(xs, ys)
    for x, y, j, p in zip(xs, ys, joint, product, strict=True):
        np.testing.assert_array_equal(j, np.concatenate([x, y], axis=1))
        # The x part stays; the y part is a permutation of the rows of y
        # that moves some rows.
        np.testing.assert_array_equal(p[:, :2], x)
        order = [int(np.flatnonzero((y == row).all(1))[0]) for row in p[:, 2:]]
        assert sorted(order) == list(range(len(y)))
        assert order != list(range(len(y)))
    # The permutation depends on the seed and the size only: the answer
    # for a pair does not depend on the rest of a batch.
    again, again_product = pretrained.joint_and_product_sets(xs[1:], ys[1:])
    np.testing.assert_array_equal(again_product[0], product[1])
    with pytest.raises(ValueError, match=r"same number of rows.*x\[0\]"):
        pretrained.joint_and_product_sets([xs[0]], [ys[1]])


def test_joint_mutual_information_reads_joint_against_product(equivariant):
    rng = np.random.default_rng(12)
    x = rng.normal(size=(120, 2))
    y = 0.8 * x + 0.6 * rng.normal(size=(120, 2))
    joint, product = pretrained.joint_and_product_sets([x], [y])
    # Both sets have the same mean, so the axes are oriented by the third
    # moment (the mean rule would follow float noise).
    wj, wp = pretrained.whiten_pairs(
        joint[0][None], product[0][None], sign="third_moment"
    )
    mean_rule = pretrained.whiten_pairs(joint[0][None], product[0][None])
    assert np.abs(mean_rule[0][0].mean(0)).max() < 1e-9
    ones = np.ones((1, 120), bool)
    expected = pretrained.predict_prepared(
        equivariant, wj.astype("float32"), wp.astype("float32"), ones, ones
    )[0]
    got = _estimate("mutual_information_joint", x, y, equivariant, clip=False)
    # Up to float32 rounding: the estimator pads the sets to 128 rows.
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        mutual_information(
            x, y, model=equivariant, mode="joint", permutations=1
        ),
        max(got, 0.0),
        rtol=1e-12,
    )
    # By default the answer is the mean of the readings with the
    # permutations of seeds 0..7 (seed 0: the reading above).
    readings = []
    for k in range(pretrained.JOINT_PERMUTATIONS):
        joint_k, product_k = pretrained.joint_and_product_sets([x], [y], seed=k)
        wj_k, wp_k = pretrained.whiten_pairs(
            joint_k[0][None], product_k[0][None], sign="third_moment"
        )
        readings.append(
            pretrained.predict_prepared(
                equivariant,
                wj_k.astype("float32"),
                wp_k.astype("float32"),
                ones,
                ones,
            )[0]
        )
    assert pretrained.JOINT_PERMUTATIONS == 8
    np.testing.assert_allclose(readings[0], expected, rtol=1e-6)
    assert np.std(readings) > 1e-4  # the permutations differ
    averaged = _estimate(
        "mutual_information_joint",
        x,
        y,
        equivariant,
        clip=False,
        permutations=8,
    )
    np.testing.assert_allclose(
        averaged, np.mean(readings), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        mutual_information(x, y, model=equivariant, mode="joint"),
        max(averaged, 0.0),
        rtol=1e-12,
    )
    # The readings of a pair do not depend on the rest of its batch.
    batch = mutual_information(
        [x, x[:100], y], [y, y[:100], x], model=equivariant, mode="joint"
    )
    np.testing.assert_allclose(batch[0], max(averaged, 0.0), rtol=1e-5)
    for bad in (0, 1.5, True, "8"):
        with pytest.raises(ValueError, match="`permutations` must be a pos"):
            mutual_information(
                x, y, model=equivariant, mode="joint", permutations=bad
            )
    # Invariant under an invertible affine map of x and one of y.
    a, b = _random_affine(rng, 2)
    c, e = _random_affine(rng, 2)
    moved = _estimate(
        "mutual_information_joint",
        x @ a.T + b,
        y @ c.T + e,
        equivariant,
        clip=False,
    )
    np.testing.assert_allclose(moved, got, rtol=1e-5, atol=1e-6)
    # d = 1 works in the joint mode (joint dimension 2) and needs 2d + 1
    # rows; the split mode does not take d = 1 from its preset, and a
    # wrong mode is named.
    assert (
        mutual_information(x[:, :1], y[:, :1], model=equivariant, mode="joint")
        >= 0
    )
    with pytest.raises(ValueError, match=r"at least 2d \+ 1 = 5 points"):
        mutual_information(x[:4], y[:4], model=equivariant, mode="joint")
    with pytest.raises(ValueError, match="`sign` must be"):
        pretrained.whiten_pairs(joint[0][None], product[0][None], sign="max")
    with pytest.raises(ValueError, match="`mode` must be None or one of"):
        mutual_information(x, y, model=equivariant, mode="paired")


def test_same_distribution_probability_is_a_probability(eight_d):
    rng = np.random.default_rng(6)
    xs = [rng.normal(size=(n, 8)) for n in (12, 25, 30)]
    ys = [rng.normal(size=(n, 8)) + 1 for n in (20, 10, 18)]
    p = same_distribution_probability(xs, ys, model=eight_d)
    assert p.shape == (3,) and np.all((p > 0) & (p < 1))
    # The question is symmetric, and so is the answer (the mean of the
    # model's answers in both orders), which the model alone is not.
    swapped = same_distribution_probability(ys, xs, model=eight_d)
    np.testing.assert_allclose(swapped, p, rtol=1e-12)
    answers = []
    for a, b in ((xs[0], ys[0]), (ys[0], xs[0])):
        wa, wb = pretrained.whiten_pairs(a[None], b[None])
        ones = np.ones((1, len(a)), bool), np.ones((1, len(b)), bool)
        answers.append(
            pretrained.predict_prepared(
                eight_d, wa.astype("float32"), wb.astype("float32"), *ones
            )[0]
        )
    assert abs(answers[0] - answers[1]) > 1e-6
    np.testing.assert_allclose(p[0], np.mean(answers), rtol=1e-5)
    a, b = _random_affine(rng, 8)
    moved = same_distribution_probability(
        [x @ a.T + b for x in xs], [y @ a.T + b for y in ys], model=eight_d
    )
    np.testing.assert_allclose(moved, p, rtol=1e-5, atol=1e-6)


# The default preset --------------------------------------------------------


def test_default_loads_the_preset_once(tmp_path, monkeypatch, equivariant):
    # It claims default dimensions, as before the refined preset became
    # the default (the shipped one serves only by name now).
    _save(equivariant, tmp_path / "mst_kl_divergence", default_dims=[4, 16])
    monkeypatch.setenv(registry.ZOO_DIR_ENV, str(tmp_path))
    rng = np.random.default_rng(7)
    x, y = _pair(rng, d=5)
    assert pretrained.load_estimator("mst_kl_divergence") is (
        pretrained.load_estimator("mst_kl_divergence")
    )
    np.testing.assert_allclose(
        kl_divergence(x, y),
        kl_divergence(x, y, model=equivariant),
        rtol=1e-6,
    )
    # The preset supports d = 2..16 only, even though the model takes any d.
    for d in (1, 17):
        with pytest.raises(ValueError, match=r"d = 2\.\.16.*d=" + str(d)):
            kl_divergence(*_pair(rng, d=d), model="mst_kl_divergence")
    # The default knows the d its installed presets claim: here only
    # d = 4..16 (`serves.default_dims`).
    for d in (3, 17):
        with pytest.raises(
            ValueError, match=r"d = 4\.\.16 \(d = 4\.\.16 through .*d=" + str(d)
        ):
            kl_divergence(*_pair(rng, d=d))


@ROUTING
def test_default_kl_divergence_routes_each_pair_by_d(
    tmp_path, monkeypatch, equivariant
):
    # Two different tiny models stand in for the two presets; each pair
    # must get the answer of the preset that serves its d.
    low_d = build_multiset_model("dimension_equivariant", **TINY)
    low_d([np.zeros((1, 4, 3), "float32")] * 2)
    # The same weights with the output bias raised by 10: every answer of
    # `low_d` is the other's plus 10 before clipping at 0.
    weights = equivariant.get_weights()
    low_d.set_weights([*weights[:-1], weights[-1] + 10.0])
    # Both claim default dimensions, as before the refined preset became
    # the default (the shipped ones serve only by name now).
    for name, model, dims in (
        ("mst_kl_divergence", equivariant, [4, 16]),
        ("mst_kl_divergence_low_d", low_d, [1, 3]),
    ):
        _save(model, tmp_path / name, default_dims=dims)
    monkeypatch.setenv(registry.ZOO_DIR_ENV, str(tmp_path))
    rng = np.random.default_rng(14)
    dims = (1, 4, 3, 2, 16)
    pairs = [_pair(rng, d=d) for d in dims]
    got = kl_divergence([x for x, _ in pairs], [y for _, y in pairs])
    expected = [
        kl_divergence(x, y, model=low_d if d <= 3 else equivariant)
        for (x, y), d in zip(pairs, dims, strict=True)
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    # The two models differ, so the routing is seen.
    for (x, y), d, answer in zip(pairs, dims, expected, strict=True):
        other = kl_divergence(x, y, model=equivariant if d <= 3 else low_d)
        assert abs(other - answer) > 1.0, (d, other, answer)
    assert isinstance(kl_divergence(*pairs[0]), float)
    # The low-d preset by name: its own range, d = 1..3.
    np.testing.assert_allclose(
        kl_divergence(*pairs[3], model="mst_kl_divergence_low_d"),
        expected[3],
        rtol=1e-6,
    )
    with pytest.raises(ValueError, match=r"d = 1\.\.3.*d=4"):
        kl_divergence(*pairs[1], model="mst_kl_divergence_low_d")


@ROUTING
def test_default_mutual_information_routes_each_pair_by_d(
    tmp_path, monkeypatch, equivariant
):
    # Two different tiny models stand in for the two presets; each pair
    # must get the answer of the preset that serves its d.
    split = build_multiset_model("dimension_equivariant", **TINY)
    split([np.zeros((1, 4, 3), "float32")] * 2)
    split.set_weights([w + 0.1 for w in equivariant.get_weights()])
    # Both claim default dimensions, as before the refined preset became
    # the default (the shipped ones serve only by name now).
    for name, model, dims in (
        ("mst_mutual_information_joint", equivariant, [1, 8]),
        ("mst_mutual_information", split, [9, 20]),
    ):
        _save(model, tmp_path / name, default_dims=dims)
    monkeypatch.setenv(registry.ZOO_DIR_ENV, str(tmp_path))
    rng = np.random.default_rng(13)
    xs = [rng.normal(size=(110, d)) for d in (1, 8, 9, 2)]
    ys = [x + rng.normal(size=x.shape) for x in xs]
    got = mutual_information(xs, ys)
    expected = [
        mutual_information(
            x, y, model=equivariant if d <= 8 else split,
            mode="joint" if d <= 8 else "split",
        )
        for x, y, d in zip(xs, ys, (1, 8, 9, 2), strict=True)
    ]  # fmt: skip
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert isinstance(mutual_information(xs[0], ys[0]), float)
    # A preset name brings its own mode; mode= overrides.
    np.testing.assert_allclose(
        mutual_information(xs[3], ys[3], model="mst_mutual_information_joint"),
        expected[3],
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        mutual_information(xs[3], ys[3], mode="split"),
        mutual_information(xs[3], ys[3], model=split, mode="split"),
        rtol=1e-6,
    )
    x = rng.normal(size=(110, 21))
    with pytest.raises(ValueError, match=r"d = 1\.\.20.*d=21"):
        mutual_information(x, x)
    with pytest.raises(ValueError, match=r"d = 1\.\.8.*d=9"):
        mutual_information(xs[2], ys[2], mode="joint")
    with pytest.raises(ValueError, match=r"d = 2\.\.20.*d=1"):
        mutual_information(xs[0], ys[0], mode="split")


# Errors ---------------------------------------------------------------------


def test_errors(equivariant, eight_d):
    rng = np.random.default_rng(8)
    x, y = _pair(rng, d=3)
    kl = pretrained.kl_divergence
    cases = [
        ((x[0], y), "one set, a 2-D array"),  # rank 1
        ((x[None, None], y), "one set, a 2-D array"),  # rank 4
        ((x, y[:, :2]), "same dimension d"),
        ((np.where(np.eye(110, 3) > 0, np.nan, x), y), "finite"),
        ((x, np.where(np.eye(120, 3) > 0, np.inf, y)), "finite"),
        ((x[:3], y), "at least d \\+ 1 = 4 points"),
        ((x, y[:2]), "at least d \\+ 1 = 4 points"),
        (([x, x], [y]), "same number of sets"),
        ((x, [y]), "both be one set"),
        (([x, x[:, :2]], [y, y]), "same dimension d.*pair 1"),
    ]
    for (a, b), message in cases:
        with pytest.raises(ValueError, match=message):
            kl(a, b, model=equivariant)
    with pytest.raises(ValueError, match="same number of rows"):
        mutual_information(x, y, model=equivariant)
    with pytest.raises(ValueError, match=r"supports d = 8 .*Received: d=3"):
        same_distribution_probability(x, y, model=eight_d)
    with pytest.raises(ValueError, match="batch_size"):
        kl(x, y, model=equivariant, batch_size=0)
    # The default (statistics) presets use neither argument: a wrong value
    # is refused all the same, before any work.
    for estimator in (
        kl_divergence,
        mutual_information,
        same_distribution_probability,
    ):
        with pytest.raises(ValueError, match=r"batch_size.*Received: batch_"):
            estimator(x[:110], y[:110], batch_size="64")
    with pytest.raises(ValueError, match="Received: permutations=0"):
        mutual_information(x[:110], y[:110], permutations=0)
    with pytest.raises(ValueError, match="keras.Model"):
        kl(x, y, model=object())


def test_sets_outside_the_trained_sizes_warn(equivariant):
    rng = np.random.default_rng(9)
    x, y = _pair(rng, n=20, m=120, d=3)
    with pytest.warns(UserWarning, match="100-150 points; these have 20-120"):
        kl_divergence(x, y, model=equivariant)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kl_divergence(*_pair(rng, d=3), model=equivariant)
    assert not [w for w in caught if "trained on sets" in str(w.message)]


def test_unlearned_dims_compares_with_the_best_constant():
    metrics = {
        "mae_d2": 0.1,
        "median_mae_d2": 0.2,
        "mae_d16": 5.0,
        "median_mae_d16": 4.0,
        "mae_d8": 1.0,  # no constant baseline recorded: not judged
        "knn_mae_d2": 9.0,
        # Better than the constant, but by less than 10 %: not learned.
        "mae_d4": 0.95,
        "median_mae_d4": 1.0,
        "mae_d20": 0.85,
        "median_mae_d20": 1.0,
    }
    assert pretrained.unlearned_dims(metrics) == [4, 16]
    assert pretrained.unlearned_dims({}) == []


# Routing from the presets' metadata ----------------------------------------


def test_the_shipped_presets_route_as_before():
    assert pretrained.route_spans("kl_divergence") == [
        ("knn_refined_kl_divergence", 1, 25)
    ]
    assert pretrained.route_spans("mutual_information") == [
        ("knn_refined_mutual_information", 1, 25)
    ]
    assert pretrained.route_spans("same_distribution_probability") == [
        ("two_sample_statistics", 1, 16)
    ]
    spec = pretrained.SPECS["mutual_information_joint"]
    assert (spec.dims, spec.set_size, spec.preprocessing) == (
        (1, 8),
        (100, 150),
        "whiten_third_moment",
    )
    assert spec.paired and spec.joint and not spec.symmetric
    assert pretrained.SPECS["same_distribution_probability"].symmetric


def test_a_preset_of_another_estimator_is_refused():
    rng = np.random.default_rng(20)
    x, y = _pair(rng, d=8)
    with pytest.raises(ValueError) as error:
        same_distribution_probability(x, y, model="mst_kl_divergence")
    message = str(error.value)
    assert "`model`" in message and "mst_kl_divergence" in message
    assert "same_distribution_probability" in message
    assert "serves `kl_divergence`" in message
    with pytest.raises(ValueError, match="serves `same_distribution_prob"):
        kl_divergence(x, y, model="mst_two_sample")
    with pytest.raises(ValueError, match="serves `kl_divergence`"):
        mutual_information(x, x, model="mst_kl_divergence_low_d")
    with pytest.raises(ValueError, match="not an estimator preset"):
        kl_divergence(x, y, model="complex_deepsets_units_digit")
    with pytest.raises(ValueError, match="mode='joint'"):
        mutual_information(
            x, x, model="mst_mutual_information_joint", mode="split"
        )


@ROUTING
def test_routing_follows_the_installed_presets_metadata(
    tmp_path, monkeypatch, equivariant
):
    # A third KL preset claims d = 4..5; the general one then serves from
    # d = 6 on. Each stands in with its own output bias.
    models = {}
    for shift, name in enumerate(
        (
            "mst_kl_divergence_low_d",
            "mst_kl_divergence_mid",
            "mst_kl_divergence",
        )
    ):
        model = build_multiset_model("dimension_equivariant", **TINY)
        model([np.zeros((1, 4, 3), "float32")] * 2)
        weights = equivariant.get_weights()
        model.set_weights([*weights[:-1], weights[-1] + 10.0 * (shift + 1)])
        models[name] = model
    _save(
        models["mst_kl_divergence_low_d"],
        tmp_path / "mst_kl_divergence_low_d",
        default_dims=[1, 3],
    )
    _save(
        models["mst_kl_divergence"],
        tmp_path / "mst_kl_divergence",
        default_dims=[6, 16],
    )
    registry.save_preset(
        models["mst_kl_divergence_mid"],
        tmp_path / "mst_kl_divergence_mid",
        data="none",
        metrics={},
        card="test",
        serves=dict(SERVES["mst_kl_divergence"], default_dims=[4, 5]),
    )
    monkeypatch.setenv(registry.ZOO_DIR_ENV, str(tmp_path))
    assert pretrained.route_spans("kl_divergence") == [
        ("mst_kl_divergence_low_d", 1, 3),
        ("mst_kl_divergence_mid", 4, 5),
        ("mst_kl_divergence", 6, 16),
    ]
    rng = np.random.default_rng(21)
    dims = (2, 4, 5, 6)
    pairs = [_pair(rng, d=d) for d in dims]
    got = kl_divergence([x for x, _ in pairs], [y for _, y in pairs])
    owners = ("mst_kl_divergence_low_d", "mst_kl_divergence_mid") + (
        "mst_kl_divergence_mid",
        "mst_kl_divergence",
    )
    expected = [
        kl_divergence(x, y, model=models[owner])
        for (x, y), owner in zip(pairs, owners, strict=True)
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    # A preset folder by path is read the same way.
    np.testing.assert_allclose(
        kl_divergence(*pairs[1], model=tmp_path / "mst_kl_divergence_mid"),
        expected[1],
        rtol=1e-6,
    )
    # Two presets claiming d = 5: a clear error naming both.
    metadata_path = tmp_path / "mst_kl_divergence" / "metadata.json"
    metadata = json.loads(metadata_path.read_text())
    metadata["serves"]["default_dims"] = [5, 16]
    metadata_path.write_text(json.dumps(metadata))
    with pytest.raises(ValueError, match=r"mst_kl_divergence_mid.*claim d = 5"):
        kl_divergence(*pairs[0])
    # None claiming any d.
    for name in ("mst_kl_divergence", "mst_kl_divergence_mid"):
        shutil.rmtree(tmp_path / name)
    (tmp_path / "mst_kl_divergence_low_d").rename(tmp_path / "renamed")
    metadata_path = tmp_path / "renamed" / "metadata.json"
    metadata = json.loads(metadata_path.read_text())
    metadata["serves"]["default_dims"] = None
    metadata_path.write_text(json.dumps(metadata))
    with pytest.raises(ValueError, match="No installed preset serves"):
        kl_divergence(*pairs[0])
    # By name it still works (default_dims None: only when asked).
    kl_divergence(*pairs[0], model="renamed")
