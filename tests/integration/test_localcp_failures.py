"""The harness fails loudly and cleans up: which component, why (its last log lines), nothing left behind."""

import http.server
import os
import socket
import threading
from pathlib import Path

import pytest

from localcp import build, cluster as cluster_mod
from localcp.cluster import ControlPlane, StartError

pytestmark = pytest.mark.integration


def _processes_mentioning(text: str) -> list:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if text in cmd and state != "Z":
            found.append((pid, cmd))
    return found


def _taken_port(monkeypatch, every_attempt: bool):
    """A port held open here, handed out as the first port of the start (the API server's) - of every attempt, or of
    the first only - as another control plane's process would hold it; returns (the port, its socket, attempts)."""
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    taken, real_free_port, attempts, fresh = blocker.getsockname()[1], cluster_mod.free_port, [], []
    real_start_once = ControlPlane._start_once

    def start_once(self, *args, **kwargs):
        attempts.append(1)
        if every_attempt or len(attempts) == 1:
            fresh.append(True)
        return real_start_once(self, *args, **kwargs)
    monkeypatch.setattr(ControlPlane, "_start_once", start_once)
    monkeypatch.setattr(cluster_mod, "free_port", lambda: taken if fresh and fresh.pop() else real_free_port())
    return taken, blocker, attempts


def test_a_port_that_will_not_bind_names_the_component_and_cleans_up(monkeypatch, tmp_path):
    """Taken through every attempt (cluster.PORT_ATTEMPTS): the start fails naming the component and its reason, and
    leaves no process behind."""
    taken, blocker, attempts = _taken_port(monkeypatch, every_attempt=True)
    run_dir = tmp_path / "run"
    cp = ControlPlane(run_dir)
    try:
        with pytest.raises(StartError) as err:
            cp.start(node_specs=[], timeout=60)
    finally:
        blocker.close()
    msg = str(err.value)
    assert "kube-apiserver" in msg
    assert "address already in use" in msg and str(taken) in msg
    assert len(attempts) == cluster_mod.PORT_ATTEMPTS
    assert _processes_mentioning(str(run_dir)) == []


def test_a_port_taken_before_its_component_binds_it_starts_the_control_plane_again_on_new_ports(monkeypatch, tmp_path,
                                                                                                capfd):
    """Taken for the first attempt only (free_port() leaves a moment between choosing a port and the component
    binding it; several control planes start side by side in make test): kube-apiserver fails on it, and the start
    is made again from a fresh run dir on new ports, saying so."""
    taken, blocker, attempts = _taken_port(monkeypatch, every_attempt=False)
    cp = ControlPlane(tmp_path / "run", die_with_parent=True)
    try:
        cp.start(node_specs=[], timeout=120)
        err = capfd.readouterr().err
        assert "a port was taken before its component bound it" in err and f"{taken}" in err, err[-3000:]
        assert "kube-apiserver" in err and f"attempt 2 of {cluster_mod.PORT_ATTEMPTS}" in err
        assert len(attempts) == 2 and str(taken) not in cp.server and cp.state["pids"]["etcd"]
    finally:
        cp.stop(remove_dir=True)
        blocker.close()


def test_a_component_that_is_not_healthy_in_time_is_named_and_stopped(tmp_path):
    run_dir = tmp_path / "run"
    cp = ControlPlane(run_dir)
    with pytest.raises(StartError) as err:
        cp.start(node_specs=[], timeout=0.01)
    assert str(err.value).startswith("etcd did not become healthy within 0s")
    assert _processes_mentioning(str(run_dir)) == []


def test_a_module_that_cannot_be_downloaded_is_reported(tmp_path):
    with pytest.raises(build.BuildError) as err:
        build._module_gomod("k8s.io/kubernetes", "v1.33.999", tmp_path)  # pylint: disable=protected-access
    assert "k8s.io/kubernetes@v1.33.999" in str(err.value)


def test_a_healthy_answer_from_another_process_on_etcds_port_is_a_taken_port(monkeypatch, tmp_path, capfd):
    """Another control plane's etcd restarted on a port this start had just chosen answers etcd's health check (seen
    in a full run: etcd 'healthy' within 0.01 s). The answer is not from the etcd started here, so the port counts as
    taken and the start is made again on new ports - not carried on with an API server pointed at a foreign etcd."""
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"health":"true"}')

        def log_message(self, *args):
            pass
    foreign = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=foreign.serve_forever, daemon=True).start()
    port, real_free_port, calls, attempts = foreign.server_address[1], cluster_mod.free_port, [], []
    real_start_once = ControlPlane._start_once

    def start_once(self, *args, **kwargs):
        attempts.append(1)
        calls.clear()
        return real_start_once(self, *args, **kwargs)

    def free_port():
        calls.append(1)  # the start's second port is etcd's client port
        return port if len(attempts) == 1 and len(calls) == 2 else real_free_port()
    monkeypatch.setattr(ControlPlane, "_start_once", start_once)
    monkeypatch.setattr(cluster_mod, "free_port", free_port)
    cp = ControlPlane(tmp_path / "run", die_with_parent=True)
    try:
        cp.start(node_specs=[], timeout=120)
        err = capfd.readouterr().err
        assert f"etcd: 127.0.0.1:{port} answered, but not from etcd" in err, err[-3000:]
        assert len(attempts) == 2 and str(port) not in cp.state["etcd"]
    finally:
        cp.stop(remove_dir=True)
        foreign.shutdown()
        foreign.server_close()
