"""docs/rbac.yml on the local control plane: a ServiceAccount bound only to the roles the file names for a job runs
that job's playbook with a bearer token (K8S_AUTH_HOST / K8S_AUTH_API_KEY / K8S_AUTH_SSL_CA_CERT, as the AWX
credential type injects them), and is refused what the job does not need."""

import base64
import json
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import pytest
import yaml

from calico_support import remove_operator_install, wipe_calico

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RBAC = yaml.safe_load((ROOT / "docs" / "rbac.yml").read_text())["items"]  # one List
BINDINGS = ("ClusterRoleBinding", "RoleBinding")
# the roles docs/rbac.yml says each job needs (its header table), as (kind, name, namespace)
JOBS = {
    "preflight": [("ClusterRole", "calico-ops-preflight", None), ("Role", "calico-ops-preflight", "kube-system"),
                  ("Role", "calico-ops-preflight", "tigera-operator")],
    "install": [("ClusterRole", "calico-ops-preflight", None), ("Role", "calico-ops-preflight", "kube-system"),
                ("Role", "calico-ops-preflight", "tigera-operator"),
                ("ClusterRole", "calico-ops-install", None), ("Role", "calico-ops-install", "tigera-operator"),
                ("ClusterRole", "calico-ops-kube-proxy", None), ("Role", "calico-ops-kube-proxy", "kube-system")],
    "owner-references": [("ClusterRole", "calico-ops-owner-references", None),
                         ("Role", "calico-ops-records", "kube-system"),
                         ("ClusterRole", "calico-ops-cluster-identity", None)],
    "migrate-host-endpoints": [("ClusterRole", "calico-ops-host-endpoints", None),
                               ("Role", "calico-ops-records", "kube-system"),
                               ("ClusterRole", "calico-ops-cluster-identity", None)],
    "upgrade": [("ClusterRole", "calico-ops-upgrade", None), ("Role", "calico-ops-upgrade", "kube-system"),
                ("Role", "calico-ops-upgrade", "tigera-operator"), ("ClusterRole", "calico-ops-owner-references", None),
                ("Role", "calico-ops-records", "kube-system"), ("ClusterRole", "calico-ops-cluster-identity", None)],
    "diagnostics": [("ClusterRole", "calico-ops-diagnostics", None)],
}


def roles_of_the_file():
    return {(d["kind"], d["metadata"]["name"], d["metadata"].get("namespace")) for d in RBAC
            if d["kind"] in ("ClusterRole", "Role")}


def test_every_role_is_bound_to_the_service_account_and_every_binding_names_a_role_of_the_file():
    assert yaml.safe_load((ROOT / "docs" / "rbac.yml").read_text())["kind"] == "List"
    roles = roles_of_the_file()
    bound = set()
    for d in RBAC:
        if d["kind"] not in BINDINGS:
            continue
        ref = d["roleRef"]
        key = (ref["kind"], ref["name"], d["metadata"].get("namespace") if ref["kind"] == "Role" else None)
        assert key in roles, key
        assert d["subjects"] == [{"kind": "ServiceAccount", "name": "calico-ops", "namespace": "calico-ops"}]
        bound.add(key)
    assert bound == roles
    for job in JOBS.values():
        assert set(job) <= roles


@pytest.fixture
def service_account(cluster, tmp_path):
    """make(job): docs/rbac.yml's roles (not its bindings) applied, and a new ServiceAccount bound to the roles
    the job needs; returns (environment with its token and no kubeconfig, user name)."""
    made = []

    def make(job):
        # the namespace calico-ops of an earlier test may still be terminating
        cluster.wait_for(lambda: cluster.kubectl("get", "namespace", "calico-ops", "-o", "jsonpath={.status.phase}",
                                                 check=False).stdout != "Terminating",
                         timeout=180, interval=1, what="the namespace calico-ops of an earlier test to go")
        cluster.apply(yaml.safe_dump_all([d for d in RBAC if d["kind"] not in BINDINGS]))
        name = "rbac-%s-%s" % (job, uuid.uuid4().hex[:5])
        docs = [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "calico-ops"}}]
        for kind, role, ns in JOBS[job]:
            docs.append({"apiVersion": "rbac.authorization.k8s.io/v1",
                         "kind": "RoleBinding" if ns else "ClusterRoleBinding",
                         "metadata": dict({"name": "%s-%s" % (name, role)}, **({"namespace": ns} if ns else {})),
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
                         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "calico-ops"}]})
        made.extend(docs)
        cluster.apply(yaml.safe_dump_all(docs))
        token = cluster.kubectl("-n", "calico-ops", "create", "token", name, "--duration=30m").stdout.strip()
        kubeconfig = yaml.safe_load(Path(cluster.kubeconfig).read_text())
        ca = tmp_path / "ca.crt"
        ca.write_bytes(base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]))
        env = dict(cluster.env)
        for key in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG", "K8S_AUTH_CONTEXT"):
            env.pop(key, None)  # only the token authenticates
        env.update({"K8S_AUTH_HOST": cluster.server, "K8S_AUTH_API_KEY": token, "K8S_AUTH_SSL_CA_CERT": str(ca),
                    "HOME": str(tmp_path), "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCALHOST_WARNING": "0"})
        return env, "system:serviceaccount:calico-ops:%s" % name

    yield make
    for d in reversed(made):
        args = ["delete", d["kind"].lower(), d["metadata"]["name"], "--ignore-not-found"]
        if d["metadata"].get("namespace"):
            args += ["-n", d["metadata"]["namespace"]]
        cluster.kubectl(*args, check=False)
    if made:
        for d in RBAC:
            if d["kind"] in ("ClusterRole", "Role") or (d["kind"] == "Namespace" and d["metadata"]["name"] == "calico-ops"):
                args = ["delete", d["kind"].lower(), d["metadata"]["name"], "--ignore-not-found", "--wait=false"]
                if d["metadata"].get("namespace"):
                    args += ["-n", d["metadata"]["namespace"]]
                cluster.kubectl(*args, check=False)


def can_i(cluster, user, *args):
    proc = cluster.kubectl("auth", "can-i", *args, "--as", user, check=False)
    return proc.stdout.strip() == "yes"


def token_run(playbook, env, tmp_path, args=(), **extra):
    """ansible-playbook with the token's environment only (the fixture's runner adds the cluster's kubeconfig);
    ``args``: more command-line arguments (``-vvv``)."""
    extra.setdefault("preflight_report_dir", str(tmp_path / "report"))
    (tmp_path / "vars.json").write_text(json.dumps(extra))
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), str(ROOT / playbook), "-i",
                           str(ROOT / "inventories" / "local" / "hosts.yml"), "-e", "@%s" % (tmp_path / "vars.json"),
                           *args],
                          env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=900, check=False)


def test_preflight_runs_with_the_preflight_roles_only(cluster, service_account, tmp_path):
    env, user = service_account("preflight")
    res = token_run("playbooks/preflight.yml", env, tmp_path)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    report = json.loads((tmp_path / "report" / "ebpf-preflight.json").read_text())
    assert len(report["nodes"]) >= 3 and report["eligible"] is True
    # read-only: no write anywhere, no Secrets
    assert not can_i(cluster, user, "create", "configmaps", "-n", "kube-system")
    assert not can_i(cluster, user, "patch", "daemonsets/kube-proxy", "-n", "kube-system")
    assert not can_i(cluster, user, "list", "secrets", "-A")


@pytest.fixture
def calico_and_kube_proxy(cluster):
    wipe_calico(cluster)
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": {"k8s-app": "kube-proxy"}},
          "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
                   "template": {"metadata": {"labels": {"k8s-app": "kube-proxy"}},
                                "spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                                         "tolerations": [{"operator": "Exists"}],
                                         "containers": [{"name": "kube-proxy",
                                                         "image": "registry.k8s.io/kube-proxy:v1.33.13"}]}}}}
    cluster.apply(yaml.safe_dump(ds))
    cluster.kubectl("rollout", "status", "daemonset/kube-proxy", "-n", "kube-system", "--timeout=120s")
    yield
    remove_operator_install(cluster)
    cluster.kubectl("delete", "daemonset", "kube-proxy", "-n", "kube-system", "--ignore-not-found", check=False)


def test_install_ebpf_runs_with_the_install_roles_only(cluster, calico_and_kube_proxy, service_account, tmp_path):
    env, user = service_account("install")
    res = token_run("playbooks/install_ebpf.yml", env, tmp_path, ebpf_install_variant="Calico",
                    ebpf_install_manifest_url=cluster.mirror_url, ebpf_install_platform="kubeadm",
                    ebpf_install_artifacts_dir=str(tmp_path / "artifacts"), ebpf_install_wait=False,
                    ebpf_install_timeout=120, ebpf_install_poll_interval=5, services_endpoint_allow_loopback=True,
                    kube_proxy_timeout=120, kube_proxy_poll_interval=5)
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    inst = json.loads(cluster.kubectl("get", "installation", "default", "-o", "json").stdout)
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"
    ds = json.loads(cluster.kubectl("get", "daemonset", "kube-proxy", "-n", "kube-system", "-o", "json").stdout)
    assert ds["spec"]["template"]["spec"]["nodeSelector"]["non-calico"] == "true"
    # and nothing beyond: other roles cannot be escalated or bound, no Secrets outside the operator's namespace,
    # no other DaemonSet, no node writes
    assert can_i(cluster, user, "escalate", "clusterroles/tigera-operator")
    assert not can_i(cluster, user, "escalate", "clusterroles/cluster-admin")
    assert not can_i(cluster, user, "bind", "clusterroles/cluster-admin")
    assert not can_i(cluster, user, "get", "secrets", "-n", "kube-system")
    assert not can_i(cluster, user, "patch", "daemonsets/calico-node", "-n", "kube-system")
    assert not can_i(cluster, user, "patch", "nodes")
    assert not can_i(cluster, user, "delete", "customresourcedefinitions")

    # collect_diagnostics on what the install left, with calico-ops-diagnostics alone: every read it makes is granted
    # (the archive lists nothing forbidden), it reads no Secret and may write nothing
    env, user = service_account("diagnostics")
    res = token_run("playbooks/collect_diagnostics.yml", env, tmp_path,
                    diagnostics_path=str(tmp_path / "diag" / "rbac.tar.gz"), diagnostics_log_lines=20)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    with tarfile.open(tmp_path / "diag" / "rbac.tar.gz") as tar:
        summary = json.loads(tar.extractfile("rbac/summary.json").read())
    assert not [p for p in summary["problems"] if "forbidden" in p.lower() or "403" in p], summary["problems"]
    assert summary["counts"]["objects"]["installations"] == 1 and summary["counts"]["pods"]["tigera-operator"] >= 1
    assert summary["counts"]["logs"] >= 1
    for verb in ("get", "list"):
        assert not can_i(cluster, user, verb, "secrets", "-n", "tigera-operator")
    for verb, what in (("create", "configmaps"), ("patch", "daemonsets/kube-proxy"), ("delete", "pods")):
        assert not can_i(cluster, user, verb, what, "-n", "kube-system")
