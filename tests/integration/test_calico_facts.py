"""calico_ops.lifecycle.calico_facts on real installs of the release files (local control plane).

Each install is made the way a user makes it (server-side apply of the release file, or ``helm install``),
checked, and removed: one control plane serves the whole run. The module must read only (no write in the
audit log) and make few requests.
"""

import json
import os

import pytest
import yaml

from calico_support import (OPERATOR_SOURCE, SOURCE, Install, drop_foreign_operator_crds, get, helm, node_ds_name,
                            wait_daemonset, wipe_calico)
from localcp.audit import describe

pytestmark = pytest.mark.integration

PLAY = """
- name: Facts
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Detect
      calico_ops.lifecycle.calico_facts:
        version: "{{ facts_version | default(omit) }}"
      register: calico
"""

MAX_READS = 20


@pytest.fixture
def install(cluster):
    wipe_calico(cluster)
    inst = Install(cluster)
    yield inst
    if not os.environ.get("KEEP"):
        inst.cleanup()


def facts(cluster, ansible, **extra):
    mark = cluster.audit.mark()
    res = ansible.playbook(PLAY, extra_vars=extra or None)
    assert res.rc == 0, res.stdout[-4000:]
    writes = cluster.audit.writes_since(mark)
    assert writes == [], [describe(e) for e in writes]
    out = res.result_of("Detect")
    assert out["changed"] is False
    assert out["requests"]["write"] == 0 and 0 < out["requests"]["read"] <= MAX_READS, out["requests"]
    return out


@pytest.mark.parametrize("flavor, datastore", [
    ("calico.yaml", "kubernetes"), ("calico-typha.yaml", "kubernetes"), ("canal.yaml", "kubernetes"),
    ("calico-policy-only.yaml", "kubernetes"), ("calico-etcd.yaml", "etcd"), ("canal-etcd.yaml", "etcd")])
def test_manifest_installs(cluster, ansible, install, flavor, datastore):
    install.apply_release(SOURCE, flavor)
    ds = node_ds_name(flavor)
    wait_daemonset(cluster, ds)
    out = facts(cluster, ansible)
    f, s = out["facts"], out["sources"]
    assert (f["method"], f["datastore"], f["flavor"], f["version"]) == ("manifest", datastore, flavor, SOURCE), s
    assert f["node_daemonset"] == {"namespace": "kube-system", "name": ds}
    assert "DaemonSet kube-system/%s exists" % ds in s["method"]
    assert s["version"].startswith("image docker.io/calico/node:%s" % SOURCE)
    assert f["variant"] == "Calico" and f["alp"] is False
    assert f["installer_field_managers"] == ["test-setup"]
    assert f["allow_all_upgrade"] == {"present": False}


def test_cluster_information_alp_allow_all_upgrade_and_overrides(cluster, ansible, install):
    install.apply_release(SOURCE, "calico.yaml")
    wait_daemonset(cluster, "calico-node")
    objs = [
        {"apiVersion": "crd.projectcalico.org/v1", "kind": "ClusterInformation", "metadata": {"name": "default"},
         "spec": {"calicoVersion": "v3.27.4", "datastoreReady": True}},
        {"apiVersion": "crd.projectcalico.org/v1", "kind": "FelixConfiguration", "metadata": {"name": "default"},
         "spec": {"policySyncPathPrefix": "/var/run/nodeagent"}},
        {"apiVersion": "crd.projectcalico.org/v1", "kind": "GlobalNetworkPolicy",
         "metadata": {"name": "default.allow-all-upgrade"},
         "spec": {"selector": "has(host-endpoint-upgrade)", "order": 10,
                  "ingress": [{"action": "Log"}, {"action": "Allow"}]}},
    ]
    cluster.apply(yaml.safe_dump_all(objs))
    out = facts(cluster, ansible)
    f, s = out["facts"], out["sources"]
    assert f["version"] == "v3.27.4" and s["version"].startswith("ClusterInformation default spec.calicoVersion")
    assert f["cluster_version"] == "v3.27.4"
    assert f["alp"] is True and "policySyncPathPrefix /var/run/nodeagent" in s["alp"]
    assert f["istio_version"] is None and "no Deployment istio-system/istiod" in s["istio_version"]
    assert f["allow_all_upgrade"]["present"] and f["allow_all_upgrade"]["name"] == "default.allow-all-upgrade"
    over = facts(cluster, ansible, facts_version="v3.14.2")
    assert over["facts"]["version"] == "v3.14.2" and "given by the user" in over["sources"]["version"]
    assert over["detected"]["version"]["value"] == "v3.27.4"


def _scaled_to_zero(doc):
    if doc["kind"] == "Deployment":
        doc["spec"]["replicas"] = 0
    return doc


def test_operator_install(cluster, ansible, install):
    """An operator install before and after the real operator (v1.36.16 for v3.29.7) has reported on it."""
    # CRDs an earlier test on this control plane deleted may still be terminating, and discovery may still list their
    # groups: the install fixture's wipe_calico waits for both to settle (calico_support.settle_crds)
    # operator CRDs of later releases left by an earlier test (v3.31.4's ManagementClusterConnection) would make
    # v1.36.16 start its Enterprise controllers and never report (calico_support.drop_foreign_operator_crds)
    drop_foreign_operator_crds(cluster, OPERATOR_SOURCE)
    install.apply_release(OPERATOR_SOURCE, "operator-crds.yaml")
    # the operator's Deployment at 0 replicas first: facts of an install the operator has not reported on yet
    install.apply_release(OPERATOR_SOURCE, "tigera-operator.yaml", edit=_scaled_to_zero)
    cluster.wait_for(lambda: get(cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition",
                                 "installations.operator.tigera.io"), timeout=60, what="Installation CRD")
    from calico_support import release_docs
    # APIServer left out: only calico-apiserver v3.31.4 is built here, a v3.29.7 one could not serve its APIService
    crs = [d for d in release_docs(cluster.mirror_url, OPERATOR_SOURCE, "custom-resources.yaml")
           if d["kind"] == "Installation"]
    cluster.apply(yaml.safe_dump_all(crs))
    before = facts(cluster, ansible)
    assert before["facts"]["method"] == "operator" and before["facts"]["version"] is None
    assert before["facts"]["tigerastatus"]["installed"] is True
    cluster.kubectl("scale", "deployment", "tigera-operator", "-n", "tigera-operator", "--replicas=1")
    cluster.wait_for_process("tigera-operator", "v1.36.16", timeout=120)

    def reported():
        return ((get(cluster, "operator.tigera.io/v1", "Installation", "default") or {})
                .get("status") or {}).get("calicoVersion") == OPERATOR_SOURCE
    try:
        cluster.wait_for(reported, timeout=120, interval=2, what="the real operator reporting %s" % OPERATOR_SOURCE)
    except AssertionError:
        # Seen in full runs: operator v1.36.16 logs that the kinds of its watches are not served (the ECK groups
        # "could not find the requested resource") and then nothing more. The cause found (2026-11-26): v3.31.4's
        # ManagementClusterConnection CRD, left by an earlier test, made it start its Enterprise controllers; the
        # CRDs of later releases are dropped above. Should it stay silent for another reason, a pod restart (what a
        # liveness probe would do; the harness has none) is tried once, and said.
        print("[test_operator_install] the operator v1.36.16 reported nothing in 120 s; its log:\n%s\n"
              "restarting its pod once" % cluster.process_log_tail("tigera-operator"))
        cluster.kubectl("delete", "pod", "-n", "tigera-operator", "-l", "k8s-app=tigera-operator", "--wait=true")
        cluster.wait_for_process("tigera-operator", "v1.36.16", timeout=120)
    try:
        cluster.wait_for(reported, timeout=240, interval=2, what="the real operator reporting %s" % OPERATOR_SOURCE)
    except AssertionError as exc:  # say what the operator reported and said
        status = [(t["metadata"]["name"], (t.get("status") or {}).get("conditions")) for t in json.loads(
            cluster.kubectl("get", "tigerastatus", "-o", "json", check=False).stdout or '{"items": []}')["items"]]
        inst = get(cluster, "operator.tigera.io/v1", "Installation", "default")
        raise AssertionError("%s; Installation %s; TigeraStatus %s\n%s" % (
            exc, "absent" if inst is None else "status %s" % inst.get("status"), status,
            cluster.process_log_tail("tigera-operator")))
    cluster.wait_for(lambda: any(c.get("type") == "Available" and c.get("status") == "True" for c in (
        (get(cluster, "operator.tigera.io/v1", "TigeraStatus", "calico") or {}).get("status") or {}).get(
        "conditions") or []), timeout=120, interval=2, what="TigeraStatus calico Available")
    out = facts(cluster, ansible)
    f, s = out["facts"], out["sources"]
    assert (f["method"], f["datastore"], f["flavor"], f["version"]) == ("operator", "kubernetes", None,
                                                                          OPERATOR_SOURCE), s
    assert "Installation default exists and Deployment tigera-operator/tigera-operator exists" in s["method"]
    assert s["version"] == "Installation default status.calicoVersion %s" % OPERATOR_SOURCE
    assert f["variant"] == "Calico" and "calico: Available" in f["tigerastatus"]["lines"], f["tigerastatus"]
    assert f["installer_field_managers"] == ["test-setup"]


def test_helm_install(cluster, ansible, install):
    # the operator's Deployment at 0 replicas: the Helm release alone, before any operator has reported on it
    # (after that, test_upgrade.py's Helm test follows the real operator)
    helm(cluster, "install", "calico", "tigera-operator", "--repo", cluster.chart_repo_url, "--version", SOURCE,
         "--namespace", "tigera-operator", "--create-namespace", "--set", "apiServer.enabled=false")
    install.helm_releases.append(("calico", "tigera-operator"))
    install.forget_later(SOURCE, "operator-crds.yaml")
    cluster.kubectl("scale", "deployment", "tigera-operator", "-n", "tigera-operator", "--replicas=0")
    cluster.wait_for(lambda: not cluster.processes("tigera-operator"), timeout=60, what="no operator process")
    cluster.kubectl("patch", "installation", "default", "--subresource=status", "--type=merge",
                    "-p", '{"status":null}', check=False)
    out = facts(cluster, ansible)
    f, s = out["facts"], out["sources"]
    assert (f["method"], f["datastore"], f["flavor"], f["version"]) == ("helm", "kubernetes", None, SOURCE), s
    assert s["method"].startswith("Helm release tigera-operator/calico revision 1 of chart tigera-operator %s"
                                  % SOURCE)
    assert f["helm_release"]["chart_version"] == SOURCE
    assert "Helm release" in s["version"]  # no operator has reported: the chart's version is all there is
    assert f["installer_field_managers"] == ["helm"]
