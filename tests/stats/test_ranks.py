"""Tests for keras_msets.stats.ranks."""

import numpy as np

from keras_msets.stats import kl_statistics
from keras_msets.stats import mi_statistics
from keras_msets.stats.ranks import column_order


def test_without_ties_the_order_is_the_sorted_order():
    values = np.random.default_rng(0).normal(size=(200, 3))
    np.testing.assert_array_equal(
        column_order(values), np.argsort(values, axis=0)
    )


def test_ties_are_sorted_in_a_seeded_random_order_per_column_and_salt():
    values = np.repeat(np.arange(4.0), 50)[:, None].repeat(2, axis=1)
    order = column_order(values)
    # Sorted: every tied group keeps its value range.
    np.testing.assert_array_equal(
        np.take_along_axis(values, order, axis=0), np.sort(values, axis=0)
    )
    # Not the row order, another order per column and per salt, and the
    # same order on every call.
    assert not np.array_equal(order[:, 0], np.arange(200))
    assert not np.array_equal(order[:, 0], order[:, 1])
    assert not np.array_equal(order, column_order(values, salt=1))
    np.testing.assert_array_equal(order, column_order(values))


def test_tied_groups_carry_no_dependence_or_shift():
    # x and y independent: their copula coordinates stay uncorrelated,
    # where ranks by row made them correlate within every tied group.
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2, size=(400, 1)).astype(float)
    y = rng.integers(0, 2, size=(400, 1)).astype(float)
    zx = mi_statistics.copula_normal(x)
    zy = mi_statistics.copula_normal(y, salt=1)
    assert abs(np.corrcoef(zx[:, 0], zy[:, 0])[0, 1]) < 0.15
    # Two samples of one discrete distribution: pooled ranks give x and y
    # the same mean, where by row x's ties ranked first.
    cx, cy = kl_statistics.copula_normal(x, y)
    assert abs(cx.mean() - cy.mean()) < 0.2


def test_both_layouts_give_the_same_order():
    values = np.repeat(np.arange(5.0), 20)[:, None] * np.ones((1, 3))
    values[:, 2] = np.random.default_rng(2).normal(size=100)
    np.testing.assert_array_equal(
        column_order(values).T, column_order(values.T.copy(), axis=1)
    )
