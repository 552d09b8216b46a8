"""k8s/client.py: the ``Client`` every job talks to the API server through: paths, check mode, pagination, and its
failures as one line naming the object (through the one error mapper, k8s/errors.py)."""

import json
import os

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import api_exception

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import client as client_module, errors
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ACCEPT_METADATA, Client, ClientError, api_path, check_kubeconfig
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import ReadOnlyViolation

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import client, standard_api


SECRET = "c2VudGluZWwtc2VjcmV0"  # what a 409/422 body echoes of a Secret


class Dyn(object):
    def __init__(self, exc):
        self.exc = exc

    def request(self, *args, **kwargs):
        raise self.exc


def test_an_api_error_keeps_only_the_status_reason_and_message_of_the_body():
    body = json.dumps({"kind": "Status", "status": "Failure", "reason": "AlreadyExists", "code": 409,
                       "message": 'secrets "pull" already exists',
                       "details": {"name": "pull", "kind": "secrets", "causes": [{"message": SECRET}]},
                       "object": {"data": {".dockerconfigjson": SECRET}}})
    client = Client(Dyn(api_exception(ApiException(status=409, reason="Conflict", http_resp=None))))
    client._dyn.exc.body = body
    with pytest.raises(ClientError) as err:
        client.create("v1", "secrets", {"metadata": {"name": "pull"}, "data": {"x": SECRET}}, namespace="tigera-operator")
    msg = str(err.value)
    assert msg == ('secrets tigera-operator/pull: 409 Conflict: secrets "pull" already exists '
                   '(POST /api/v1/namespaces/tigera-operator/secrets); ' + errors.ADVICE[409])
    assert SECRET not in msg and not hasattr(err.value, "body")
    assert (err.value.status, err.value.reason, err.value.api_message) == (409, "Conflict", 'secrets "pull" already exists')


def test_a_stopped_api_server_is_one_line_without_object_addresses():
    exc = urllib3.exceptions.MaxRetryError(
        urllib3.HTTPSConnectionPool("127.0.0.1", 1), "/api/v1/nodes",
        urllib3.exceptions.NewConnectionError(None, "Failed to establish a new connection: [Errno 111] Connection refused"))
    with pytest.raises(ClientError) as err:
        Client(Dyn(exc)).get("apps/v1", "daemonsets", "kube-proxy", namespace="kube-system")
    msg = str(err.value)
    assert msg.startswith("daemonsets.apps kube-system/kube-proxy: the API server at https://127.0.0.1:1 was not "
                          "reached (connection refused) (GET /apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy)")
    assert "0x" not in msg and "\n" not in msg and err.value.status == 0
    assert err.value.__cause__ is None and err.value.__context__ is None  # raised outside the except block


# -- paths, reads, writes, check mode (the real Client over the in-memory API of fake_k8s) -------------------------

@pytest.mark.parametrize("args, path", [
    (("v1", "configmaps"), "/api/v1/configmaps"),
    (("v1", "configmaps", "kube-system"), "/api/v1/namespaces/kube-system/configmaps"),
    (("v1", "configmaps", "kube-system", "x"), "/api/v1/namespaces/kube-system/configmaps/x"),
    (("apps/v1", "deployments", "a", "d", "scale"), "/apis/apps/v1/namespaces/a/deployments/d/scale"),
    (("projectcalico.org/v3", "globalnetworkpolicies", None, "deny"), "/apis/projectcalico.org/v3/globalnetworkpolicies/deny"),
    (("v1", "nodes", None, "n1", "status"), "/api/v1/nodes/n1/status"),
])
def test_api_path(args, path):
    assert api_path(*args) == path


def test_a_missing_object_is_none_and_a_missing_type_too_for_list_or_none():
    c = client(standard_api())
    assert c.get("v1", "configmaps", "nope", namespace="a") is None
    assert c.delete("v1", "configmaps", "nope", namespace="a") is None
    assert c.list_or_none("v1", "nosuchthings") is None
    assert c.list_or_none("v1", "configmaps", namespace="a") == []
    with pytest.raises(ClientError) as err:
        c.list("v1", "nosuchthings")
    assert err.value.status == 404


def test_list_follows_the_continue_tokens_one_request_per_page():
    dyn = standard_api()
    for i in range(5):
        dyn.put("v1", "configmaps", {"metadata": {"name": "cm%d" % i, "namespace": "a"}})
    c = client(dyn)
    items = c.list("v1", "configmaps", namespace="a", page_size=2)
    assert [i["metadata"]["name"] for i in items] == ["cm0", "cm1", "cm2", "cm3", "cm4"]
    assert all(i["apiVersion"] == "v1" and i["kind"] == "ConfigMap" for i in items)  # set from the list's kind
    pages = [q for m, p, q in dyn.log if p == "/api/v1/namespaces/a/configmaps"]
    assert [(q["limit"], q.get("continue")) for q in pages] == [(2, None), (2, "2"), (2, "4")]
    assert c.requests == {"read": 3, "write": 0, "dry_run": 0}


def test_metadata_only_reads_ask_for_partial_object_metadata():
    dyn = standard_api()
    dyn.put("v1", "secrets", {"metadata": {"name": "s", "namespace": "a"}, "data": {"k": "c2VjcmV0"}})
    c = client(dyn)
    got = c.get("v1", "secrets", "s", namespace="a", metadata_only=True)
    assert "data" not in got and got["metadata"]["name"] == "s"
    listed = c.list("v1", "secrets", namespace="a", metadata_only=True)
    assert listed == [{"metadata": listed[0]["metadata"], "apiVersion": "v1"}] and "data" not in listed[0]
    assert [a for _m, _p, a in dyn.accepts] == [ACCEPT_METADATA, client_module.ACCEPT_METADATA_LIST]


def test_check_mode_refuses_every_write_before_it_is_sent_but_lets_dry_runs_through():
    dyn = standard_api()
    dyn.put("v1", "configmaps", {"metadata": {"name": "x", "namespace": "a"}})
    c = client(dyn, check_mode=True)
    body = {"metadata": {"name": "y", "namespace": "a"}}
    for write in (lambda: c.create("v1", "configmaps", body, namespace="a"),
                  lambda: c.replace("v1", "configmaps", dict(body, metadata={"name": "x"}), namespace="a"),
                  lambda: c.json_patch("v1", "configmaps", "x", [], namespace="a"),
                  lambda: c.delete("v1", "configmaps", "x", namespace="a")):
        with pytest.raises(ReadOnlyViolation, match="check mode: refusing"):
            write()
    assert dyn.log == [] and c.requests["write"] == 0
    assert c.create("v1", "configmaps", body, namespace="a", dry_run=True)["metadata"]["name"] == "y"
    assert dyn.log == [("POST", "/api/v1/namespaces/a/configmaps", {"fieldManager": "calico-ops", "dryRun": "All"})]
    assert c.requests == {"read": 0, "write": 0, "dry_run": 1} and dyn.writes() == []


def test_writes_carry_the_field_manager_and_a_delete_its_uid_precondition():
    dyn = standard_api()
    c = Client(dyn, field_manager="someone")
    made = c.create("v1", "configmaps", {"metadata": {"name": "x"}, "data": {"a": "1"}}, namespace="a")
    assert dyn.log[-1] == ("POST", "/api/v1/namespaces/a/configmaps", {"fieldManager": "someone"})
    made["data"]["a"] = "2"
    c.replace("v1", "configmaps", made, namespace="a")
    assert dyn.log[-1] == ("PUT", "/api/v1/namespaces/a/configmaps/x", {"fieldManager": "someone"})
    assert dyn.obj("v1", "configmaps", "x", "a")["data"] == {"a": "2"}
    sent = []
    plain = dyn.request

    def request(method, path, body=None, **params):
        sent.append((method, body))
        return plain(method, path, body, **params)
    dyn.request = request
    c.delete("v1", "configmaps", "x", namespace="a", precondition_uid="u-1")
    assert sent == [("DELETE", {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "u-1"}})]
    assert dyn.obj("v1", "configmaps", "x", "a") is None
    assert c.requests == {"read": 0, "write": 3, "dry_run": 0}


class _Module(object):
    def __init__(self, **params):
        self.params = dict({"kubeconfig": None, "host": None}, **params)
        self.failed = None

    def fail_json(self, msg):
        self.failed = msg


def test_a_kubeconfig_that_does_not_exist_is_named_by_its_option_not_its_path(tmp_path, monkeypatch):
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG", raising=False)
    module = _Module(kubeconfig=str(tmp_path / "secret-place" / "config"))
    check_kubeconfig(module)
    assert module.failed == "kubeconfig: the kubeconfig file given does not exist"
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", str(tmp_path / "nowhere"))
    module = _Module()
    check_kubeconfig(module)
    assert module.failed == "K8S_AUTH_KUBECONFIG: the kubeconfig file given does not exist"
    present = tmp_path / "config"
    present.write_text("apiVersion: v1\n")
    for ok in (_Module(kubeconfig=str(present)), _Module(host="https://10.0.0.1:6443"),
               _Module(kubeconfig="%s%s%s" % (present, os.pathsep, tmp_path / "other"))):
        check_kubeconfig(ok)
        assert ok.failed is None
