"""Every estimator test starts with no warning given yet (the estimators
warn once per process per preset and reason)."""

import pytest

from keras_msets.estimators import out_of_distribution


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(out_of_distribution, "_WARNED", set())
