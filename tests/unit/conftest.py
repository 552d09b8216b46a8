"""Unit tests never touch the network (tests/unit/network_guard.py): a test that tries fails, even when the code
under test swallows the error. Loaded by plain pytest and by ``ansible-test units`` alike.

The guard is imported at session start, not when this file loads: pytest loads this file before the plugins'
pytest_configure, and pytest-ansible's installs ansible-core's collection finder there, which cannot serve a
collection package imported before it."""

import importlib

import pytest


def _guard():
    return importlib.import_module("ansible_collections.calico_ops.lifecycle.tests.unit.network_guard")


def pytest_sessionstart(session):
    _guard().install()


@pytest.fixture(autouse=True)
def _no_network():
    guard = _guard()
    del guard.ATTEMPTS[:]
    yield
    if guard.ATTEMPTS:
        attempts = list(guard.ATTEMPTS)
        del guard.ATTEMPTS[:]
        pytest.fail("the test tried to use the network: %s" % "; ".join(attempts), pytrace=False)
