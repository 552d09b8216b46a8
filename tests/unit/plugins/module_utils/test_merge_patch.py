"""merge_patch: RFC 7386 locally, and the runner behind the real ``Client`` over a tiny in-memory transport."""

import copy
import json

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import api_exception

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import Client, ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.merge_patch import (
    apply_merge_patch, patch_view, run_merge_patch, strip_noise)


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

class _Resp(object):
    def __init__(self, data):
        self.data = json.dumps(data).encode() if data is not None else b""


class Transport(object):
    """Objects by path; GET, POST and merge-patch PATCH as the API server does them (resourceVersion check)."""

    def __init__(self, objects=None):
        self.objects = copy.deepcopy(objects or {})
        self.log = []
        self.rv = 10

    def request(self, method, path, body=None, **params):
        self.log.append((method, path, params.get("content_type"), copy.deepcopy(body)))
        if method == "GET":
            if path not in self.objects:
                raise api_exception(ApiException(status=404, reason="Not Found"))
            return _Resp(self.objects[path])
        if method == "POST":
            name = body["metadata"]["name"]
            self.rv += 1
            obj = dict(copy.deepcopy(body))
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self.objects["%s/%s" % (path, name)] = obj
            return _Resp(obj)
        if method == "PATCH":
            assert params.get("content_type") == "application/merge-patch+json"
            current = self.objects[path]
            wanted_rv = (body.get("metadata") or {}).get("resourceVersion")
            if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
                raise api_exception(ApiException(status=409, reason="Conflict"))
            self.rv += 1
            obj = apply_merge_patch(current, body)
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
    return [entry for entry in transport.log if entry[0] != "GET"]


def run(transport, patch, check=False, **kwargs):
    client = Client(transport, check_mode=check)
    return run_merge_patch(client, "apps/v1", "daemonsets", "kube-proxy", patch, namespace="kube-system",
                           want_diff=True, **kwargs)


def test_patch_then_nothing_to_do():
    t = Transport({DS_PATH: DS})
    out = run(t, ADD)
    assert out["changed"] is True
    assert out["diff"]["before"] == {"spec": {"template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}}}}}
    assert out["diff"]["after"] == {"spec": {"template": {"spec": {
        "nodeSelector": {"kubernetes.io/os": "linux", "non-calico": "true"}}}}}
    assert len(writes(t)) == 1
    assert writes(t)[0][3] == ADD                   # no resourceVersion unless asked
    again = run(t, ADD)
    assert again["changed"] is False
    assert "diff" not in again
    assert len(writes(t)) == 1                     # no second PATCH at all
    assert (again["api_requests"]["read"], again["api_requests"]["write"]) == (1, 0)


def test_remove_only_that_key():
    t = Transport({DS_PATH: DS})
    run(t, ADD)
    out = run(t, REMOVE)
    assert out["changed"] is True
    assert t.objects[DS_PATH]["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert run(t, REMOVE)["changed"] is False


def test_check_mode_sends_no_write():
    t = Transport({DS_PATH: DS})
    out = run(t, ADD, check=True)
    assert out["changed"] is True
    assert out["object"]["spec"]["template"]["spec"]["nodeSelector"]["non-calico"] == "true"
    assert writes(t) == []
    assert t.objects[DS_PATH] == DS


def test_missing_fail_skip_create():
    t = Transport({})
    with pytest.raises(ClientError) as err:
        run(t, ADD)
    assert err.value.status == 404
    out = run(t, ADD, missing="skip")
    assert (out["changed"], out["exists"]) == (False, False)
    body = {"apiVersion": "apps/v1", "kind": "DaemonSet"}
    out = run(t, ADD, missing="create", create=body, check=True)
    assert (out["changed"], out["created"]) == (True, True)
    assert writes(t) == []
    out = run(t, ADD, missing="create", create=body)
    created = t.objects["/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy"]
    assert created["metadata"]["namespace"] == "kube-system"
    assert created["spec"]["template"]["spec"]["nodeSelector"] == {"non-calico": "true"}
    assert out["diff"]["before"] == {}
    assert run(t, ADD, missing="create", create=body)["changed"] is False


def test_lock_sends_the_resource_version():
    t = Transport({DS_PATH: DS})
    run(t, ADD, lock=True)
    method, path, ctype, body = writes(t)[0]
    assert body["metadata"]["resourceVersion"] == "5"


def test_missing_create_without_a_body_is_an_error():
    with pytest.raises(ClientError):
        run(Transport({}), ADD, missing="create", create=None)
