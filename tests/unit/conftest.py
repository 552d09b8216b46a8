"""Unit tests never touch the network (tests/unit/network_guard.py): a test that tries fails, even when the code
under test swallows the error. Loaded by plain pytest and by ``ansible-test units`` alike."""

import pytest

from ansible_collections.calico_ops.lifecycle.tests.unit import network_guard

network_guard.install()


@pytest.fixture(autouse=True)
def _no_network():
    del network_guard.ATTEMPTS[:]
    yield
    if network_guard.ATTEMPTS:
        attempts = list(network_guard.ATTEMPTS)
        del network_guard.ATTEMPTS[:]
        pytest.fail("the test tried to use the network: %s" % "; ".join(attempts), pytrace=False)
