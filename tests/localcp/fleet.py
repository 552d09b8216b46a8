"""A fleet of local control planes as an inventory whose hosts are clusters (docs/fleet.md): the shared steps of
tests/integration/test_fleet.py and of the fleet benchmark (``make bench-fleet``, benchmarks/fleet.py).

``start(names)`` starts one small control plane per name (one kwok node, the kubeadm shape: its kube-proxy
DaemonSet); ``write_inventory`` writes the inventory: group ``calico_fleet``, each host a cluster with its own
kubeconfig (``calico_kubeconfig``) and release mirror (``calico_manifest_url``), and what inventories/local says for
the local control plane set for every cluster. ``CONTROLLER_ENV`` is an environment that names no cluster: a task
that reached for anything but its own host's settings would fail.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from .cluster import ControlPlane
from .fixtures import KWOK_FELIX_WINDOW_VAR, NO_NETWORK_VARS, Cluster
from .nodes import default_specs

CONTROLLER_ENV = {"KUBECONFIG": "/nonexistent/kubeconfig", "K8S_AUTH_KUBECONFIG": "/nonexistent/kubeconfig",
                  "CALICO_OPS_MIRROR_URL": "http://127.0.0.1:9/nowhere"}


def start(names: list, nodes: int = 1) -> dict:
    """{name: Cluster}, started one after another; on a failure the ones started are stopped."""
    out = {}
    try:
        for name in names:
            out[name] = Cluster(_start_one(nodes))
    except BaseException:
        stop(out)
        raise
    return out


def _start_one(nodes: int, attempts: int = 3) -> ControlPlane:
    """One control plane, started again (a new run dir, new ports) when it does not come up: with several control
    planes running, one of their processes can bind a port free_port() picked before the component does (seen:
    kube-apiserver "bind: address already in use" as the fourth of five started), and under load kwok's CRD was not
    Established within 120 s. A failed attempt leaves no run dir and no process."""
    for attempt in range(1, attempts + 1):
        cp = ControlPlane(die_with_parent=True)
        try:
            return cp.start(node_specs=default_specs(nodes), shape="kubeadm")
        except BaseException as exc:
            cp.stop(remove_dir=True)  # start() stops what it started but keeps the run dir: nothing is left here
            # a control plane that did not come up is started again, a new one: under make test's load one of five
            # lost its port to another's process ("address already in use") or saw kwok's CRD not Established in
            # 120 s; anything else, or the last attempt, fails the caller
            if attempt == attempts or isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
    raise AssertionError("unreachable")


def stop(clusters: dict, remove_dir: bool = True) -> None:
    for cluster in clusters.values():
        cluster.cp.stop(remove_dir=remove_dir)


def write_inventory(clusters: dict, path: Path, work: Path, overrides: dict | None = None) -> Path:
    hosts = {}
    for name, cluster in clusters.items():
        hosts[name] = {"calico_kubeconfig": cluster.cp.kubeconfig, "calico_manifest_url": cluster.cp.mirror_url}
        hosts[name].update((overrides or {}).get(name, {}))
    group_vars = {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        # what inventories/local/group_vars/all says for the local control plane, for each cluster here
        "calico_platform": "kubeadm", "ebpf_install_variant": "Calico", "services_endpoint_allow_ip": True,
        "services_endpoint_allow_loopback": True, "ebpf_install_poll_interval": 5,
        "ebpf_install_artifacts_dir": str(Path(work) / "artifacts" / "{{ inventory_hostname }}"),
        "preflight_report_dir": str(Path(work) / "report" / "{{ inventory_hostname }}"),
        # kwok's nodes: no Felix restarts onto eBPF, no packet for a connectivity check or a prober
        KWOK_FELIX_WINDOW_VAR: 0, **NO_NETWORK_VARS,
    }
    inv = {"all": {"children": {"calico_fleet": {"hosts": hosts, "vars": group_vars}}}}
    Path(path).write_text(yaml.safe_dump(inv))
    return Path(path)
