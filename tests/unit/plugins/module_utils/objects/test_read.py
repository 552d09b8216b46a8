"""objects/read.py, read_objects (the objects_info module): several objects read in one run, in the order asked,
each group-version discovered once, unserved types and missing objects reported (not failed), other errors raised."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.objects.read import (
    condition_problem, entry_problem, read_objects, wait_objects)

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import client
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.objects_cluster import cluster, gets


@pytest.mark.parametrize("workers", [1, 8])
def test_reads_in_the_order_asked_each_group_version_discovered_once(workers):
    dyn = cluster()
    out = read_objects(client(dyn), [
        {"api_version": "apps/v1", "kind": "Deployment", "namespace": "tigera-operator", "name": "op"},
        {"api_version": "v1", "kind": "ConfigMap", "namespace": "kube-system", "name": "a"},
        {"api_version": "v1", "kind": "ConfigMap", "namespace": "kube-system", "name": "missing"},
        {"api_version": "v1", "kind": "ConfigMap", "label_selectors": ["app=x"]},
        {"api_version": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy", "name": "deny",
         "namespace": "ignored-for-a-cluster-scoped-kind"},
    ], workers=workers)
    objs = out["objects"]
    assert [o["kind"] for o in objs] == ["Deployment", "ConfigMap", "ConfigMap", "ConfigMap", "GlobalNetworkPolicy"]
    assert [o["found"] for o in objs] == [True, True, False, True, True]
    assert all(o["served"] for o in objs)
    assert objs[0]["resources"][0]["metadata"]["name"] == "op"
    assert objs[1]["resources"][0]["metadata"]["name"] == "a"
    assert objs[2]["resources"] == []
    assert sorted(o["metadata"]["name"] for o in objs[3]["resources"]) == ["a", "c"]  # every namespace
    assert objs[4]["namespace"] is None and objs[4]["resources"][0]["metadata"]["name"] == "deny"
    assert objs[3]["label"] == "v1 ConfigMap app=x"
    paths = gets(dyn)
    discovery = [p for p in paths if p in ("/api/v1", "/apis/apps/v1", "/apis/projectcalico.org/v3")]
    assert sorted(discovery) == ["/api/v1", "/apis/apps/v1", "/apis/projectcalico.org/v3"]  # once each
    assert len(paths) == 3 + 5
    assert out["api_requests"] == {"read": 8, "write": 0, "dry_run": 0}


def test_a_type_not_served_is_reported_not_failed():
    dyn = cluster()
    out = read_objects(client(dyn), [
        {"api_version": "operator.tigera.io/v1", "kind": "Installation", "name": "default"},
        {"api_version": "v1", "kind": "NoSuchKind", "name": "x"},
    ])
    assert [(o["served"], o["found"], o["resources"]) for o in out["objects"]] == [(False, False, []),
                                                                                   (False, False, [])]


def test_a_namespace_and_selector_narrow_the_list():
    out = read_objects(client(cluster()), [
        {"api_version": "v1", "kind": "ConfigMap", "namespace": "kube-system", "label_selectors": ["app=x"]}])
    assert [o["metadata"]["name"] for o in out["objects"][0]["resources"]] == ["a"]


def test_any_other_error_is_raised_with_its_status():
    dyn = cluster()
    dyn.failing["apps/v1"] = (403, "Forbidden")
    with pytest.raises(ClientError) as err:
        read_objects(client(dyn), [{"api_version": "apps/v1", "kind": "Deployment", "name": "op",
                                    "namespace": "tigera-operator"}])
    assert err.value.status == 403


def test_a_secret_is_read_as_the_api_returns_it_and_redacted_at_the_module_exit():
    # read_objects returns what the API returned; the module base redacts every result (k8s/module.py), which
    # the redaction tests cover for Secrets; here: the Secret is recognisable as one (kind set) so that applies
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.redact import MARKER, Redactor
    out = read_objects(client(cluster()), [{"api_version": "v1", "kind": "Secret", "namespace": "kube-system",
                                            "label_selectors": []}])
    shown = Redactor().value(out)
    assert shown["objects"][0]["resources"][0]["data"] == {"k": MARKER}


@pytest.mark.parametrize("entry, problem", [
    ("x", "objects[0]: must be a mapping"),
    ({"kind": "ConfigMap", "name": "a"}, "objects[0]: api_version is required"),
    ({"api_version": "v1", "name": "a"}, "objects[0]: kind is required"),
    ({"api_version": "v1", "kind": "ConfigMap", "name": "a", "label_selectors": ["a=b"]},
     "objects[0]: give name or label_selectors, not both"),
    ({"api_version": "v1", "kind": "ConfigMap", "nmae": "a"}, "objects[0]: unknown key(s) nmae; allowed:"),
    ({"api_version": "v1", "kind": "ConfigMap", "label_selectors": "app=x"},
     "objects[0]: label_selectors must be a list of selectors"),
    ({"api_version": "v1", "kind": "ConfigMap", "name": 3}, "objects[0]: name must be a string, not 3"),
])
def test_bad_entries_are_named(entry, problem):
    assert entry_problem(0, entry).startswith(problem)
    assert entry_problem(0, {"api_version": "v1", "kind": "ConfigMap", "name": "a"}) is None


def test_a_forbidden_read_is_reported_only_when_allowed():
    dyn = cluster()
    dyn.list_failing["apps/v1/deployments"] = (403, "Forbidden")
    entries = [{"api_version": "apps/v1", "kind": "Deployment", "namespace": "calico-system"},
               {"api_version": "v1", "kind": "ConfigMap", "namespace": "kube-system", "name": "a"}]
    out = read_objects(client(dyn), entries, allow_forbidden=True)["objects"]
    assert [(o["forbidden"], o["found"], len(o["resources"])) for o in out] == [(True, False, 0), (False, True, 1)]
    with pytest.raises(ClientError) as err:
        read_objects(client(dyn), entries)
    assert err.value.status == 403


OPERATOR = [{"api_version": "apps/v1", "kind": "Deployment", "namespace": "tigera-operator", "name": "op"}]


def _clock():
    now, slept = [0.0], []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds
    return {"sleep": sleep, "clock": lambda: now[0]}, slept


def test_a_wait_for_a_condition_reads_again_inside_one_call_and_quotes_the_objects_own_conditions():
    """The operator Deployment not Available: read at 0, 5 and 10 s of a 12 s wait (no retried task, so no
    "FAILED - RETRYING" line), then not satisfied, quoting its conditions; once Available, satisfied at the first
    read."""
    dyn = cluster()
    dyn.put("apps/v1", "deployments", {"metadata": {"name": "op", "namespace": "tigera-operator"}, "status": {
        "conditions": [{"type": "Available", "status": "False", "message": "Deployment does not have minimum availability."},
                       {"type": "Progressing", "status": "True"}]}})
    clock, slept = _clock()
    out = wait_objects(client(dyn), OPERATOR, {"type": "Available"}, 12, 5, **clock)
    assert slept == [5, 5] and out["waited"] == 10 and out["satisfied"] is False
    assert out["unmet"] == ["Deployment/op: Available=False: Deployment does not have minimum availability.; "
                            "Progressing=True"]
    assert out["objects"][0]["resources"][0]["status"]["conditions"][0]["status"] == "False"
    dyn.put("apps/v1", "deployments", {"metadata": {"name": "op", "namespace": "tigera-operator"}, "status": {
        "conditions": [{"type": "Available", "status": "True"}]}})
    clock, slept = _clock()
    out = wait_objects(client(dyn), OPERATOR, {"type": "Available", "status": "True"}, 12, 5, **clock)
    assert slept == [] and out["satisfied"] is True and out["unmet"] == [] and out["waited"] == 0


def test_an_entry_that_finds_nothing_does_not_satisfy_a_wait():
    clock, _slept = _clock()
    out = wait_objects(client(cluster()), [dict(OPERATOR[0], name="gone")], {"type": "Available"}, 0, 5, **clock)
    assert out["satisfied"] is False
    assert out["unmet"] == ["apps/v1 Deployment tigera-operator/gone: not found"]


def test_a_bad_wait_condition_names_the_option():
    assert condition_problem({"type": "Available"}) is None
    assert condition_problem({"type": "Ready", "status": "False"}) is None
    assert condition_problem({}).startswith("wait_condition: give the condition's type")
    assert condition_problem({"type": "Ready", "status": "yes"}) == (
        "wait_condition.status is 'yes': one of True, False, Unknown")


def test_a_wait_until_gone_reads_again_until_no_entry_finds_an_object():
    dyn = cluster()
    clock, slept = _clock()
    out = wait_objects(client(dyn), OPERATOR, None, 7, 5, **clock)
    assert slept == [5] and out["satisfied"] is False and out["unmet"] == ["Deployment/op: still there"]
    clock, slept = _clock()
    out = wait_objects(client(dyn), [dict(OPERATOR[0], name="gone")], None, 7, 5, **clock)
    assert slept == [] and out["satisfied"] is True and out["unmet"] == []
