"""The modules' two ways to the API server (k8s/transport.py) against the real one: the lean transport for what a
kubeconfig states outright (here: the local control plane's client certificate data and CA data), kubernetes.core's
own client for the rest (here: impersonation), and for everything when ``CALICO_OPS_K8S_CLIENT=kubernetes.core`` is in
the modules' environment (the one switch, for an environment where the lean transport misbehaves). The same job gives
the same result and the same requests either way; the audit log tells them apart by User-Agent."""

import pytest
import yaml

pytestmark = pytest.mark.integration

LEAN = "calico-ops/"
KUBERNETES_CORE = "OpenAPI-Generator/"


def play(namespace, name, **auth):
    task = dict({"api_version": "v1", "resource": "configmaps", "namespace": namespace, "name": name,
                 "patch": {"data": {"k": "v"}}}, **auth)
    return yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "patch", "calico_ops.lifecycle.merge_patch": task, "register": "out"}]}])


def requests_of(cluster, mark, namespace, name):
    """(verb, User-Agent product, impersonated user) of each request on the ConfigMap, in order."""
    return [(e["verb"] + ("(dry run)" if "dryRun=" in e["requestURI"] else ""),
             e.get("userAgent", "").split("/")[0] + "/", (e.get("impersonatedUser") or {}).get("username"))
            for e in cluster.audit.events_since(mark)
            if (e.get("objectRef") or {}).get("namespace") == namespace and (e.get("objectRef") or {}).get("name") == name]


def run_twice(cluster, ansible, namespace, name, env=None, **auth):
    cluster.kubectl("create", "configmap", name, "-n", namespace, "--from-literal=k=old")
    mark = cluster.audit.mark()
    first = ansible.playbook(play(namespace, name, **auth), env=env)
    assert first.rc == 0 and first.result_of("patch")["changed"] is True, first.stdout[-2000:]
    again = ansible.playbook(play(namespace, name, **auth), env=env)
    assert again.rc == 0 and again.result_of("patch")["changed"] is False, again.stdout[-2000:]
    seen = requests_of(cluster, mark, namespace, name)
    assert cluster.kubectl("get", "configmap", name, "-n", namespace, "-o", "jsonpath={.data.k}").stdout == "v"
    return seen


def test_the_same_job_the_same_requests_through_either_transport(cluster, namespace, ansible):
    lean = run_twice(cluster, ansible, namespace, "lean")
    handed_over = run_twice(cluster, ansible, namespace, "handed-over", impersonate_user="admin",
                           impersonate_groups=["system:masters"])
    assert lean and [r[0] for r in lean] == [r[0] for r in handed_over], (lean, handed_over)
    assert any(r[0] == "patch" for r in lean), lean  # the write itself, not only dry runs
    assert set((r[1], r[2]) for r in lean) == {(LEAN, None)}, lean
    assert set((r[1], r[2]) for r in handed_over) == {(KUBERNETES_CORE, "admin")}, handed_over


def test_the_switch_sends_the_same_job_through_kubernetes_core_client(cluster, namespace, ansible):
    """CALICO_OPS_K8S_CLIENT=kubernetes.core: the same job, with the same options as the lean run (a kubeconfig the
    lean transport reads), goes through kubernetes.core's client: the same requests in the same order, the same
    result; ``lean`` (the default, said outright) keeps the lean transport."""
    switched = run_twice(cluster, ansible, namespace, "switched", env={"CALICO_OPS_K8S_CLIENT": "kubernetes.core"})
    lean = run_twice(cluster, ansible, namespace, "said-lean", env={"CALICO_OPS_K8S_CLIENT": "lean"})
    assert switched and [r[0] for r in switched] == [r[0] for r in lean], (switched, lean)
    assert any(r[0] == "patch" for r in switched), switched
    assert set((r[1], r[2]) for r in switched) == {(KUBERNETES_CORE, None)}, switched
    assert set((r[1], r[2]) for r in lean) == {(LEAN, None)}, lean


def test_a_bad_switch_value_fails_naming_it_before_any_request(cluster, namespace, ansible):
    cluster.kubectl("create", "configmap", "bad-switch", "-n", namespace, "--from-literal=k=old")
    mark = cluster.audit.mark()
    out = ansible.playbook(play(namespace, "bad-switch"), env={"CALICO_OPS_K8S_CLIENT": "urllib3"})
    assert out.rc != 0
    msg = out.result_of("patch")["msg"]
    assert msg == "CALICO_OPS_K8S_CLIENT is 'urllib3': choose one of lean, kubernetes.core (unset means lean)", msg
    assert requests_of(cluster, mark, namespace, "bad-switch") == []
    assert "Traceback" not in out.stdout, out.stdout[-2000:]


def test_a_refused_token_is_one_line_through_the_lean_transport(cluster, namespace, ansible, tmp_path):
    kubeconfig = yaml.safe_load(open(cluster.env["K8S_AUTH_KUBECONFIG"]))
    user = kubeconfig["users"][0]["user"]
    user.clear()
    user["token"] = "not-a-valid-token"
    bad = tmp_path / "bad-token.kubeconfig"
    bad.write_text(yaml.safe_dump(kubeconfig))
    out = ansible.playbook(play(namespace, "cm"), env={"K8S_AUTH_KUBECONFIG": str(bad)})
    assert out.rc != 0
    msg = out.result_of("patch")["msg"]
    assert "401 Unauthorized" in msg and "\n" not in msg, msg
    assert "not-a-valid-token" not in out.stdout + out.stderr and "Traceback" not in out.stdout, out.stdout[-2000:]
