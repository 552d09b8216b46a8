"""The one error mapper (k8s/errors.py) and the module base's failures: one line naming the object, the status and
reason, the API's message only, what to do; never a traceback, a local credentials path or a response body."""

import json
import sys

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException
from kubernetes.dynamic.exceptions import api_exception

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import errors
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import module as base
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import Client, ClientError

SECRET = "c2VudGluZWwtc2VjcmV0"  # what a 409/422 body echoes of a Secret


class Failed(Exception):
    pass


class StubModule(object):
    """Records fail_json / exit_json, and whether an exception was pending when fail_json was called (ansible-core
    before 2.19 then adds its traceback at -vvv)."""

    calls = []

    def __init__(self, argument_spec=None, supports_check_mode=True, **kwargs):
        self.params = {"kubeconfig": None, "host": None}
        self.check_mode = False
        self._diff = False

    def warn(self, msg):
        pass

    def fail_json(self, **kwargs):
        StubModule.calls.append(("fail", kwargs, sys.exc_info()[1]))
        raise SystemExit(1)

    def exit_json(self, **kwargs):
        StubModule.calls.append(("exit", kwargs, None))
        raise SystemExit(0)


class StubK8sModule(base.K8sModule):
    module_class = StubModule


@pytest.fixture(autouse=True)
def _calls(monkeypatch):
    StubModule.calls = []
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG", raising=False)


def fail_of(work, cls=StubK8sModule, **kwargs):
    with pytest.raises(SystemExit):
        cls({}, **kwargs).run(work)
    assert len(StubModule.calls) == 1
    kind, result, pending = StubModule.calls[0]
    assert kind == "fail"
    assert pending is None, "fail_json called while %r was pending: a traceback at -vvv" % pending
    assert "exception" not in result
    assert "\n" not in result["msg"]
    return result


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


@pytest.mark.parametrize("path, what", [
    ("/api/v1/namespaces/x/configmaps/y", "configmaps x/y"),
    ("/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy", "daemonsets.apps kube-system/kube-proxy"),
    ("/api/v1/namespaces/x/configmaps", "configmaps in namespace x"),
    ("/api/v1/nodes", "nodes"),
    ("/api/v1/nodes/n1/status", "nodes n1/status"),
    ("/api/v1/namespaces/kube-system", "namespaces kube-system"),
    ("/apis/projectcalico.org/v3", "API projectcalico.org/v3"),
    ("/apis/crd.projectcalico.org/v1/hostendpoints?limit=500", "hostendpoints.crd.projectcalico.org"),
])
def test_describe_path(path, what):
    assert errors.describe_path(path) == what


def test_kubeconfig_errors_never_show_its_path():
    exc = ConfigException("Invalid kube-config file. Expected key current-context in /home/me/.kube/prod-config")
    msg = errors.failure_message(exc, what="configmaps x/y")
    assert "/home/me" not in msg and "prod-config" not in msg
    assert msg.startswith("configmaps x/y: cannot load the Kubernetes configuration (Invalid kube-config file. "
                          "Expected key current-context in <path>)")
    assert "<path>" in errors.scrub_paths("cannot open ~/.kube/config") and "~/.kube" not in errors.scrub_paths(
        "cannot open ~/.kube/config")


def test_any_other_exception_is_one_line_with_its_type():
    msg = errors.failure_message(KeyError("spec\nstatus at /etc/kubernetes/admin.conf"), prefix="merge patch: ")
    assert msg.startswith("merge patch: unexpected KeyError: ")
    assert "\n" not in msg and "/etc/kubernetes" not in msg


def test_status_counts():
    assert errors.status_counts([403, 403, 503, 0]) == "not reached x1, 403 Forbidden x2, 503 Service Unavailable x1"


def test_a_field_manager_conflict_says_what_to_do_about_it():
    exc = errors.api_error("PATCH", "/api/v1/namespaces/n/configmaps/c", 409, "Conflict",
                           json.dumps({"message": 'Apply failed with 1 conflict: conflict with "other": .data.a'}))
    assert "force_conflicts" in str(exc) and errors.ADVICE[409] not in str(exc)


# -- the module base --------------------------------------------------------------------------------------------

def test_an_uncaught_exception_fails_in_one_line_without_a_traceback():
    def work(m):
        return {}["missing"]
    result = fail_of(work, error_prefix="kube-proxy: ")
    assert result["msg"].startswith("kube-proxy: unexpected KeyError: 'missing'")


def test_a_client_error_fails_with_its_status():
    def work(m):
        raise errors.api_error("GET", "/api/v1/nodes", 403, "Forbidden", json.dumps({"message": "nodes is forbidden"}))
    result = fail_of(work)
    assert result["status"] == 403
    assert result["msg"].startswith("nodes: 403 Forbidden: nodes is forbidden (GET /api/v1/nodes); ")


def test_fail_inside_an_except_block_is_deferred_until_it_is_left():
    def work(m):
        try:
            raise ValueError("bad YAML\n  line 2")
        except ValueError as exc:
            m.fail("definition: not valid YAML: %s" % exc)
    result = fail_of(work)
    assert result["msg"] == "definition: not valid YAML: bad YAML line 2"


def test_a_client_that_cannot_be_built_names_the_subject_not_the_kubeconfig(monkeypatch):
    def boom(module, **kwargs):
        raise ConfigException("Invalid kube-config file. No configuration found in /srv/secret/kubeconfig")
    monkeypatch.setattr(Client, "from_module", classmethod(lambda cls, module, **kw: boom(module, **kw)))
    result = fail_of(lambda m: m.client(), subject=lambda p: "configmaps kube-system/x")
    assert result["msg"].startswith("configmaps kube-system/x: cannot load the Kubernetes configuration")
    assert "/srv/secret" not in result["msg"]


def test_a_stopped_api_server_at_client_build_names_the_subject(monkeypatch):
    def boom(module, **kwargs):
        raise urllib3.exceptions.MaxRetryError(urllib3.HTTPSConnectionPool("127.0.0.1", 9), "/version")
    monkeypatch.setattr(Client, "from_module", classmethod(lambda cls, module, **kw: boom(module, **kw)))
    result = fail_of(lambda m: m.client(), error_prefix="merge patch: ",
                     subject=lambda p: "daemonsets.apps kube-system/kube-proxy")
    assert result["msg"].startswith("merge patch: daemonsets.apps kube-system/kube-proxy: the API server at "
                                    "https://127.0.0.1:9 was not reached")


def test_a_calicoctl_failure_is_one_line_without_its_configuration_path():
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.datastore import (
        CalicoctlDatastore, DatastoreError)

    def run(argv, data, timeout, environ_update):
        return 1, "", ("Failed to create Calico API client: open /etc/calico/etcd-key.pem: permission denied\n"
                       "Usage: calicoctl get ...")
    with pytest.raises(DatastoreError) as err:
        CalicoctlDatastore(config="/etc/calico/calicoctl.cfg", run=run).list_host_endpoints()
    assert str(err.value) == ("calicoctl get hostendpoints -o json failed (rc=1): Failed to create Calico API client: "
                              "open <path>: permission denied Usage: calicoctl get ...")
