"""The harness fails loudly and cleans up: which component, why (its last log lines), nothing left behind."""

import os
import socket
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


def test_a_port_that_will_not_bind_names_the_component_and_cleans_up(monkeypatch, tmp_path):
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    taken = blocker.getsockname()[1]
    ports = iter([taken])
    real_free_port = cluster_mod.free_port
    monkeypatch.setattr(cluster_mod, "free_port", lambda: next(ports, None) or real_free_port())
    run_dir = tmp_path / "run"
    cp = ControlPlane(run_dir)
    try:
        with pytest.raises(StartError) as err:
            cp.start(node_specs=[], timeout=60)
    finally:
        blocker.close()
    msg = str(err.value)
    assert "kube-apiserver" in msg
    assert "address already in use" in msg
    assert _processes_mentioning(str(run_dir)) == []


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
