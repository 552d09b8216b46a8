"""k8s/errors.py, the one error mapper: one line naming the object, the status and reason, the API's message only,
what to do; never a traceback, a local credentials path, a response body or the objects it quotes."""

import base64
import json

import pytest
from kubernetes.config import ConfigException

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import errors


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


def b64(text):
    return base64.b64encode(text.encode()).decode()


def test_the_error_mapper_redacts_the_objects_an_api_error_quotes():
    """The one error mapper (k8s/errors.py, used by the client for every failed request) keeps the API's message
    only, with the Secret it quotes redacted."""
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import api_error
    obj = {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s"}, "data": {"k": b64("planted-value-x")}}
    body = json.dumps({"kind": "Status", "message": "Secret \"s\" is invalid: patch: Invalid value: %s: bad"
                       % json.dumps(json.dumps(obj))})
    err = api_error("PATCH", "/api/v1/namespaces/n/secrets/s", 422, "Unprocessable Entity", body.encode())
    assert b64("planted-value-x") not in str(err) and b64("planted-value-x") not in (err.api_message or "")
    assert "planted-value-x" not in str(err)
    assert err.status == 422 and "422 Unprocessable Entity: Secret" in str(err) and "secrets n/s" in str(err), str(err)
