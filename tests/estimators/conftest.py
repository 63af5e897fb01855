"""Every estimator test starts with no warning given yet (the estimators
warn once per process per preset and reason)."""

import pytest

from keras_msets.estimators import pretrained


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(pretrained, "_WARNED", set())
