"""Unit tests never touch the network: once ``install()`` has run, any attempt to open an Internet (or
loopback) connection, or to resolve a host name, raises ``NetworkAccessInUnitTest`` and is recorded in
``ATTEMPTS``, so the autouse fixture of tests/unit/conftest.py fails the test that made it even where the code
under test catches the error. Imported by its collection name only, so plain pytest and ``ansible-test units``
share one copy of this state."""

import ipaddress
import socket

ATTEMPTS = []


class NetworkAccessInUnitTest(AssertionError):
    pass


def _refuse(what):
    ATTEMPTS.append(what)
    raise NetworkAccessInUnitTest("unit tests must not use the network: %s" % what)


def install():
    if getattr(socket, "_calico_ops_guarded", False):
        return
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    unix = getattr(socket, "AF_UNIX", None)

    def connect(self, address):
        if self.family == unix:
            return real_connect(self, address)
        return _refuse("connect to %r" % (address,))

    def connect_ex(self, address):
        if self.family == unix:
            return real_connect_ex(self, address)
        return _refuse("connect to %r" % (address,))

    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        # an IP address literal (ansible-core probes getaddrinfo('127.0.0.1') on import) asks no name server
        try:
            ipaddress.ip_address(host.decode() if isinstance(host, bytes) else host)
        except ValueError:
            return _refuse("resolve %r" % (host,))
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect
    socket.socket.connect_ex = connect_ex
    socket.getaddrinfo = getaddrinfo
    socket._calico_ops_guarded = True
