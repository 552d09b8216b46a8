"""The pure parts of the *limit* contender replayed from ours' own requests (benchmarks/limit.py: the capture read
from the audit log, the waves a replay may send concurrently) and of the wait accounting of benchmarks/tasks.py (a
task that applies and then waits counts its wait only)."""

import pytest

from benchmarks import limit, tasks
from benchmarks.harness import merge_type  # the collection's own rule (merge_patch ``auto``)


def _ev(verb, uri, at, resource=None, name=None, namespace=None, group="", body=None, code=200):
    ev = {"verb": verb, "requestURI": uri, "requestReceivedTimestamp": "2026-11-28T02:00:%09.6fZ" % at,
          "objectRef": {"resource": resource, "name": name, "namespace": namespace, "apiGroup": group,
                        "apiVersion": "v1"},  # as the audit log has it: the group apart from the version
          "responseStatus": {"code": code}}
    if body is not None:
        ev["requestObject"] = body
    return ev


def _epoch(at):
    return limit.epoch("2026-11-28T02:00:%09.6fZ" % at)


def test_capture_keeps_ours_order_path_and_bodies_and_infers_each_patch_type():
    apply = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}
    events = [
        _ev("patch", "/api/v1/namespaces/ns/configmaps/a?fieldManager=calico-ops&force=true", 3.0,
            "configmaps", "a", "ns", body=apply),
        _ev("get", "/api/v1/namespaces/ns/configmaps/a", 1.0, "configmaps", "a", "ns", code=404),
        _ev("patch", "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy?fieldManager=x", 4.0, "daemonsets",
            "kube-proxy", "kube-system", group="apps", body={"spec": {"template": {}}}),
        _ev("patch", "/apis/operator.tigera.io/v1/installations/default?fieldManager=x", 5.0, "installations",
            "default", group="operator.tigera.io", body={"spec": {}}),
        _ev("patch", "/api/v1/namespaces/ns/configmaps/a?fieldManager=x", 6.0, "configmaps", "a", "ns",
            body=[{"op": "replace", "path": "/metadata/labels", "value": {}}]),
        _ev("patch", "/api/v1/namespaces/ns/configmaps/a?dryRun=All&fieldManager=x", 2.0, "configmaps", "a", "ns",
            body=apply),
        _ev("watch", "/api/v1/pods?watch=true", 2.5, "pods"),
    ]
    stream, rewritten = limit.captured_stream(events, merge_type)
    assert rewritten == 0
    assert [(r["method"], r["path"].split("?")[0].rsplit("/", 1)[-1], r["write"]) for r in stream] == [
        ("GET", "a", False), ("PATCH", "a", False), ("PATCH", "a", True), ("PATCH", "kube-proxy", True),
        ("PATCH", "default", True), ("PATCH", "a", True)]
    assert stream[2]["path"] == "/api/v1/namespaces/ns/configmaps/a?fieldManager=calico-ops&force=true"
    assert stream[2]["body"] == apply and stream[0]["code"] == 404
    assert [r["content_type"] for r in stream[1:]] == [
        "application/apply-patch+yaml", "application/apply-patch+yaml", "application/strategic-merge-patch+json",
        "application/merge-patch+json", "application/json-patch+json"]


def test_capture_leaves_out_waits_and_later_pages_and_drops_preconditions_counting_them():
    events = [
        _ev("list", "/api/v1/pods?limit=500", 1.0, "pods"),
        _ev("list", "/api/v1/pods?limit=500&continue=abc", 1.1, "pods"),
        _ev("get", "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy", 5.0, "daemonsets", group="apps"),
        _ev("update", "/api/v1/namespaces/kube-system/configmaps/rec", 8.0, "configmaps", "rec", "kube-system",
            body={"metadata": {"name": "rec", "resourceVersion": "12", "uid": "u-1"}, "data": {"k": "v"}}),
        _ev("patch", "/api/v1/namespaces/kube-system/configmaps/rec?fieldManager=x", 9.0, "configmaps", "rec",
            "kube-system", body=[{"op": "test", "path": "/metadata/resourceVersion", "value": "13"},
                                 {"op": "replace", "path": "/metadata/managedFields", "value": []}]),
        _ev("delete", "/api/v1/namespaces/kube-system/configmaps/rec", 10.0, "configmaps", "rec", "kube-system",
            body={"kind": "DeleteOptions", "preconditions": {"uid": "u-1"}}),
    ]
    stream, rewritten = limit.captured_stream(events, merge_type, skip_windows=[(_epoch(4.0), _epoch(6.0))])
    assert [r["path"] for r in stream] == [
        "/api/v1/pods?limit=500", "/api/v1/namespaces/kube-system/configmaps/rec",
        "/api/v1/namespaces/kube-system/configmaps/rec?fieldManager=x", "/api/v1/namespaces/kube-system/configmaps/rec"]
    assert rewritten == 3
    assert stream[1]["body"] == {"metadata": {"name": "rec"}, "data": {"k": "v"}}
    assert stream[2]["body"] == [{"op": "replace", "path": "/metadata/managedFields", "value": []}]
    assert stream[3]["body"] == {"kind": "DeleteOptions"}


def test_a_captured_write_without_its_body_cannot_be_replayed():
    events = [_ev("create", "/api/v1/namespaces/ns/secrets", 1.0, "secrets", "s", "ns")]
    with pytest.raises(RuntimeError, match="no body"):
        limit.captured_stream(events, merge_type)


def _req(verb, resource, name, namespace=None, group="", write=None):
    return {"verb": verb, "resource": resource, "name": name, "namespace": namespace, "group": group,
            "write": (verb not in ("get", "list")) if write is None else write}


def test_waves_cut_where_a_write_needs_an_earlier_one_and_name_the_crds_to_wait_for():
    crd = "installations.operator.tigera.io"
    stream = [
        _req("get", "nodes", None),
        _req("patch", "configmaps", "a", "ns", write=False),  # a dry run: a read of a kind
        _req("create", "namespaces", "ns"),
        _req("patch", "customresourcedefinitions", crd, group="apiextensions.k8s.io"),
        _req("patch", "configmaps", "a", "ns"),  # needs its namespace: a new wave
        _req("patch", "deployments", "op", "ns", group="apps"),
        _req("patch", "configmaps", "a", "ns"),  # the same object again: a new wave
        _req("patch", "installations", "default", group="operator.tigera.io"),
        _req("get", "installations", "default", group="operator.tigera.io"),
    ]
    got = [(needs, [(r["verb"], r["name"]) for r in wave]) for needs, wave in limit.waves(stream)]
    assert got == [
        ([], [("get", None), ("patch", "a")]),
        ([], [("create", "ns"), ("patch", crd)]),
        ([], [("patch", "a"), ("patch", "op")]),
        ([crd], [("patch", "a"), ("patch", "default")]),
        ([crd], [("get", "default")]),
    ]


def test_a_task_that_applies_then_waits_counts_its_wait_only():
    data = {"plays": [{"tasks": [
        {"task": {"name": "Apply the CRDs and wait until they are Established",
                  "duration": {"start": "2026-11-28T02:00:00.000000Z", "end": "2026-11-28T02:00:06.000000Z"}},
         "hosts": {"localhost": {"waited_s": 0.5}}},
        {"task": {"name": "Wait for the operator", "duration": {"start": "2026-11-28T02:00:06.000000Z",
                                                               "end": "2026-11-28T02:00:09.000000Z"}},
         "hosts": {"localhost": {}}},
        {"task": {"name": "Apply the rest", "duration": {"start": "2026-11-28T02:00:09.000000Z",
                                                        "end": "2026-11-28T02:00:10.000000Z"}},
         "hosts": {"localhost": {}}},
    ]}]}
    assert tasks.wait_seconds(data) == pytest.approx(3.5)
    windows = tasks.wait_windows(data)
    assert [round(b - a, 3) for a, b in windows] == [0.5, 3.0]
    profile = tasks.task_profile(data, exclude=r"\bwait")
    assert profile["floor_tasks"] == {"module": 2, "control": 0}
