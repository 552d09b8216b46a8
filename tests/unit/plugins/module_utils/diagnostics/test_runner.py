"""diagnostics/runner.py (module diagnostics_archive): what the archive holds, read with one LIST per kind and
namespace and one GET per container log; what could not be read written down instead of failing; credentials
redacted; the archive 0600, written atomically; bad input refused before any request."""

import json
import os
import stat
import tarfile

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.diagnostics import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.diagnostics.runner import DiagnosticsError, run_diagnostics
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.redact import MARKER

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import client, standard_api


JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"


def cluster():
    dyn = standard_api()
    dyn.add_type("v1", "nodes", "Node", namespaced=False)
    dyn.add_type("apps/v1", "daemonsets", "DaemonSet")
    dyn.add_type("operator.tigera.io/v1", "installations", "Installation", namespaced=False)
    dyn.add_type("operator.tigera.io/v1", "tigerastatuses", "TigeraStatus", namespaced=False)
    dyn.add_type("crd.projectcalico.org/v1", "felixconfigurations", "FelixConfiguration", namespaced=False)
    dyn.add_type("crd.projectcalico.org/v1", "ippools", "IPPool", namespaced=False)
    dyn.put("operator.tigera.io/v1", "installations", {"metadata": {"name": "default"},
                                                       "spec": {"calicoNetwork": {"linuxDataplane": "BPF"}}})
    dyn.put("crd.projectcalico.org/v1", "felixconfigurations",
            {"metadata": {"name": "default"}, "spec": {"bpfEnabled": True}})
    dyn.put("v1", "configmaps", {"metadata": {"name": "kubernetes-services-endpoint", "namespace": "tigera-operator"},
                                 "data": {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}})
    dyn.put("v1", "configmaps", {"metadata": {"name": "owner-references", "namespace": "calico-ops",
                                              "labels": {rules.RECORD_LABEL: "owner-references"}},
                                 "data": {"record.json": "{}"}})
    dyn.put("v1", "nodes", {"metadata": {"name": "node-1", "labels": {"a": "b"}, "annotations": {"big": "x" * 100}},
                            "spec": {"podCIDR": "10.244.0.0/24"},
                            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                       "nodeInfo": {"kernelVersion": "6.1.0", "kubeletVersion": "v1.33.13"},
                                       "images": [{"names": ["quay.io/calico/node:v3.31.4"]}]}})
    dyn.put("v1", "pods", {"metadata": {"name": "calico-node-a", "namespace": "calico-system"},
                           "spec": {"initContainers": [{"name": "install-cni"}],
                                    "containers": [{"name": "calico-node", "env": [
                                        {"name": "KUBERNETES_SERVICE_HOST", "value": "10.0.0.1"},
                                        {"name": "CALICO_API_TOKEN", "value": "plain-credential-value"},
                                        {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "s",
                                                                                               "key": "k"}}}]}]}})
    dyn.put("v1", "pods", {"metadata": {"name": "tigera-operator-x", "namespace": "tigera-operator"},
                           "spec": {"containers": [{"name": "tigera-operator"}]}})
    dyn.put("v1", "events", {"metadata": {"name": "e1", "namespace": "calico-system"}, "reason": "Started",
                             "lastTimestamp": "2026-11-28T10:00:00Z"})
    dyn.put("v1", "secrets", {"metadata": {"name": "pull", "namespace": "tigera-operator"}, "type": "Opaque",
                              "data": {"k": "c2VjcmV0"}})
    dyn.logs[("calico-system", "calico-node-a", "calico-node")] = "".join(
        "line %d\n" % i for i in range(1, 11)) + "Authorization: Bearer %s\n" % JWT
    dyn.logs[("tigera-operator", "tigera-operator-x", "tigera-operator")] = "operator started\n"
    return dyn


def read_archive(path):
    with tarfile.open(path) as tar:
        return dict((m.name, tar.extractfile(m).read().decode()) for m in tar.getmembers() if m.isfile())


def test_the_archive_holds_what_support_asks_for(tmp_path):
    dyn = cluster()
    path = str(tmp_path / "out" / "diag.tar.gz")
    out = run_diagnostics(client(dyn), path, ["calico-system", "tigera-operator"], log_lines=5, workers=4,
                          job="enable_ebpf", reason="Wait for calico-node: not rolled out")
    assert out["written"] and out["changed"] and out["path"] == path
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    files = read_archive(path)
    top = "diag/"
    assert all(name.startswith(top) for name in files)
    files = dict((name[len(top):], text) for name, text in files.items())
    installations = json.loads(files["objects/installations.json"])
    assert installations["items"][0]["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"
    assert json.loads(files["objects/felixconfigurations.json"])["items"][0]["spec"] == {"bpfEnabled": True}
    assert json.loads(files["objects/services-endpoint-configmap.json"])["items"][0]["data"] == {
        "KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    assert [r["metadata"]["name"] for r in json.loads(files["objects/records.json"])["items"]] == ["owner-references"]
    # a type the cluster does not serve is said, not failed
    apiservers = json.loads(files["objects/apiservers.json"])
    assert apiservers["served"] is False and apiservers["items"] == []
    assert any("APIServer" in p and "not served" in p for p in out["problems"])
    # nodes: conditions and nodeInfo, not the images or annotations
    node = json.loads(files["nodes.json"])[0]
    assert node["conditions"] == [{"type": "Ready", "status": "True"}] and node["nodeInfo"]["kernelVersion"] == "6.1.0"
    assert "images" not in files["nodes.json"] and "x" * 100 not in files["nodes.json"]
    # pods and events per namespace; the last 5 lines of each container's log
    pods = json.loads(files["namespaces/calico-system/pods.json"])
    assert [p["metadata"]["name"] for p in pods] == ["calico-node-a"]
    assert json.loads(files["namespaces/calico-system/events.json"])[0]["reason"] == "Started"
    log = files["namespaces/calico-system/logs/calico-node-a/calico-node.log"]
    assert log.splitlines()[:4] == ["line 7", "line 8", "line 9", "line 10"]
    assert files["namespaces/tigera-operator/logs/tigera-operator-x/tigera-operator.log"] == "operator started\n"
    # an init container with no log: a line in its place and in the problems
    assert files["namespaces/calico-system/logs/calico-node-a/install-cni.log"].startswith("no log: HTTP 400")
    assert any("install-cni" in p for p in out["problems"])
    summary = json.loads(files["summary.json"])
    assert summary["job"] == "enable_ebpf" and "not rolled out" in summary["reason"]
    assert summary["counts"]["pods"] == {"calico-system": 1, "tigera-operator": 1}
    assert out["objects"]["installations"] == 1 and out["logs"] == 3
    assert out["lines"][0].startswith("Diagnostics archive %s" % path)


def test_no_secret_is_read_and_credentials_are_redacted(tmp_path):
    dyn = cluster()
    path = str(tmp_path / "diag.tgz")
    run_diagnostics(client(dyn), path, ["calico-system", "tigera-operator"],
                    redact_text=lambda text: text.replace("10.0.0.1", MARKER) if text else text)
    assert not [p for m, p, _q in dyn.log if "/secrets" in p]
    text = "".join(read_archive(path).values())
    assert "plain-credential-value" not in text and JWT not in text and "c2VjcmV0" not in text
    assert "secretKeyRef" in text  # a reference names a Secret, it holds nothing
    assert "10.0.0.1" not in text  # the module's own secret values, in every file


def test_one_list_per_kind_and_namespace_and_one_get_per_log(tmp_path):
    dyn = cluster()
    run_diagnostics(client(dyn), str(tmp_path / "d.tar.gz"), ["calico-system", "tigera-operator"], workers=1)
    gets = [p for m, p, _q in dyn.log if m == "GET"]
    assert sum(1 for p in gets if p == "/api/v1/namespaces/calico-system/pods") == 1
    assert sum(1 for p in gets if p.endswith("/log")) == 3
    assert sum(1 for p in gets if p == "/api/v1/nodes") == 1
    assert dyn.writes() == []


def test_check_mode_reads_and_writes_nothing(tmp_path):
    dyn = cluster()
    path = tmp_path / "d.tar.gz"
    out = run_diagnostics(client(dyn, check_mode=True), str(path), ["calico-system"], check_mode=True)
    assert not path.exists() and out["written"] is False and out["changed"] is False
    assert "summary.json" in out["members"]


def test_a_forbidden_namespace_is_noted_and_the_archive_written(tmp_path):
    dyn = cluster()
    dyn.list_failing["v1/events"] = (403, "Forbidden")
    out = run_diagnostics(client(dyn), str(tmp_path / "d.tar.gz"), ["calico-system"])
    assert out["written"] and any(p.startswith("events of calico-system") and "403" in p for p in out["problems"])


@pytest.mark.parametrize("kwargs, needle", [
    ({"log_lines": -1}, "diagnostics_log_lines: 0 (no logs) to 100000"),
    ({"namespaces": []}, "diagnostics_namespaces: a list of namespace names"),
    ({"path": "diag.zip"}, "diagnostics_path: diag.zip must end in .tar.gz"),
    ({"workers": 0}, "diagnostics_workers: 1 or more"),
])
def test_bad_input_is_refused_before_any_request(tmp_path, kwargs, needle):
    dyn = cluster()
    args = dict(path=str(tmp_path / "d.tar.gz"), namespaces=["calico-system"], log_lines=10, workers=2)
    args.update(kwargs)
    with pytest.raises(DiagnosticsError) as err:
        run_diagnostics(client(dyn), prefix="diagnostics_", **args)
    assert needle in str(err.value) and "nothing was collected" in str(err.value)
    assert dyn.log == []


def test_a_path_that_cannot_be_written_is_refused_before_any_request(tmp_path):
    dyn = cluster()
    (tmp_path / "taken.tar.gz").mkdir()
    with pytest.raises(DiagnosticsError) as err:
        run_diagnostics(client(dyn), str(tmp_path / "taken.tar.gz"), ["calico-system"], prefix="diagnostics_")
    assert "diagnostics_path: %s is a directory, not a file for the archive" % (tmp_path / "taken.tar.gz") in str(
        err.value)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(DiagnosticsError) as err:
        run_diagnostics(client(dyn), str(blocker / "sub" / "d.tar.gz"), ["calico-system"], prefix="diagnostics_")
    assert "is not a directory" in str(err.value)
    assert dyn.log == []


def test_a_failed_write_leaves_no_partial_archive(tmp_path, monkeypatch):
    dyn = cluster()
    path = tmp_path / "d.tar.gz"
    path.write_bytes(b"the archive of before")

    def boom(*_a, **_k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        run_diagnostics(client(dyn), str(path), ["calico-system"])
    assert path.read_bytes() == b"the archive of before"
    assert [p.name for p in tmp_path.iterdir()] == ["d.tar.gz"]
