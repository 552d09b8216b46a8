"""The local control plane is a real one: real CRD schemas, server-side apply, controllers, GC, audit, RBAC.

Each test here can fail: it checks behaviour that a fake API server would not have.
"""

import json
import ssl
import urllib.error
import urllib.request

import pytest
import yaml

from localcp.versions import KUBERNETES_VERSION

pytestmark = pytest.mark.integration


def _get(cluster, path, token=None):
    ctx = ssl.create_default_context(cafile=str(cluster.run_dir / "pki" / "ca.crt"))
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    else:
        ctx.load_cert_chain(str(cluster.run_dir / "pki" / "admin.crt"), str(cluster.run_dir / "pki" / "admin.key"))
    req = urllib.request.Request(cluster.server + path, headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_version_is_stamped(cluster):
    status, body = _get(cluster, "/version")
    assert status == 200
    assert body["gitVersion"] == KUBERNETES_VERSION
    assert body["minor"] == KUBERNETES_VERSION.split(".")[1]


def test_nodes_are_kwok_nodes_shaped_by_spec(cluster):
    nodes = {n.metadata.name: n for n in cluster.k8s.resources.get(api_version="v1", kind="Node").get().items}
    for name in ("node-1", "node-2", "node-3"):
        node = nodes[name]
        assert node.status.nodeInfo.osImage.startswith("Ubuntu 22.04")
        assert node.status.nodeInfo.kernelVersion == "5.15.0-105-generic"
        ready = [c for c in node.status.conditions if c.type == "Ready"]
        assert ready and ready[0].status == "True"


def test_operator_manifests_apply_server_side_and_crd_schema_rejects_bad_dataplane(cluster):
    base = f"{cluster.mirror_url}/v3.31.4/manifests"
    cluster.apply(f"{base}/operator-crds.yaml")
    cluster.apply(f"{base}/tigera-operator.yaml")
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                    "crd/installations.operator.tigera.io")
    deploy = cluster.kubectl("get", "deployment", "tigera-operator", "-n", "tigera-operator", "-o", "json")
    image = json.loads(deploy.stdout)["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.endswith("operator:v1.40.7")
    # the harness runs the real operator of that tag behind the Deployment (gone again with it: the shared
    # control plane is left without an operator for the tests after this one)
    proc = cluster.wait_for_process("tigera-operator", "v1.40.7", timeout=120)
    assert proc["namespace"] == "tigera-operator" and proc["binary"].endswith("tigera-operator-v1.40.7/operator")
    cluster.kubectl("delete", "-f", f"{base}/tigera-operator.yaml", "--ignore-not-found", "--wait=true", timeout=180)
    cluster.wait_for(lambda: not cluster.processes("tigera-operator"), timeout=60, what="the operator process gone")
    bad = {"apiVersion": "operator.tigera.io/v1", "kind": "Installation",
           "metadata": {"name": "schema-check"}, "spec": {"calicoNetwork": {"linuxDataplane": "Foo"}}}
    proc = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", input=yaml.safe_dump(bad),
                           check=False)
    assert proc.returncode != 0
    assert "linuxDataplane" in proc.stderr and "Foo" in proc.stderr
    good = dict(bad, spec={"calicoNetwork": {"linuxDataplane": "BPF"}})
    ok = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", input=yaml.safe_dump(good),
                         check=False)
    assert ok.returncode == 0, ok.stderr


def test_operator_crds_exceed_client_side_apply_annotation(cluster):
    """operator-crds.yaml must be applied server-side: client-side apply hits the annotation limit."""
    proc = cluster.kubectl("apply", "--dry-run=server", "-f",
                           f"{cluster.mirror_url}/v3.31.4/manifests/operator-crds.yaml", check=False)
    assert proc.returncode != 0
    assert "Too long" in proc.stderr or "262144" in proc.stderr


def test_daemonset_becomes_available_on_kwok_nodes(cluster, namespace):
    ds = {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "probe", "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": "probe"}},
                 "template": {"metadata": {"labels": {"app": "probe"}},
                              "spec": {"containers": [{"name": "c", "image": "example.invalid/probe:1"}],
                                       "tolerations": [{"operator": "Exists"}]}}},
    }
    cluster.apply(yaml.safe_dump(ds))
    cluster.kubectl("rollout", "status", "daemonset/probe", "-n", namespace, "--timeout=120s")
    pods = json.loads(cluster.kubectl("get", "pods", "-n", namespace, "-l", "app=probe", "-o", "json").stdout)
    assert len(pods["items"]) == 3
    for pod in pods["items"]:
        assert pod["spec"]["nodeName"] in {"node-1", "node-2", "node-3"}
        assert pod["status"]["phase"] == "Running"
        assert all(cs["ready"] for cs in pod["status"]["containerStatuses"])


def test_garbage_collector_deletes_dependents(cluster, namespace):
    owner = json.loads(cluster.kubectl("create", "configmap", "owner", "-n", namespace, "-o", "json").stdout)
    dep = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "dependent", "namespace": namespace,
                        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                             "uid": owner["metadata"]["uid"]}]}}
    cluster.apply(yaml.safe_dump(dep))
    cluster.kubectl("delete", "configmap", "owner", "-n", namespace)
    cluster.wait_for(lambda: cluster.kubectl("get", "configmap", "dependent", "-n", namespace,
                                             check=False).returncode != 0,
                     timeout=90, what="the garbage collector to delete the dependent")


def test_audit_log_records_writes_and_reads_only_when_reading(cluster, namespace):
    audit = cluster.audit
    mark = audit.mark()
    cluster.kubectl("create", "configmap", "audited", "-n", namespace, "--from-literal=a=b")
    cluster.kubectl("label", "configmap", "audited", "-n", namespace, "x=y")
    writes = audit.writes_since(mark)
    verbs = [(w["verb"], w["objectRef"]["resource"], w["objectRef"].get("name")) for w in writes]
    assert ("create", "configmaps", None) in verbs or ("create", "configmaps", "audited") in verbs
    assert ("patch", "configmaps", "audited") in verbs
    mark = audit.mark()
    cluster.kubectl("get", "configmaps", "-n", namespace)
    cluster.kubectl("get", "configmap", "audited", "-n", namespace, "-o", "yaml")
    assert audit.writes_since(mark) == []
    reads = audit.reads_since(mark)
    assert {r["verb"] for r in reads} >= {"list", "get"}


def test_server_side_dry_run_is_not_counted_as_a_write(cluster, namespace):
    audit = cluster.audit
    mark = audit.mark()
    cluster.kubectl("create", "configmap", "dry", "-n", namespace, "--dry-run=server")
    assert audit.writes_since(mark) == []
    assert len(audit.writes_since(mark, include_dry_run=True)) == 1


def test_rbac_denies_outside_a_narrow_role(cluster, namespace):
    cluster.kubectl("create", "serviceaccount", "narrow", "-n", namespace)
    cluster.kubectl("create", "role", "read-cm", "-n", namespace, "--verb=get,list", "--resource=configmaps")
    cluster.kubectl("create", "rolebinding", "read-cm", "-n", namespace, "--role=read-cm",
                    f"--serviceaccount={namespace}:narrow")
    token = cluster.kubectl("create", "token", "narrow", "-n", namespace).stdout.strip()
    status, _ = _get(cluster, f"/api/v1/namespaces/{namespace}/configmaps", token=token)
    assert status == 200
    status, body = _get(cluster, f"/api/v1/namespaces/{namespace}/secrets", token=token)
    assert status == 403, body
    status, _ = _get(cluster, "/api/v1/nodes", token=token)
    assert status == 403
    status, _ = _get(cluster, f"/api/v1/namespaces/{namespace}/configmaps", token="not-a-token")
    assert status == 401


def test_release_mirror_serves_manifests_and_chart_repo(cluster):
    with urllib.request.urlopen(f"{cluster.chart_repo_url}/index.yaml", timeout=10) as resp:
        index = yaml.safe_load(resp.read())
    versions = {e["version"] for e in index["entries"]["tigera-operator"]}
    assert {"v3.27.5", "v3.29.7", "v3.31.4"} <= versions
    with urllib.request.urlopen(f"{cluster.mirror_url}/v3.27.5/manifests/calico.yaml", timeout=10) as resp:
        assert b"calico-node" in resp.read()


def test_the_sweeper_deletes_a_release_files_objects_and_waits_until_they_are_gone(cluster, namespace):
    """localcp.sweep, what the tests' cleanups take objects down with: the REST path of a manifest's object from
    discovery (namespaced or not), one DELETE each, then a metadata GET until none is left; a type nobody serves is
    an answer (None), not an error; every request carries the tests' own User-Agent."""
    from localcp import sweep

    docs = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "swept", "namespace": namespace}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": namespace + "-swept", "finalizers": ["calico-ops.io/test-hold"]}}]
    cluster.apply(yaml.safe_dump_all(docs))
    api = sweep.of(cluster)
    assert sweep.of(cluster) is api
    paths = [api.path_of(d) for d in docs]
    assert paths == ["/api/v1/namespaces/%s/configmaps/swept" % namespace,
                     "/apis/rbac.authorization.k8s.io/v1/clusterroles/%s-swept" % namespace]
    assert api.path_of({"apiVersion": "nothing.calico-ops.io/v1", "kind": "Thing", "metadata": {"name": "x"}}) is None
    assert api.items("/apis/nothing.calico-ops.io/v1/things") is None
    mark = cluster.audit.mark()
    assert all(api.delete(p) for p in paths)
    # the ClusterRole's finalizer holds it: still there after the wait, named; gone once the finalizer is dropped
    assert api.wait_gone(paths, timeout=2) == paths[1:]
    assert api.get(paths[1], metadata=True)["kind"] == "PartialObjectMetadata"
    assert api.drop_finalizers(paths[1])
    assert api.wait_gone(paths, timeout=30) == []
    assert api.delete(paths[0]) is False and api.get(paths[0]) is None
    writes = cluster.audit.writes_since(mark)
    assert [(w["verb"], w["objectRef"]["resource"]) for w in writes] == [
        ("delete", "configmaps"), ("delete", "clusterroles"), ("patch", "clusterroles"), ("delete", "configmaps")]
    assert {w.get("userAgent") for w in writes} == {sweep.AGENT}
