"""The control plane starts again on new ports only when a component's port was taken (localcp/cluster.py)."""

import os
import socket
import subprocess
import sys

from localcp import cluster


def test_a_taken_port_is_recognised_in_each_components_words():
    for said in ("kube-apiserver exited with code 1 while starting; last log lines:\nE1129 failed to listen on "
                 "127.0.0.1:23456: listen tcp 127.0.0.1:23456: bind: address already in use",
                 "etcd exited with code 1 while starting; last log lines:\n{\"level\":\"fatal\",\"msg\":\"listen tcp "
                 "127.0.0.1:12345: bind: address already in use\"}",
                 "mirror exited with code 1 while starting; last log lines:\nOSError: [Errno 98] Address already in use"):
        assert cluster._port_taken(said), said


def test_any_other_start_failure_is_not_retried():
    for said in ("kube-apiserver did not become healthy within 120s (timed out); last log lines:\n...",
                 "etcd exited with code 2 while starting; last log lines:\nmember has already been bootstrapped",
                 "no free 127.N.0.0/16 service range: 253 control planes are running"):
        assert not cluster._port_taken(said), said


def test_listens_tells_the_process_holding_a_port_from_any_other():
    """ControlPlane._wait's check that a healthy answer came from the component it started (not another control
    plane's on a port freed a moment before): the process with the listening socket, and no other, is found."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        assert not cluster.listens(os.getpid(), port)  # bound, not listening
        s.listen()
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            assert cluster.listens(os.getpid(), port)
            assert not cluster.listens(other.pid, port)
        finally:
            other.kill()
            other.wait()
    assert not cluster.listens(os.getpid(), port) and not cluster.listens(2 ** 22 + 1, port)


def test_a_connection_on_the_port_is_not_a_listener():
    """An accepted connection keeps the port as its local port (ESTABLISHED, not LISTEN): only a listening socket
    counts."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _addr = listener.accept()
    try:
        assert not cluster.listens(os.getpid(), port)
    finally:
        accepted.close()
        client.close()
