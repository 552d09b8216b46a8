"""Fleet rollout (playbooks/fleet_rollout.yml, roles/fleet_rollout) against four control planes at once.

Four small control planes (one kwok node each, the kubeadm shape: its kube-proxy DaemonSet), each a host of group
calico_fleet in an inventory written here: its kubeconfig as ``calico_kubeconfig``, its release mirror as
``calico_manifest_url``. The controller's environment names no cluster (no KUBECONFIG, no K8S_AUTH_*): a task that
reached for anything but its own host's settings would fail. The job is ``install_ebpf`` with the real Tigera
operator on each; canary ``cluster-1``, then batches of two: [cluster-2, cluster-3], [cluster-4] (a last batch
holds what is left; four clusters, not five: each cluster's job runs up to three times here, check mode included,
and the pool's CPUs are the limit of make test).

``cluster-3`` is made to degrade as a cluster with an addon manager does: a reconciler (this test's thread, what
kube-addon-manager does every minute on GKE/kube-up clusters, here every second) puts the kube-proxy DaemonSet back as
it was whenever the install takes it off the nodes, so kube-proxy never leaves and the cluster fails (in the job's own
wait for kube-proxy, or in the gate that re-reads it). Asserted from each cluster's audit log: the canary written
first and done before any other cluster is written, the batch order, no write at all to cluster-4, each
cluster's state as its job left it; then, with the reconciler stopped, a re-run that reports cluster-1 and cluster-2
"already done" without a single write to them (changed=0 there) and finishes the others.

Not here: the connectivity check in the gate (kwok nodes carry no packet: fleet_rollout_gate_connectivity false; the
check itself is proven on the data-plane control plane, test_dataplane.py).
"""

import json
import os
import threading
from pathlib import Path

import pytest

from localcp import fleet as localfleet
from localcp import sweep
from localcp.fixtures import Ansible

pytestmark = pytest.mark.integration

CLUSTERS = [f"cluster-{i}" for i in range(1, 5)]
FAILING = "cluster-3"
NON_CALICO = "non-calico"  # the nodeSelector key the install gives kube-proxy (kube_proxy_node_selector)


@pytest.fixture(scope="module")
def fleet():
    clusters = localfleet.start(CLUSTERS)
    try:
        yield clusters
    finally:
        localfleet.stop(clusters, remove_dir=not os.environ.get("KEEP"))


def _inventory(fleet, path: Path, work: Path, overrides: dict | None = None) -> Path:
    return localfleet.write_inventory(fleet, path, work, overrides)


def _rollout(fleet, tmp_path, inventory, check=False, **extra):
    first = next(iter(fleet.values()))
    v = {"fleet_rollout_job": "install_ebpf", "fleet_rollout_canary": ["cluster-1"], "fleet_rollout_batch": 2,
         "fleet_rollout_gate_connectivity": False, "fleet_rollout_gate_timeout": 120,
         "fleet_rollout_summary_dir": str(tmp_path / "summary")}
    v.update(extra)
    # the controller names no cluster: each task has only its own host's settings
    return Ansible(first, tmp_path).playbook("playbooks/fleet_rollout.yml", inventory=str(inventory), extra_vars=v,
                                              env=localfleet.CONTROLLER_ENV, timeout=1800, check=check)


def _first_and_last_write(cluster, mark):
    writes = [ev for ev in cluster.audit.writes_since(mark)
              if not (ev.get("userAgent") or "").startswith("kubectl")]  # the test's own reconciler uses kubectl
    times = sorted(ev["requestReceivedTimestamp"] for ev in writes)
    return (times[0], times[-1], len(writes)) if times else (None, None, 0)


class AddonManager(threading.Thread):
    """Puts kube-proxy's DaemonSet back on every node whenever something takes it off (kube-addon-manager's
    reconcile, every second here)."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.cluster, self.stop_event, self.reverted = cluster, threading.Event(), 0

    def run(self):
        patch = json.dumps({"spec": {"template": {"spec": {"nodeSelector": {NON_CALICO: None}}}}})
        api = sweep.of(self.cluster)  # the reads in this process; the writes by kubectl (see _first_and_last_write)
        while not self.stop_event.wait(1.0):
            try:
                got = api.get("/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy")
            except Exception:  # noqa: BLE001 - the API server away for a moment: read again in a second
                continue
            if got is None:
                continue
            selector = got["spec"]["template"]["spec"].get("nodeSelector") or {}
            if NON_CALICO in selector:
                self.cluster.kubectl("patch", "daemonset", "kube-proxy", "-n", "kube-system", "--type", "merge",
                                     "-p", patch, check=False)
                self.reverted += 1


def _state(cluster):
    inst = cluster.kubectl("get", "installation.operator.tigera.io", "default", "-o", "json", check=False)
    kp = json.loads(cluster.kubectl("get", "daemonset", "kube-proxy", "-n", "kube-system", "-o", "json").stdout)
    plane = (json.loads(inst.stdout)["spec"].get("calicoNetwork") or {}).get("linuxDataplane") \
        if inst.returncode == 0 else None
    return plane, (kp["spec"]["template"]["spec"].get("nodeSelector") or {}).get(NON_CALICO)


def test_canary_then_batches_halting_on_the_first_cluster_that_degrades_then_a_rerun_finishes(fleet, tmp_path):
    inventory = _inventory(fleet, tmp_path / "fleet.yml", tmp_path,
                           overrides={FAILING: {"kube_proxy_timeout": 40, "fleet_rollout_gate_timeout": 40}})
    # check mode first: every cluster's job previewed, batch after batch, and not one write anywhere
    marks = {name: c.audit.mark() for name, c in fleet.items()}
    preview = _rollout(fleet, tmp_path, inventory, check=True)
    assert preview.rc == 0, preview.stdout[-6000:]
    shown = preview.result_of("Show the summary, a row per cluster")["msg"]
    assert "4 previewed in check mode" in shown[0] and all(" | checked | " in line for line in shown[1:]), shown
    assert {name: len(c.audit.writes_since(marks[name])) for name, c in fleet.items()} == dict.fromkeys(CLUSTERS, 0)
    assert not (tmp_path / "summary").exists()  # check mode writes no summary either

    marks = {name: c.audit.mark() for name, c in fleet.items()}
    addon = AddonManager(fleet[FAILING])
    addon.start()
    try:
        result = _rollout(fleet, tmp_path, inventory)
    finally:
        addon.stop_event.set()
        addon.join(timeout=10)
    out = result.stdout[-6000:]
    assert result.rc != 0, out  # a cluster failed: the run says so
    summary = json.loads((tmp_path / "summary" / "fleet-rollout-install_ebpf.json").read_text())
    rows = {r["cluster"]: r for r in summary["clusters"]}
    assert [r["cluster"] for r in summary["clusters"]] == CLUSTERS
    assert {n: rows[n]["status"] for n in CLUSTERS} == {
        "cluster-1": "ok", "cluster-2": "ok", FAILING: "failed", "cluster-4": "not run"}, out
    assert "kube-proxy" in rows[FAILING]["reason"] or "kube-proxy" in rows[FAILING]["gate"], rows[FAILING]
    assert summary["halted"] and FAILING in summary["halt_reason"], summary
    assert rows["cluster-4"]["reason"].startswith("halted: "), rows["cluster-4"]
    assert addon.reverted >= 1, "the reconciler never had to put kube-proxy back"
    md = (tmp_path / "summary" / "fleet-rollout-install_ebpf.md").read_text()
    assert "| cluster-3 | batch | failed |" in md, md
    assert oct((tmp_path / "summary" / "fleet-rollout-install_ebpf.json").stat().st_mode & 0o777) == "0o600"

    writes = {name: _first_and_last_write(c, marks[name]) for name, c in fleet.items()}
    # the canary first, and done before any other cluster is written
    assert writes["cluster-1"][2] > 0 and writes["cluster-2"][2] > 0 and writes[FAILING][2] > 0, writes
    assert writes["cluster-1"][1] < min(writes["cluster-2"][0], writes[FAILING][0]), writes
    # nothing at all to the batch after the failing one
    assert writes["cluster-4"][2] == 0, writes
    # each cluster as its job left it
    for name in ("cluster-1", "cluster-2"):
        assert _state(fleet[name]) == ("BPF", "true"), name
    assert _state(fleet["cluster-4"]) == (None, None)
    # the failed cluster's diagnostics archive, where the summary goes
    assert list((tmp_path / "summary").glob(f"diagnostics-{FAILING}*")), sorted(os.listdir(tmp_path / "summary"))

    # the re-run, the addon manager gone: clusters done are skipped without a write, the others finish
    marks = {name: c.audit.mark() for name, c in fleet.items()}
    again = _rollout(fleet, tmp_path, inventory)
    assert again.rc == 0, again.stdout[-6000:]
    summary = json.loads((tmp_path / "summary" / "fleet-rollout-install_ebpf.json").read_text())
    rows = {r["cluster"]: r for r in summary["clusters"]}
    assert {n: rows[n]["status"] for n in CLUSTERS} == {
        "cluster-1": "already done", "cluster-2": "already done", FAILING: "ok", "cluster-4": "ok"}, again.stdout[-4000:]
    for name in ("cluster-1", "cluster-2"):
        assert again.changed(name) == 0, again.stdout[-4000:]
        assert _first_and_last_write(fleet[name], marks[name])[2] == 0, name
    for name in (FAILING, "cluster-4"):
        assert _state(fleet[name]) == ("BPF", "true"), name
    # batch order: cluster-4 is written only after cluster-3's batch is done
    w3 = _first_and_last_write(fleet[FAILING], marks[FAILING])
    w4 = _first_and_last_write(fleet["cluster-4"], marks["cluster-4"])
    assert w3[1] < w4[0], (w3, w4)


BAD_INPUT = [
    ({"fleet_rollout_job": "reinstall"}, None,
     "value of fleet_rollout_job must be one of: install_ebpf, enable_ebpf, upgrade, disable_ebpf, got: reinstall"),
    ({"fleet_rollout_canary": ["cluster-9"]}, None, "fleet_rollout_canary names cluster-9, not a host of group calico_fleet"),
    ({"fleet_rollout_batch": 0}, None, 'fleet_rollout_batch is "0": give a count of clusters (1 or more)'),
    ({"fleet_rollout_batch": "150%"}, None, 'fleet_rollout_batch is "150%"'),
    ({}, {"cluster-2": {"calico_kubeconfig": ""}}, "cluster host cluster-2 of group calico_fleet has no connection settings"),
]


@pytest.mark.parametrize("extra,overrides,message", BAD_INPUT, ids=["job", "canary", "batch-0", "batch-150", "no-connection"])
def test_bad_input_fails_before_any_cluster_is_written(fleet, tmp_path, extra, overrides, message):
    inventory = _inventory(fleet, tmp_path / "fleet.yml", tmp_path, overrides=overrides)
    marks = {name: c.audit.mark() for name, c in fleet.items()}
    result = _rollout(fleet, tmp_path, inventory, **extra)
    # the JSON callback's output: the message as a JSON string's content
    assert result.rc != 0 and json.dumps(message)[1:-1] in result.stdout, result.stdout[-3000:]
    for name, c in fleet.items():
        assert not c.audit.writes_since(marks[name]), name
