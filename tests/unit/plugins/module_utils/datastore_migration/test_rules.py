"""datastore_migration/rules.py: the pure rules (comparison, node names, phase decisions)."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.datastore_migration import rules
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.calico_objects import obj


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
