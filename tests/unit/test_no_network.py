"""The guard of tests/unit/network_guard.py: a connection or a name lookup raises, and is recorded so that a test
whose code swallows the error still fails."""

import socket

import pytest

from ansible_collections.calico_ops.lifecycle.tests.unit import network_guard


@pytest.mark.parametrize("attempt", [
    lambda: socket.create_connection(("192.0.2.1", 443), timeout=1),
    lambda: socket.getaddrinfo("example.com", 443),
    lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM).connect_ex(("::1", 6443, 0, 0)),
])
def test_network_use_is_refused_and_recorded(attempt):
    with pytest.raises(network_guard.NetworkAccessInUnitTest, match="unit tests must not use the network"):
        attempt()
    assert network_guard.ATTEMPTS, "the attempt was not recorded"
    del network_guard.ATTEMPTS[:]  # recorded: the autouse fixture would fail this test otherwise
