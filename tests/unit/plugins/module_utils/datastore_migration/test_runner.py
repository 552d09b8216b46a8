"""datastore_migration/runner.py: the read-only runner behind the real ``Client`` over the in-memory API server, with
calicoctl replaced by a table of answers (never run here)."""

import json

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.datastore_migration.runner import CalicoctlError, run_datastore_migration_info

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import FakeDynamic, client
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.calico_objects import obj


# -- runner ------------------------------------------------------------------------------------------------------

ETCD_INFO = {"kind": "ClusterInformation", "spec": {"datastoreReady": True, "calicoVersion": "v3.31.4"}}


def cluster(datastore_type=None, kdd_objects=(), record=None):
    dyn = FakeDynamic()
    dyn.add_type("apps/v1", "daemonsets", "DaemonSet")
    dyn.add_type("apps/v1", "deployments", "Deployment")
    dyn.add_type("v1", "configmaps", "ConfigMap")
    dyn.add_type("apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition",
                 namespaced=False)
    env = [{"name": "DATASTORE_TYPE", "value": datastore_type}] if datastore_type else []
    dyn.put("apps/v1", "daemonsets", {"metadata": {"name": "calico-node", "namespace": "kube-system",
                                                   "annotations": {"deprecated.daemonset.template.generation": "1"}},
                                      "spec": {"template": {"spec": {"containers": [
                                          {"name": "calico-node", "env": env}]}}}})
    dyn.put("v1", "configmaps", {"metadata": {"name": "calico-config", "namespace": "kube-system"},
                                 "data": {"etcd_endpoints": "http://etcd:2379"}})
    if record:
        dyn.put("v1", "configmaps", {"metadata": {"name": "calico-ops-datastore-migration",
                                                  "namespace": "kube-system"}, "data": record})
    for plural, kind, items in kdd_objects:
        dyn.add_type("crd.projectcalico.org/v1", plural, kind, namespaced=False)
        dyn.put("apiextensions.k8s.io/v1", "customresourcedefinitions",
                {"metadata": {"name": plural + ".crd.projectcalico.org"},
                 "spec": {"group": "crd.projectcalico.org", "names": {"plural": plural}}})
        for item in items:
            dyn.put("crd.projectcalico.org/v1", plural, item)
    return dyn


class Calicoctl(object):
    """calicoctl's answers by (config, argv after the binary, before -o): JSON text, or (rc, stderr)."""

    def __init__(self, answers):
        self.answers, self.calls = answers, []

    def __call__(self, argv):
        config = argv[argv.index("--config") + 1]
        args = tuple(argv[1:argv.index("-o")])
        self.calls.append((config, args))
        answer = self.answers.get((config, args))
        if answer is None:
            return 0, json.dumps({"items": []}), ""
        if isinstance(answer, tuple):
            return answer[0], "", answer[1]
        return 0, json.dumps(answer), ""


def info(dyn, ctl, **kw):
    return run_datastore_migration_info(client(dyn), ctl, "calicoctl", kw.pop("etcd_config", "etcd.cfg"), **kw)


def test_runner_on_etcd_plans_the_lock_and_returns_what_the_way_back_restores():
    dyn = cluster()
    ctl = Calicoctl({("etcd.cfg", ("get", "clusterinformation", "default")): ETCD_INFO,
                     ("etcd.cfg", ("get", "nodes")): {"items": [obj("Node", "h", {})]},
                     ("etcd.cfg", ("get", "stagednetworkpolicies", "--all-namespaces")): {
                         "items": [obj("StagedNetworkPolicy", "s", {}, namespace="team")]}})
    out = info(dyn, ctl, deployments=["calico-kube-controllers"])
    assert out["plan"]["action"] == "migrate" and out["plan"]["phase"] == "etcd"
    assert out["etcd"] == {"locked": False, "cluster_version": "v3.31.4", "nodes_without_k8s_name": ["h"],
                           "not_exported": [{"apiVersion": "projectcalico.org/v3", "kind": "StagedNetworkPolicy",
                                             "metadata": {"name": "s", "namespace": "team"}, "spec": {}}]}
    kinds = [w["kind"] for w in out["workloads"]]
    assert kinds == ["DaemonSet", "ConfigMap"]  # the Deployment does not exist here
    assert "annotations" not in out["workloads"][0]["metadata"]
    assert dyn.writes() == []


def test_runner_counts_what_the_kubernetes_datastore_holds_with_one_page_each():
    pools = [{"metadata": {"name": "p%d" % i}} for i in range(3)]
    dyn = cluster(kdd_objects=[("ippools", "IPPool", pools), ("clusterinformations", "ClusterInformation",
                                                              [{"metadata": {"name": "default"},
                                                                "spec": {"datastoreReady": False}}])])
    ctl = Calicoctl({("etcd.cfg", ("get", "clusterinformation", "default")): ETCD_INFO})
    out = info(dyn, ctl)
    assert out["kubernetes"] == {"crds": 2, "held": {"ippools": 3}, "locked": True}
    assert out["plan"]["action"] == "refuse" and "ippools 3" in out["plan"]["reason"]
    lists = [path for _method, path, _query in dyn.log if path.endswith("/ippools")]
    assert len(lists) == 1, dyn.log


def test_runner_compares_both_datastores_when_asked():
    dyn = cluster(datastore_type=None, record={"phase": "imported"})
    pool = obj("IPPool", "p", {"cidr": "10.0.0.0/16"})
    ctl = Calicoctl({("etcd.cfg", ("get", "clusterinformation", "default")): ETCD_INFO,
                     ("etcd.cfg", ("get", "ippools")): {"items": [pool]},
                     ("kdd.cfg", ("get", "ippools")): {"items": []}})
    out = info(dyn, ctl, kubernetes_config="kdd.cfg", compare=True)
    assert out["comparison"]["ok"] is False
    assert out["comparison"]["problems"] == ["ippools: 1 in etcd, 0 in the Kubernetes datastore; missing p"]
    assert {c[0] for c in ctl.calls} == {"etcd.cfg", "kdd.cfg"}


def test_runner_failures_are_one_line_naming_the_command():
    dyn = cluster()
    ctl = Calicoctl({("etcd.cfg", ("get", "clusterinformation", "default")): (
        1, "Failed to get resources\nconnection refused: dial tcp 127.0.0.1:2379")})
    with pytest.raises(CalicoctlError, match=r"^calicoctl get clusterinformation default \(etcd datastore\) "
                                             r"failed: connection refused: dial tcp 127.0.0.1:2379$"):
        info(dyn, ctl)


def test_runner_without_etcd_configuration_says_which_variable():
    dyn = cluster()
    with pytest.raises(CalicoctlError, match="datastore_migration_etcd_endpoints"):
        info(dyn, Calicoctl({}), etcd_config=None)


def test_runner_on_the_kubernetes_datastore_reads_no_etcd():
    dyn = cluster(datastore_type="kubernetes")
    ctl = Calicoctl({})
    out = info(dyn, ctl, etcd_config=None)
    assert out["plan"]["action"] == "nothing" and ctl.calls == []
