"""host_endpoints/rules.py: the planning rules of host_endpoint_migration (pure functions)."""

import json

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints import rules


CRD = "crd.projectcalico.org/v1"


def hep(name, node, labels=None, interface="*", uid=None, **meta):
    metadata = {"name": name, "uid": uid or "uid-" + name}
    if labels is not None:
        metadata["labels"] = labels
    metadata.update(meta)
    return {"apiVersion": CRD, "kind": "HostEndpoint", "metadata": metadata,
            "spec": {"node": node, "interfaceName": interface, "expectedIPs": ["10.0.0.1"]}}


def auto(node, labels=None, name=None, created_by=True):
    labels = dict(labels or {})
    if created_by:
        labels[rules.CREATED_BY_LABEL] = rules.CREATED_BY_VALUE
    return hep(name or node + "-auto-hep", node, labels)


# -- old / automatic ----------------------------------------------------------------------------------------

def test_automatic_by_label_or_by_name_and_old_is_all_interfaces_and_not_automatic():
    assert rules.is_automatic(auto("n1"))
    assert rules.is_automatic(auto("n1", name="custom-name"))               # the label alone
    assert rules.is_automatic(auto("n1", created_by=False))                  # the name alone
    assert not rules.is_automatic(hep("n1-eth0", "n1"))
    assert not rules.is_automatic(hep("n1-hep", "n1", {rules.CREATED_BY_LABEL: "someone-else"}))
    assert rules.is_old(hep("n1-hep", "n1", {"env": "prod"}))
    assert not rules.is_old(auto("n1"))
    assert not rules.is_old(auto("n1", created_by=False))
    assert not rules.is_old(auto("n1", name="custom-name"))
    assert not rules.is_old(hep("n1-eth0", "n1", interface="eth0"))       # a named interface
    assert not rules.is_old(hep("n1-ips", "n1", interface=None))            # expectedIPs only


# -- plan ---------------------------------------------------------------------------------------------------

def test_plan_copies_labels_and_writes_only_what_changes():
    eps = [hep("h1", "n1", {"env": "prod", "zone": "a"}), hep("h2", "n2", {"env": "prod"}),
           auto("n3"), hep("n3-eth0", "n3", {"x": "y"}, interface="eth0")]
    nodes = {"n1": {"zone": "a", "kubernetes.io/hostname": "n1"}, "n2": {}, "n3": {}}
    p = rules.plan(eps, nodes)
    assert [rules.name_of(e) for e in p["old"]] == ["h1", "h2"]
    assert p["automatic"] == 1 and p["other"] == 1
    assert p["nodes"]["n1"] == {"endpoints": ["h1"], "copy": {"env": "prod", "zone": "a"}, "set": {"env": "prod"},
                                "skipped": []}
    assert p["nodes"]["n2"]["set"] == {"env": "prod"}
    assert "n3" not in p["nodes"]
    assert p["conflicts"] == [] and p["blocked"] is False and p["missing_nodes"] == []


def test_plan_with_everything_in_place_writes_nothing():
    p = rules.plan([hep("h1", "n1", {"env": "prod"})], {"n1": {"env": "prod"}})
    assert p["nodes"]["n1"]["set"] == {} and p["nodes"]["n1"]["copy"] == {"env": "prod"}


def test_a_node_holding_another_value_is_a_conflict_that_blocks_by_default():
    eps = [hep("h1", "n1", {"env": "staging", "zone": "a"}), hep("h2", "n2", {"env": "prod"})]
    nodes = {"n1": {"env": "prod"}, "n2": {}}
    p = rules.plan(eps, nodes)
    assert p["blocked"] is True
    assert p["conflicts"] == [{"node": "n1", "key": "env", "node_value": "prod",
                               "endpoint_values": {"h1": "staging"}, "kind": "node", "resolution": "blocking"}]


def test_overwrite_gives_the_node_the_endpoint_value():
    p = rules.plan([hep("h1", "n1", {"env": "staging", "zone": "a"})], {"n1": {"env": "prod"}}, "overwrite")
    assert p["blocked"] is False
    assert p["conflicts"][0]["resolution"] == "overwrite"
    assert p["nodes"]["n1"]["set"] == {"env": "staging", "zone": "a"}
    assert p["nodes"]["n1"]["copy"] == {"env": "staging", "zone": "a"}
    assert p["nodes"]["n1"]["skipped"] == []


def test_skip_keeps_the_node_value_and_does_not_copy_the_key():
    p = rules.plan([hep("h1", "n1", {"env": "staging", "zone": "a"})], {"n1": {"env": "prod"}}, "skip")
    assert p["blocked"] is False
    assert p["conflicts"][0]["resolution"] == "skip"
    assert p["nodes"]["n1"]["set"] == {"zone": "a"}
    assert p["nodes"]["n1"]["copy"] == {"zone": "a"}
    assert p["nodes"]["n1"]["skipped"] == ["env"]


@pytest.mark.parametrize("policy,blocked", [("fail", True), ("overwrite", True), ("skip", False)])
def test_endpoints_of_one_node_that_disagree_only_skip_resolves(policy, blocked):
    eps = [hep("h1", "n1", {"env": "a", "team": "x"}), hep("h2", "n1", {"env": "b", "team": "x"})]
    p = rules.plan(eps, {"n1": {}}, policy)
    assert p["blocked"] is blocked
    assert p["conflicts"] == [{"node": "n1", "key": "env", "node_value": None,
                               "endpoint_values": {"h1": "a", "h2": "b"}, "kind": "endpoints",
                               "resolution": "skip" if policy == "skip" else "blocking"}]
    assert p["nodes"]["n1"]["endpoints"] == ["h1", "h2"]
    assert p["nodes"]["n1"]["copy"] == {"team": "x"} and p["nodes"]["n1"]["skipped"] == ["env"]


def test_endpoints_whose_node_is_missing_are_reported_and_left_out():
    eps = [hep("h1", "gone", {"env": "prod"}), hep("h2", "", {}), hep("h3", "n1", {})]
    p = rules.plan(eps, {"n1": {}})
    assert p["missing_nodes"] == [{"endpoint": "h1", "node": "gone"}, {"endpoint": "h2", "node": ""}]
    assert list(p["nodes"]) == ["n1"]


def test_plan_refuses_an_unknown_policy():
    with pytest.raises(ValueError):
        rules.plan([], {}, "merge")


def test_node_labels_plan_after_a_concurrent_change():
    wanted = {"env": "prod", "zone": "a"}
    assert rules.node_labels_plan({"zone": "a"}, wanted) == ({"env": "prod"}, [])
    assert rules.node_labels_plan({"env": "dev"}, wanted, "fail") == (
        {"zone": "a"}, [{"key": "env", "node_value": "dev", "endpoint_value": "prod"}])
    assert rules.node_labels_plan({"env": "dev"}, wanted, "overwrite") == ({"env": "prod", "zone": "a"}, [])
    assert rules.node_labels_plan({"env": "dev"}, wanted, "skip") == ({"zone": "a"}, [])


def test_label_patch_is_guarded_by_the_labels_it_was_planned_against():
    ops = rules.label_patch({"a": "1"}, {"example.com/role": "edge", "env": "prod"}, "42")
    assert ops == [{"op": "test", "path": "/metadata/labels", "value": {"a": "1"}},
                   {"op": "add", "path": "/metadata/labels/env", "value": "prod"},
                   {"op": "add", "path": "/metadata/labels/example.com~1role", "value": "edge"}]
    assert rules.label_patch(None, {"env": "prod"}, "42") == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "42"},
        {"op": "add", "path": "/metadata/labels", "value": {"env": "prod"}}]


# -- automatic endpoint ready -------------------------------------------------------------------------------

def test_automatic_ready_needs_every_copied_label():
    autos = rules.automatic_by_node([auto("n1", {"env": "prod"}), hep("h1", "n1", {"env": "prod"}),
                                     auto("n2", {"env": "prod"}, name="n2-eth0-auto-hep")])
    assert [rules.name_of(e) for e in autos["n1"]] == ["n1-auto-hep"]
    ep, why = rules.automatic_ready(autos["n1"], {"env": "prod"})
    assert rules.name_of(ep) == "n1-auto-hep" and why is None
    ep, why = rules.automatic_ready(autos["n1"], {"env": "prod", "zone": "a"})
    assert ep is None and why == "automatic host endpoint n1-auto-hep lacks the label(s) zone"
    assert rules.automatic_ready([], {}) == (None, "no automatic host endpoint")
    # an automatic endpoint of a named interface is no replacement for an all-interfaces one
    named = auto("n3")
    named["spec"]["interfaceName"] = "eth0"
    assert "n3" not in rules.automatic_by_node([named])


def test_labels_calico_keeps_in_its_metadata_annotation_count():
    """What calico-kube-controllers v3.31.4 really writes through crd.projectcalico.org/v1 (seen on the local
    control plane): only projectcalico.org/ labels in metadata.labels, the node's labels in the JSON of the
    projectcalico.org/metadata annotation. Calico reads the two merged, the annotation winning; so does the plan."""
    meta = {"creationTimestamp": "2026-11-24T22:12:23Z",
            "labels": {"env": "prod", "zone": "a", rules.CREATED_BY_LABEL: rules.CREATED_BY_VALUE}}
    real = hep("n1-auto-hep", "n1", {rules.CREATED_BY_LABEL: rules.CREATED_BY_VALUE},
               annotations={rules.CRD_METADATA_ANNOTATION: json.dumps(meta)})
    assert rules.endpoint_labels(real) == meta["labels"]
    ep, why = rules.automatic_ready(rules.automatic_by_node([real])["n1"], {"env": "prod", "zone": "a"})
    assert rules.name_of(ep) == "n1-auto-hep" and why is None
    # an old endpoint written by calicoctl: its labels are copied although metadata.labels is empty
    old = hep("n1-all", "n1", None, annotations={rules.CRD_METADATA_ANNOTATION: json.dumps(
        {"labels": {"env": "staging"}})})
    old["metadata"]["labels"] = {"env": "ignored-by-calico"}
    assert rules.is_old(old) and rules.endpoint_labels(old) == {"env": "staging"}
    planned = rules.plan([old], {"n1": {}})
    assert planned["nodes"]["n1"]["copy"] == {"env": "staging"}
    # an unreadable annotation leaves metadata.labels
    bad = hep("h", "n1", {"a": "b"}, annotations={rules.CRD_METADATA_ANNOTATION: "{not json"})
    assert rules.endpoint_labels(bad) == {"a": "b"}


# -- KubeControllersConfiguration ---------------------------------------------------------------------------

def test_missing_default_is_created_with_calicos_defaults_and_auto_create_enabled():
    action, body, problem = rules.kube_controllers_change(None, CRD)
    assert action == "create" and problem is None
    assert body["apiVersion"] == CRD and body["kind"] == "KubeControllersConfiguration"
    assert body["metadata"] == {"name": "default"}
    controllers = body["spec"]["controllers"]
    assert controllers["node"]["hostEndpoint"] == {"autoCreate": "Enabled"}
    assert controllers["node"]["syncLabels"] == "Enabled"
    assert sorted(controllers) == ["namespace", "node", "policy", "serviceAccount", "workloadEndpoint"]


def test_disabled_is_patched_enabled_is_left_alone():
    kcc = {"metadata": {"name": "default"}, "spec": {"controllers": {"node": {"hostEndpoint": {
        "autoCreate": "Disabled"}}, "policy": {}}}}
    action, patch, problem = rules.kube_controllers_change(kcc, CRD)
    assert (action, problem) == ("patch", None)
    assert patch == {"spec": {"controllers": {"node": {"hostEndpoint": {"autoCreate": "Enabled"}}}}}
    after = rules.kcc_after(kcc, action, patch)
    assert after["spec"]["controllers"]["node"]["hostEndpoint"]["autoCreate"] == "Enabled"
    assert after["spec"]["controllers"]["policy"] == {}
    assert kcc["spec"]["controllers"]["node"]["hostEndpoint"]["autoCreate"] == "Disabled"  # not mutated
    assert rules.kube_controllers_change(after, CRD)[0] == "unchanged"
    # no node controller configured at all: the patch adds it
    bare = {"metadata": {"name": "default"}, "spec": {"controllers": {"node": None}}}
    assert rules.kcc_after(bare, "patch", patch)["spec"]["controllers"]["node"] == {
        "hostEndpoint": {"autoCreate": "Enabled"}}


def test_no_default_host_endpoint_is_a_problem_before_any_write():
    kcc = {"spec": {"controllers": {"node": {"hostEndpoint": {"autoCreate": "Enabled",
                                                              "createDefaultHostEndpoint": "Disabled"}}}}}
    action, payload, problem = rules.kube_controllers_change(kcc, CRD)
    assert action is None and payload is None
    assert "createDefaultHostEndpoint: Disabled" in problem


# -- record and restore -------------------------------------------------------------------------------------

def test_recordable_and_restore_body():
    ep = hep("h1", "n1", {"env": "prod"}, resourceVersion="12", creationTimestamp="2024-01-01T00:00:00Z",
             annotations={"projectcalico.org/metadata": "{}", "note": "x"}, managedFields=[{"manager": "k"}])
    rec = rules.recordable(ep)
    assert rec["metadata"] == {"name": "h1", "uid": "uid-h1", "labels": {"env": "prod"},
                               "annotations": {"projectcalico.org/metadata": "{}", "note": "x"}}
    assert rec["spec"] == ep["spec"] and rec["apiVersion"] == CRD
    same = rules.restore_body(rec, CRD)
    assert same["metadata"] == {"name": "h1", "labels": {"env": "prod"},
                                "annotations": {"projectcalico.org/metadata": "{}", "note": "x"}}
    other = rules.restore_body(rec, "projectcalico.org/v3")
    assert other["apiVersion"] == "projectcalico.org/v3" and other["kind"] == "HostEndpoint"
    assert other["metadata"]["annotations"] == {"note": "x"}
    assert rules.entry_key(ep) == "hostendpoint|h1|uid-h1"
