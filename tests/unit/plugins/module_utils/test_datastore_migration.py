"""datastore_migration: the pure rules (comparison, node names, phase decisions) and the read-only runner behind the
real ``Client`` over the in-memory API server, with calicoctl replaced by a table of answers (never run here)."""

import json

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.datastore_migration import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.datastore_migration.runner import (
    CalicoctlError, run_datastore_migration_info)

from ansible_collections.calico_ops.lifecycle.tests.unit.plugins.module_utils.fake_k8s import FakeDynamic, client


def obj(kind, name, spec=None, namespace=None, labels=None):
    meta = {"name": name, "uid": "u-" + name, "resourceVersion": "7"}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "projectcalico.org/v3", "kind": kind, "metadata": meta, "spec": spec or {}}


# -- rules -------------------------------------------------------------------------------------------------------

def test_node_map_follows_the_k8s_orchestrator_reference_and_names_nodes_without_one():
    nodes = [obj("Node", "host-a.example", {"orchRefs": [{"orchestrator": "k8s", "nodeName": "a"}]}),
             obj("Node", "host-b.example", {"orchRefs": [{"orchestrator": "openstack", "nodeName": "b"}]}),
             obj("Node", "host-c.example")]
    mapping, missing = rules.node_map(nodes)
    assert mapping == {"host-a.example": "a"}
    assert missing == ["host-b.example", "host-c.example"]


def test_rename_follows_the_export():
    m = {"host-a.example": "a"}
    assert rules.rename("nodes", "host-a.example", m) == "a"
    assert rules.rename("felixconfigurations", "node.host-a.example", m) == "node.a"
    assert rules.rename("bgpconfigurations", "node.host-a.example", m) == "node.a"
    assert rules.rename("felixconfigurations", "default", m) == "default"
    assert rules.rename("ippools", "host-a.example", m) == "host-a.example"


def test_compare_accepts_defaults_the_target_adds_and_names_what_is_missing_or_different():
    source = {
        "ippools": [obj("IPPool", "p", {"cidr": "10.0.0.0/16", "vxlanMode": "Always"})],
        "globalnetworkpolicies": [obj("GlobalNetworkPolicy", "g", {"order": 10}, labels={"t": "a"}),
                                  obj("GlobalNetworkPolicy", "kanp.adminnetworkpolicy.x", {"order": 1})],
        "networkpolicies": [obj("NetworkPolicy", "np", {"selector": "all()"}, namespace="n1")],
        "nodes": [obj("Node", "host-a.example", {
            "bgp": {"ipv4Address": "10.0.0.1/24"}, "orchRefs": [{"orchestrator": "k8s", "nodeName": "a"}]})],
    }
    target = {
        "ippools": [obj("IPPool", "p", {"cidr": "10.0.0.0/16", "vxlanMode": "Always", "blockSize": 26})],
        "globalnetworkpolicies": [obj("GlobalNetworkPolicy", "g", {"order": 11}, labels={"t": "a"})],
        "networkpolicies": [obj("NetworkPolicy", "knp.default.k8s", {})],
        "nodes": [obj("Node", "a", {"bgp": {"ipv4Address": "10.0.0.1/24"}}), obj("Node", "b")],
        "tiers": [obj("Tier", "default", {"order": 1000000})],
    }
    out = rules.compare(source, target, rules.node_map(source["nodes"])[0])
    assert not out["ok"]
    assert out["kinds"]["ippools"] == {"source": 1, "target": 1, "missing": [], "different": {}, "extra": []}
    assert out["kinds"]["globalnetworkpolicies"]["different"] == {"g": "spec.order"}
    assert out["kinds"]["globalnetworkpolicies"]["source"] == 1  # the derived kanp. policy is not counted
    assert out["kinds"]["networkpolicies"]["missing"] == ["n1/np"]
    assert out["kinds"]["networkpolicies"]["target"] == 0  # knp.default. is Kubernetes' own
    assert out["kinds"]["nodes"]["missing"] == [] and out["kinds"]["nodes"]["extra"] == ["b"]
    assert out["kinds"]["tiers"]["extra"] == ["default"]
    problems = rules.problems_of(out)
    assert problems == ["globalnetworkpolicies: 1 in etcd, 1 in the Kubernetes datastore; different g (spec.order)",
                        "networkpolicies: 1 in etcd, 0 in the Kubernetes datastore; missing n1/np"]
    assert "ippools: 1 in etcd, 1 in the Kubernetes datastore" in rules.lines_of(out)


def test_compare_sees_a_label_lost():
    source = {"globalnetworksets": [obj("GlobalNetworkSet", "s", {"nets": ["1.2.3.0/24"]}, labels={"k": "v"})]}
    target = {"globalnetworksets": [obj("GlobalNetworkSet", "s", {"nets": ["1.2.3.0/24"]})]}
    assert rules.compare(source, target)["kinds"]["globalnetworksets"]["different"] == {"s": "labels.k"}


def test_missing_from_export_is_the_staged_policies_outside_default_cleaned_for_apply():
    source = {"stagednetworkpolicies": [obj("StagedNetworkPolicy", "a", {"selector": "x"}, namespace="default"),
                                        obj("StagedNetworkPolicy", "b", {"selector": "y"}, namespace="team")],
              "stagedkubernetesnetworkpolicies": [obj("StagedKubernetesNetworkPolicy", "c", {}, namespace="t2")],
              "networkpolicies": [obj("NetworkPolicy", "d", {}, namespace="team")]}
    out = rules.missing_from_export(source)
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in out] == [("team", "b"), ("t2", "c")]
    assert out[0] == {"apiVersion": "projectcalico.org/v3", "kind": "StagedNetworkPolicy",
                      "metadata": {"name": "b", "namespace": "team"}, "spec": {"selector": "y"}}


def test_calico_node_datastore_reads_datastore_type_and_defaults_to_etcd():
    def ds(env):
        return {"spec": {"template": {"spec": {"containers": [{"name": "calico-node", "env": env}]}}}}
    assert rules.calico_node_datastore(ds([{"name": "DATASTORE_TYPE", "value": "kubernetes"}])) == "kubernetes"
    assert rules.calico_node_datastore(ds([{"name": "ETCD_ENDPOINTS", "valueFrom": {}}])) == "etcdv3"
    assert rules.calico_node_datastore(None) is None
    assert rules.calico_node_datastore({"spec": {"template": {"spec": {"containers": [{"name": "x"}]}}}}) is None


@pytest.mark.parametrize("args,phase,action,words", [
    # (node datastore, etcd locked, kdd locked, kdd held, record phase, abort, take over)
    (("etcdv3", False, None, {}, None, False, False), "etcd", "migrate", "unlocked"),
    (("etcdv3", True, None, {}, "locked", False, False), "locked", "migrate", "etcd is locked"),
    (("etcdv3", True, None, {}, None, False, False), "locked", "refuse", "datastore_migration_take_over_lock"),
    (("etcdv3", True, None, {}, None, False, True), "locked", "migrate", "taken over"),
    (("etcdv3", True, True, {"ippools": 1}, "import-started", False, False), "partial", "migrate", "cut"),
    (("etcdv3", True, True, {"ippools": 1}, "imported", False, False), "imported", "migrate", "verify"),
    # cut after the etcd-era workloads were recorded, before the apply reached calico-node
    (("etcdv3", True, True, {"ippools": 1}, "switching", False, False), "imported", "migrate", "verify"),
    (("etcdv3", False, None, {"ippools": 2}, None, False, False), "etcd", "refuse", "ippools 2"),
    (("kubernetes", True, True, {"ippools": 1}, "switched", False, False), "switched", "migrate", "still locked"),
    (("kubernetes", True, False, {"ippools": 1}, "done", False, False), "done", "nothing", "complete"),
    (("kubernetes", None, False, {"ippools": 1}, None, False, False), "kubernetes", "nothing", "already"),
    (("kubernetes", True, True, {"ippools": 1}, "switched", True, False), "switched", "abort", "back to etcd"),
    (("kubernetes", True, False, {"ippools": 1}, "done", True, False), "done", "refuse", "cannot be rolled back"),
    (("etcdv3", True, True, {"ippools": 1}, "imported", True, False), "imported", "abort", "unlocked again"),
    (("etcdv3", False, None, {}, None, True, False), "etcd", "nothing", "no migration to abort"),
    (("etcdv3", False, None, {}, "aborted", False, False), "etcd", "migrate", "unlocked"),
    ((None, None, None, {}, None, False, False), "etcd", "refuse", "calico-node was not found"),
])
def test_decide(args, phase, action, words):
    plan = rules.decide(*args[:5], abort=args[5], take_over_lock=args[6])
    assert (plan["phase"], plan["action"]) == (phase, action), plan
    assert words in plan["reason"], plan


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
