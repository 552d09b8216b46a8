"""objects/merge_patch.py: RFC 7386 (only for the body of an object to create), and the runner behind the real
``Client`` over a tiny in-memory transport standing in for the API server's merge and dry run."""

import copy
import json

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import api_exception

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import Client, ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.objects.merge_patch import apply_merge_patch, patch_view, run_merge_patch, strip_noise


# -- RFC 7386 -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("target, patch, result", [
    # the examples of RFC 7386 appendix A
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
])
def test_rfc7386(target, patch, result):
    before = copy.deepcopy(target)
    assert apply_merge_patch(target, patch) == result
    assert target == before


def test_patch_view_shows_only_what_the_patch_touches():
    obj = {"metadata": {"name": "x"}, "spec": {"replicas": 2, "template": {"spec": {
        "nodeSelector": {"kubernetes.io/os": "linux"}, "containers": [{"name": "c"}]}}}}
    view = patch_view(obj, {"spec": {"template": {"spec": {"nodeSelector": {"non-calico": "true"}}}}})
    # the leaf map is shown whole: the diff shows the keys that stay
    assert view == {"spec": {"template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}}}}}


def test_strip_noise():
    assert strip_noise({"metadata": {"name": "x", "resourceVersion": "1", "managedFields": []},
                        "status": {}}) == {"metadata": {"name": "x"}}


# -- the runner -----------------------------------------------------------------------------------------------
# The merge is the API server's: the runner sends the patch as a dry run, compares the answer with the live object
# and writes only when they differ. The stand-in server below merges as the real one does for what these tests
# patch (maps key by key; with a strategic merge, lists of ``ports`` by their ``port`` and other lists of objects
# by ``name``; a JSON merge patch replaces lists whole); the two-port Service against the real API server is
# tests/integration/test_merge_by_the_server.py.

class _Resp(object):
    def __init__(self, data):
        self.data = json.dumps(data).encode() if data is not None else b""


def _strategic(target, patch, field=None):
    if isinstance(patch, dict):
        out = copy.deepcopy(target) if isinstance(target, dict) else {}
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = _strategic(out.get(key), value, key)
        return out
    if isinstance(patch, list) and isinstance(target, list) and patch and all(isinstance(i, dict) for i in patch):
        key = "port" if field == "ports" else "name"
        out = copy.deepcopy(target)
        for item in patch:
            at = next((i for i, cur in enumerate(out) if cur.get(key) == item.get(key)), None)
            if at is None:
                out.append(copy.deepcopy(item))
            else:
                out[at] = _strategic(out[at], item)
        return out
    return copy.deepcopy(patch)


CRD_GROUPS = ("operator.tigera.io", "example.k8s.io")  # served by CRDs: no strategic merge


class Transport(object):
    """Objects by path; GET, POST and PATCH (strategic or merge, dry run or not) as the API server answers them:
    resourceVersion precondition (409), no strategic merge for custom resources (415), ``reject`` (422)."""

    def __init__(self, objects=None, reject=None, missing_namespaces=()):
        self.objects = copy.deepcopy(objects or {})
        self.missing_namespaces = missing_namespaces  # a POST into one of these: 404, as the API server answers
        self.log = []
        self.rv = 10
        self.reject = reject

    def request(self, method, path, body=None, **params):
        dry = ("dryRun", "All") in (params.get("query_params") or [])
        self.log.append((method, path, params.get("content_type"), copy.deepcopy(body), dry))
        if method == "GET":
            if path not in self.objects:
                raise api_exception(ApiException(status=404, reason="Not Found"))
            return _Resp(self.objects[path])
        if self.reject:
            raise api_exception(ApiException(status=422, reason="Unprocessable Entity"))
        if method == "POST":
            if any("/namespaces/%s/" % ns in path for ns in self.missing_namespaces):
                raise api_exception(ApiException(status=404, reason="Not Found"))
            name = body["metadata"]["name"]
            obj = dict(copy.deepcopy(body))
            if not dry:
                self.rv += 1
                obj["metadata"]["resourceVersion"] = str(self.rv)
                self.objects["%s/%s" % (path, name)] = obj
            return _Resp(obj)
        if method == "PATCH":
            ctype = params.get("content_type")
            if ctype == "application/strategic-merge-patch+json" and path.split("/")[2] in CRD_GROUPS:
                raise api_exception(ApiException(status=415, reason="Unsupported Media Type"))
            assert ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json")
            current = self.objects[path]
            wanted_rv = (body.get("metadata") or {}).get("resourceVersion")
            if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
                raise api_exception(ApiException(status=409, reason="Conflict"))
            merge = _strategic if ctype.startswith("application/strategic") else apply_merge_patch
            obj = merge(current, body)
            obj["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            if obj != current and not dry:
                self.rv += 1
                obj["metadata"]["resourceVersion"] = str(self.rv)
                self.objects[path] = obj
            return _Resp(obj)
        raise AssertionError(method)


DS_PATH = "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy"
DS = {"apiVersion": "apps/v1", "kind": "DaemonSet",
      "metadata": {"name": "kube-proxy", "namespace": "kube-system", "resourceVersion": "5"},
      "spec": {"template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}}}}}
ADD = {"spec": {"template": {"spec": {"nodeSelector": {"non-calico": "true"}}}}}
REMOVE = {"spec": {"template": {"spec": {"nodeSelector": {"non-calico": None}}}}}


def writes(transport):
    """Requests that persist something (dry runs left out)."""
    return [entry[:4] for entry in transport.log if entry[0] != "GET" and not entry[4]]


def dry_runs(transport):
    return [entry[:4] for entry in transport.log if entry[4]]


def run(transport, patch, check=False, **kwargs):
    client = Client(transport, check_mode=check)
    return run_merge_patch(client, "apps/v1", "daemonsets", "kube-proxy", patch, namespace="kube-system",
                           want_diff=True, **kwargs)


def test_patch_then_nothing_to_do():
    t = Transport({DS_PATH: DS})
    out = run(t, ADD)
    assert out["changed"] is True
    assert out["patch_type"] == "strategic"
    assert out["diff"]["before"] == {"spec": {"template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}}}}}
    assert out["diff"]["after"] == {"spec": {"template": {"spec": {
        "nodeSelector": {"kubernetes.io/os": "linux", "non-calico": "true"}}}}}
    assert len(writes(t)) == 1
    assert writes(t)[0][3] == ADD                   # no resourceVersion unless asked
    assert dry_runs(t) == [("PATCH", DS_PATH, "application/strategic-merge-patch+json", ADD)]  # the dry run first
    again = run(t, ADD)
    assert again["changed"] is False
    assert "diff" not in again
    assert len(writes(t)) == 1                     # no second PATCH at all
    assert (again["api_requests"]["read"], again["api_requests"]["write"], again["api_requests"]["dry_run"]) == (
        1, 0, 1)


def test_remove_only_that_key():
    t = Transport({DS_PATH: DS})
    run(t, ADD)
    out = run(t, REMOVE)
    assert out["changed"] is True
    assert t.objects[DS_PATH]["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert run(t, REMOVE)["changed"] is False


def test_check_mode_sends_only_the_dry_run():
    t = Transport({DS_PATH: DS})
    out = run(t, ADD, check=True)
    assert out["changed"] is True
    assert out["object"]["spec"]["template"]["spec"]["nodeSelector"]["non-calico"] == "true"
    assert writes(t) == []
    assert len(dry_runs(t)) == 1
    assert t.objects[DS_PATH] == DS


def test_check_mode_predicts_a_creation_into_a_namespace_an_earlier_task_creates():
    """Check mode does not create the namespace an earlier task creates, so the server cannot dry-run into it: the
    creation is shown as it would be sent, with a warning; without check mode the 404 stays an error."""
    t = Transport({}, missing_namespaces=("kube-system",))
    body = {"apiVersion": "apps/v1", "kind": "DaemonSet"}
    out = run(t, ADD, missing="create", create=body, check=True)
    assert (out["changed"], out["created"]) == (True, True)
    assert out["object"]["spec"]["template"]["spec"]["nodeSelector"]["non-calico"] == "true"
    assert "namespace kube-system does not exist yet" in out["warnings"][0]
    assert writes(t) == []
    with pytest.raises(ClientError) as err:
        run(t, ADD, missing="create", create=body)
    assert err.value.status == 404


def test_missing_fail_skip_create():
    t = Transport({})
    with pytest.raises(ClientError) as err:
        run(t, ADD)
    assert err.value.status == 404
    assert str(err.value).startswith("daemonsets.apps kube-system/kube-proxy: 404 Not Found")
    out = run(t, ADD, missing="skip")
    assert (out["changed"], out["exists"]) == (False, False)
    body = {"apiVersion": "apps/v1", "kind": "DaemonSet"}
    out = run(t, ADD, missing="create", create=body, check=True)
    assert (out["changed"], out["created"]) == (True, True)
    assert writes(t) == []
    assert [d[0] for d in dry_runs(t)] == ["POST"]  # the creation is dry-run in check mode too
    out = run(t, ADD, missing="create", create=body)
    created = t.objects["/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy"]
    assert created["metadata"]["namespace"] == "kube-system"
    assert created["spec"]["template"]["spec"]["nodeSelector"] == {"non-calico": "true"}
    assert out["diff"]["before"] == {}
    assert run(t, ADD, missing="create", create=body)["changed"] is False


def test_lock_sends_the_resource_version():
    t = Transport({DS_PATH: DS})
    run(t, ADD, lock=True)
    assert dry_runs(t)[0][3]["metadata"]["resourceVersion"] == "5"
    method, path, ctype, body = writes(t)[0]
    assert body["metadata"]["resourceVersion"] == "5"


def test_missing_create_without_a_body_is_an_error():
    with pytest.raises(ClientError):
        run(Transport({}), ADD, missing="create", create=None)


SVC_PATH = "/api/v1/namespaces/monitoring/services/web"
SVC = {"apiVersion": "v1", "kind": "Service",
       "metadata": {"name": "web", "namespace": "monitoring", "resourceVersion": "7"},
       "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443},
                          {"name": "metrics", "port": 9094, "targetPort": 9094}]}}


def run_svc(transport, patch, **kwargs):
    return run_merge_patch(Client(transport), "v1", "services", "web", patch, namespace="monitoring", **kwargs)


def test_the_decision_is_the_servers_answer_not_a_local_merge():
    """A patch restating one port of two: RFC 7386 locally would replace the list (and drop https), the server's
    strategic merge changes nothing, so nothing is written; a patch of that port's targetPort keeps https."""
    t = Transport({SVC_PATH: SVC})
    same = {"spec": {"ports": [{"name": "metrics", "port": 9094, "targetPort": 9094}]}}
    assert apply_merge_patch(SVC, same) != SVC
    out = run_svc(t, same)
    assert (out["changed"], writes(t)) == (False, [])
    out = run_svc(t, {"spec": {"ports": [{"port": 9094, "targetPort": 19094}]}})
    assert out["changed"] is True
    assert [(p["name"], p["targetPort"]) for p in t.objects[SVC_PATH]["spec"]["ports"]] == [
        ("https", 8443), ("metrics", 19094)]
    assert out["after"] == {"spec": {"ports": t.objects[SVC_PATH]["spec"]["ports"]}}  # the diff: both ports


def test_merge_patch_type_replaces_lists_as_asked():
    t = Transport({SVC_PATH: SVC})
    run_svc(t, {"spec": {"ports": [{"port": 9094, "targetPort": 19094}]}}, patch_type="merge")
    assert t.objects[SVC_PATH]["spec"]["ports"] == [{"port": 9094, "targetPort": 19094}]
    assert writes(t)[0][2] == "application/merge-patch+json"


CR_PATH = "/apis/operator.tigera.io/v1/installations/default"
CR = {"apiVersion": "operator.tigera.io/v1", "kind": "Installation",
      "metadata": {"name": "default", "resourceVersion": "3"}, "spec": {"variant": "Calico"}}


def test_custom_resources_get_a_merge_patch_and_auto_falls_back_on_415():
    t = Transport({CR_PATH: CR})
    patch = {"spec": {"calicoNetwork": {"linuxDataplane": "BPF"}}}
    out = run_merge_patch(Client(t), "operator.tigera.io/v1", "installations", "default", patch)
    assert out["patch_type"] == "merge"
    assert [d[2] for d in dry_runs(t)] == ["application/merge-patch+json"]  # no strategic attempt at all
    t = Transport({CR_PATH: CR})
    t.objects["/apis/example.k8s.io/v1/widgets/w"] = dict(CR, apiVersion="example.k8s.io/v1")
    t.objects["/apis/example.k8s.io/v1/widgets/w"]["metadata"] = {"name": "w", "resourceVersion": "3"}
    out = run_merge_patch(Client(t), "example.k8s.io/v1", "widgets", "w", patch)
    assert out["changed"] is True and out["patch_type"] == "merge"  # a CRD in a *.k8s.io group: 415, then merge
    assert [d[2] for d in dry_runs(t)] == ["application/strategic-merge-patch+json", "application/merge-patch+json"]
    assert [w[2] for w in writes(t)] == ["application/merge-patch+json"]


def test_a_patch_the_server_refuses_in_the_dry_run_writes_nothing():
    t = Transport({DS_PATH: DS}, reject=True)
    with pytest.raises(ClientError) as err:
        run(t, ADD)
    assert err.value.status == 422
    assert str(err.value).startswith("daemonsets.apps kube-system/kube-proxy: 422 Unprocessable Entity")
    assert writes(t) == []


def test_an_empty_patch_of_an_existing_object_sends_nothing():
    """missing=create with no patch (a Namespace to have): when it exists, not even a dry run."""
    t = Transport({DS_PATH: DS})
    out = run(t, {}, missing="create", create={"apiVersion": "apps/v1", "kind": "DaemonSet"})
    assert (out["changed"], out["exists"]) == (False, True)
    assert [entry[0] for entry in t.log] == ["GET"]
