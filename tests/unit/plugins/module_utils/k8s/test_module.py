"""k8s/module.py, the module base: its failures are one line (never a traceback, a local credentials path or a response
body), and every way out (result, failure, warning) goes through the redactor."""

import contextlib
import json
import sys

import pytest
import urllib3
from kubernetes.config import ConfigException

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import errors, module as base
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import Client
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.redact import MARKER, Redactor
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.secrets import b64, secret


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


@contextlib.contextmanager
def _module_args(args):
    """ansible-core's ``patch_module_args`` (2.19 and later), or what it does on older releases: the module
    arguments where AnsibleModule reads them (``basic._ANSIBLE_ARGS``)."""
    try:
        from ansible.module_utils.testing import patch_module_args
    except ImportError:  # ansible-core < 2.19
        from ansible.module_utils import basic
        from ansible.module_utils.common.text.converters import to_bytes
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved
        return
    with patch_module_args(args):
        yield


def _run_module(monkeypatch, capsys, work, args):
    """Run a FileModule (the module base) with ``args``; return its JSON output."""
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import FileModule
    with _module_args(args):
        with pytest.raises(SystemExit):
            FileModule(dict(key=dict(type="str", no_log=True), name=dict(type="str"))).run(work)
    return json.loads(capsys.readouterr().out)


def test_the_module_base_redacts_results_failures_and_warnings(monkeypatch, capsys):
    from ansible.module_utils.basic import AnsibleModule
    key = "module-given-key-" + "x" * 20
    warned = []
    monkeypatch.setattr(AnsibleModule, "warn", lambda self, warning: warned.append(warning))

    def work(m):
        m.module.warn("the key %s is shown" % b64(key))
        return {"changed": False, "object": secret(), "shown": b64(key), "escaped": json.dumps(key + "\n")}
    out = _run_module(monkeypatch, capsys, work, {"key": key, "name": "n"})
    text = json.dumps(out)
    assert b64(key) not in text and key not in text and "hunter2" not in text, text
    assert out["object"]["data"] == {"k": MARKER, "empty": MARKER}
    assert warned == ["the key %s is shown" % MARKER]

    def fails(m):
        m.fail("cannot use %s" % b64(key), object=secret())
    out = _run_module(monkeypatch, capsys, fails, {"key": key, "name": "n"})
    assert out["failed"] and b64(key) not in json.dumps(out) and out["msg"] == "cannot use %s" % MARKER
    assert out["object"]["data"]["k"] == MARKER


def test_the_leak_guard_fails_when_the_redactor_does_nothing(monkeypatch, capsys):
    """The guard of the test above: with the redaction taken out, the same module run shows the values (so the
    assertions above can fail)."""
    key = "module-given-key-" + "y" * 20
    monkeypatch.setattr(Redactor, "value", lambda self, value: value)
    monkeypatch.setattr(Redactor, "text", lambda self, text: text)

    def work(m):
        return {"changed": False, "object": secret(), "shown": b64(key)}
    out = _run_module(monkeypatch, capsys, work, {"key": key, "name": "n"})
    assert out["shown"] == b64(key) and out["object"]["data"]["k"] == b64("hunter2-hunter2")
