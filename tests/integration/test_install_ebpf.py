"""install_ebpf.yml / enable_ebpf.yml end to end on the local control plane.

No real Tigera operator runs here (its Go module is not available from the module proxy this project
builds from), so the tests that need TigeraStatus use ``operator_status_writer``: a thread that writes
TigeraStatus objects the way the operator does (Progressing, then Available - or Degraded), once the
Installation exists. Everything else is the real thing: real CRD schemas, server-side apply, the operator
Deployment run by kwok, the audit log.
"""

import base64
import functools
import http.server
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import yaml

from localcp.fixtures import Ansible

pytestmark = pytest.mark.integration

TS_API = "operator.tigera.io/v1"


def _ts_body(name, state, reason="", message=""):
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conds = {"Available": "False", "Progressing": "False", "Degraded": "False"}
    conds[state] = "True"
    return {"apiVersion": TS_API, "kind": "TigeraStatus", "metadata": {"name": name},
            "status": {"conditions": [{"type": t, "status": s, "reason": reason if s == "True" else "",
                                       "message": message if s == "True" else "", "lastTransitionTime": now}
                                      for t, s in conds.items()]}}


class OperatorStatusWriter(threading.Thread):
    """Plays the operator's TigeraStatus reporting (not the operator): Progressing first, then the final
    state, for each name, once Installation default exists."""

    def __init__(self, cluster, names, final="Available", final_reason="AllObjectsAvailable",
                 final_message="All objects are available", delay=4):
        super().__init__(daemon=True)
        self.cluster, self.names, self.final, self.delay = cluster, names, final, delay
        self.final_reason, self.final_message = final_reason, final_message
        self.stop = threading.Event()

    def _set(self, name, state, reason, message):
        body = _ts_body(name, state, reason, message)
        if self.cluster.kubectl("get", "tigerastatus", name, check=False).returncode != 0:
            self.cluster.apply(yaml.safe_dump({"apiVersion": TS_API, "kind": "TigeraStatus",
                                               "metadata": {"name": name}}))
        self.cluster.kubectl("patch", "tigerastatus", name, "--subresource=status", "--type=merge",
                             "-p", json.dumps({"status": body["status"]}))

    def run(self):
        while not self.stop.is_set():
            if self.cluster.kubectl("get", "installation", "default", check=False).returncode == 0:
                break
            time.sleep(0.5)
        if self.stop.is_set():
            return
        for n in self.names:
            self._set(n, "Progressing", "ResourceNotReady", f'DaemonSet "calico-system/calico-node" is not available ({n})')
        self.stop.wait(self.delay)
        for n in self.names:
            self._set(n, self.final, self.final_reason, self.final_message)


@pytest.fixture
def kube_proxy_ds(cluster):
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": {"k8s-app": "kube-proxy"}},
          "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
                   "template": {"metadata": {"labels": {"k8s-app": "kube-proxy"}},
                                "spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                                         "tolerations": [{"operator": "Exists"}],
                                         "containers": [{"name": "kube-proxy", "image": "registry.k8s.io/kube-proxy:v1.33.13"}]}}}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-proxy", "namespace": "kube-system"},
          "data": {"config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\n"}}
    cluster.apply(yaml.safe_dump_all([cm, ds]))
    cluster.kubectl("rollout", "status", "daemonset/kube-proxy", "-n", "kube-system", "--timeout=120s")
    yield
    cluster.kubectl("delete", "daemonset,configmap", "kube-proxy", "-n", "kube-system", "--ignore-not-found", check=False)


@pytest.fixture
def clean_calico(cluster):
    """Installation default and TigeraStatus objects are cluster-scoped singletons: start and end clean."""
    def wipe():
        cluster.kubectl("delete", "installations.operator.tigera.io,apiservers.operator.tigera.io,"
                        "goldmanes.operator.tigera.io,whiskers.operator.tigera.io,tigerastatuses.operator.tigera.io",
                        "--all", "--ignore-not-found", "--wait=true", check=False)
        cluster.kubectl("delete", "namespace", "tigera-operator", "--ignore-not-found", "--wait=true", check=False,
                        timeout=180)
    wipe()
    yield
    if not os.environ.get('KEEP'):
        wipe()


def _vars(cluster, tmp_path, **extra):
    out = {
        "ebpf_install_variant": "Calico",
        "ebpf_install_manifest_url": cluster.mirror_url,
        "ebpf_install_platform": "kubeadm",
        "ebpf_install_artifacts_dir": str(tmp_path / "artifacts"),
        "ebpf_install_timeout": 60,
        "ebpf_install_poll_interval": 2,
        "services_endpoint_host": "api.cluster.example",
        "services_endpoint_port": 6443,
        "preflight_report_dir": str(tmp_path / "report"),
    }
    out.update(extra)
    return out


def _get(cluster, *args):
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


NAMES = ["apiserver", "calico", "goldmane", "whisker"]


def test_install_ebpf_open_source_end_to_end(cluster, ansible, tmp_path, kube_proxy_ds, clean_calico):
    writer = OperatorStatusWriter(cluster, NAMES)
    writer.start()
    mark = cluster.audit.mark()
    res = ansible.playbook("playbooks/install_ebpf.yml", _vars(cluster, tmp_path), callback="default")
    writer.stop.set()
    assert res.rc == 0, res.stdout[-4000:] + res.stderr[-2000:]
    # progress lines from the TigeraStatus wait, then the summary
    assert "tigerastatus [" in res.stdout and "calico: Progressing (ResourceNotReady:" in res.stdout
    assert "calico: Available" in res.stdout

    cm = _get(cluster, "configmap", "kubernetes-services-endpoint", "-n", "tigera-operator")
    assert cm["data"] == {"KUBERNETES_SERVICE_HOST": "api.cluster.example", "KUBERNETES_SERVICE_PORT": "6443"}
    crd = _get(cluster, "crd", "installations.operator.tigera.io")
    assert any(c["type"] == "Established" and c["status"] == "True" for c in crd["status"]["conditions"])
    deploy = _get(cluster, "deployment", "tigera-operator", "-n", "tigera-operator")
    assert any(c["type"] == "Available" and c["status"] == "True" for c in deploy["status"]["conditions"])
    inst = _get(cluster, "installation", "default")
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"
    assert inst["spec"]["variant"] == "Calico"
    assert "flexVolumePath" not in inst["spec"]
    ds = _get(cluster, "daemonset", "kube-proxy", "-n", "kube-system")
    assert ds["spec"]["template"]["spec"]["nodeSelector"]["non-calico"] == "true"
    assert ds["status"]["desiredNumberScheduled"] == 0
    assert (tmp_path / "artifacts" / "custom-resources.ebpf.yaml").exists()

    # the ConfigMap was written before the operator Deployment
    writes = cluster.audit.writes_since(mark)
    order = [(w["objectRef"].get("resource"), w["objectRef"].get("name")) for w in writes]
    cm_at = next(i for i, o in enumerate(order) if o == ("configmaps", "kubernetes-services-endpoint"))
    op_at = next(i for i, o in enumerate(order) if o == ("deployments", "tigera-operator"))
    assert cm_at < op_at, order

    # second run: nothing changes, nothing is written
    mark = cluster.audit.mark()
    again = ansible.playbook("playbooks/install_ebpf.yml", _vars(cluster, tmp_path))
    assert again.rc == 0, again.stdout[-3000:]
    assert again.changed() == 0, [t["task"] for t in again.tasks if t["result"].get("changed")]
    assert cluster.audit.writes_since(mark) == []

    # check mode: nothing written
    mark = cluster.audit.mark()
    check = ansible.playbook("playbooks/install_ebpf.yml", _vars(cluster, tmp_path), check=True, diff=True)
    assert check.rc == 0, check.stdout[-3000:]
    assert cluster.audit.writes_since(mark) == []


# Where install_ebpf.yml is killed, in order: the endpoint ConfigMap written (before the operator), the first
# operator CRD written (the CRD apply cut short), the operator Deployment written, Installation default created.
INTERRUPTIONS = [("configmaps", "kubernetes-services-endpoint"), ("customresourcedefinitions", None),
                 ("deployments", "tigera-operator"), ("installations", "default")]


def _kill_at_write(cluster, proc, mark, resource, name, timeout=300):
    """SIGKILL the playbook's whole process group as soon as the audit log shows a write of ``resource``
    (named ``name``, any name if None) by the admin user; True when it was killed there, False when the run
    ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(cluster.audit.path, "rb") as log:
            log.seek(mark)
            for raw in log:
                try:
                    ev = json.loads(raw)
                except ValueError:
                    continue
                ref = ev.get("objectRef") or {}
                if (ev.get("verb") in ("create", "update", "patch") and "dryRun=" not in ev.get("requestURI", "")
                        and (ev.get("user") or {}).get("username") == "admin" and ref.get("resource") == resource
                        and name in (None, ref.get("name"))):
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=60)
                    return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError("no write of %s %s within %ss" % (resource, name, timeout))


def test_a_rerun_after_an_interruption_at_each_step_finishes_the_install(cluster, ansible, tmp_path, kube_proxy_ds,
                                                                         clean_calico):
    """install_ebpf.yml killed (SIGKILL, the whole process group) right after each step's first write, one run
    after another; then one more run finishes the job: the same end state as an uninterrupted install."""
    # the operator's CRDs gone (an earlier test may have installed them), so the CRD step writes and can be cut
    tigera_crds = [c["metadata"]["name"] for c in _get(cluster, "crd")["items"]
                   if c["metadata"]["name"].endswith(".operator.tigera.io")]
    if tigera_crds:
        cluster.kubectl("delete", "crd", "--wait=true", *tigera_crds, timeout=300)
    writer = OperatorStatusWriter(cluster, NAMES, delay=1)
    writer.start()
    variables = _vars(cluster, tmp_path)
    try:
        for resource, name in INTERRUPTIONS:
            mark = cluster.audit.mark()
            proc = ansible.start("playbooks/install_ebpf.yml", extra_vars=variables)
            assert _kill_at_write(cluster, proc, mark, resource, name), \
                "install_ebpf.yml ended before it wrote %s %s" % (resource, name)
        assert _get(cluster, "daemonset", "kube-proxy", "-n", "kube-system")["spec"]["template"]["spec"][
            "nodeSelector"].get("non-calico") is None, "the last interruption came after kube-proxy was disabled"
        res = ansible.playbook("playbooks/install_ebpf.yml", variables)
    finally:
        writer.stop.set()
    assert res.rc == 0, res.stdout[-4000:] + res.stderr[-2000:]
    cm = _get(cluster, "configmap", "kubernetes-services-endpoint", "-n", "tigera-operator")
    assert cm["data"] == {"KUBERNETES_SERVICE_HOST": "api.cluster.example", "KUBERNETES_SERVICE_PORT": "6443"}
    operator_crds = [d["metadata"]["name"] for d in yaml.safe_load_all(
        (tmp_path / "artifacts" / "operator-crds.yaml").read_text()) if d and d.get("kind") == "CustomResourceDefinition"]
    established = set(c["metadata"]["name"] for c in _get(cluster, "crd")["items"]
                      if any(x["type"] == "Established" and x["status"] == "True" for x in c["status"]["conditions"]))
    assert set(operator_crds) <= established, sorted(set(operator_crds) - established)
    deploy = _get(cluster, "deployment", "tigera-operator", "-n", "tigera-operator")
    assert any(c["type"] == "Available" and c["status"] == "True" for c in deploy["status"]["conditions"])
    inst = _get(cluster, "installation", "default")
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF" and inst["spec"]["variant"] == "Calico"
    ds = _get(cluster, "daemonset", "kube-proxy", "-n", "kube-system")
    assert ds["spec"]["template"]["spec"]["nodeSelector"]["non-calico"] == "true"
    assert ds["status"]["desiredNumberScheduled"] == 0
    mark = cluster.audit.mark()
    again = ansible.playbook("playbooks/install_ebpf.yml", variables)
    assert again.rc == 0 and again.changed() == 0, [t["task"] for t in again.tasks if t["result"].get("changed")]
    assert cluster.audit.writes_since(mark) == []


def test_check_mode_on_a_cluster_without_calico_writes_nothing_and_does_not_wait(pristine_cluster, tmp_path):
    """On a cluster where nothing of Calico exists yet, --check plans every step (the Installation's type is not
    served, since check mode created no CRD) without waiting out ebpf_install_timeout, and writes nothing."""
    runner = Ansible(pristine_cluster, tmp_path)
    mark = pristine_cluster.audit.mark()
    res = runner.playbook("playbooks/install_ebpf.yml", _vars(pristine_cluster, tmp_path, ebpf_install_timeout=900),
                          check=True, diff=True, timeout=400)
    assert res.rc == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert pristine_cluster.audit.writes_since(mark) == []
    assert "check mode: Installation default would be created" in json.dumps(res.data)
    assert pristine_cluster.kubectl("get", "crd", "installations.operator.tigera.io", check=False).returncode != 0


def test_install_fails_quoting_a_degraded_component(cluster, ansible, tmp_path, clean_calico):
    writer = OperatorStatusWriter(cluster, ["calico"], final="Degraded", final_reason="ResourceDegraded",
                                  final_message="calico-node pods are crash-looping on node-2", delay=1)
    writer.start()
    res = ansible.playbook("playbooks/install_ebpf.yml",
                           _vars(cluster, tmp_path, ebpf_install_timeout=30, ebpf_install_disable_kube_proxy=False,
                                 ebpf_install_tigerastatus_expected=["calico"]),
                           callback="default")
    writer.stop.set()
    assert res.rc != 0
    assert "TigeraStatus not Available after 30s" in res.stdout
    assert "calico: Available=False Progressing=False Degraded=True (ResourceDegraded: calico-node pods are crash-looping on node-2)" in res.stdout


@pytest.fixture
def enterprise_site(cluster, tmp_path):
    """A stand-in for {downloads_url}/ee/v3.22.2/manifests/ (not public): the open-source operator files and a
    custom-resources.yaml shaped like the enterprise one, served on 127.0.0.1."""
    docs = [
        {"apiVersion": TS_API, "kind": "Installation", "metadata": {"name": "default"},
         "spec": {"variant": "TigeraSecureEnterprise", "imagePullSecrets": [{"name": "tigera-pull-secret"}],
                  "calicoNetwork": {"ipPools": [{"name": "default-ipv4-ippool", "cidr": "192.168.0.0/16"}]}}},
        {"apiVersion": TS_API, "kind": "APIServer", "metadata": {"name": "default"}, "spec": {}},
        {"apiVersion": TS_API, "kind": "ImageSet", "metadata": {"name": "enterprise-v3.22.2"},
         "spec": {"images": [{"image": "tigera/operator", "digest": "sha256:" + "a" * 64}]}},
    ]
    site = tmp_path / "site"
    folder = site / "ee" / "v3.22.2" / "manifests"
    folder.mkdir(parents=True)
    source = Path(cluster.cp.state["mirror_source"]) / "v3.31.4" / "manifests"
    for name in ("operator-crds.yaml", "tigera-operator.yaml"):
        (folder / name).write_bytes((source / name).read_bytes())
    text = "# Calico Enterprise custom resources (test copy)\n" + "\n---\n".join(
        "# document %d\n" % i + yaml.safe_dump(d, sort_keys=False) for i, d in enumerate(docs))
    (folder / "custom-resources.yaml").write_text(text)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", docs
    server.shutdown()


def test_enterprise_variant_keeps_other_documents_and_hides_the_pull_secret(cluster, ansible, tmp_path, clean_calico,
                                                                            enterprise_site):
    url, docs = enterprise_site
    secret_value = "s3cr3t-" + base64.b32encode(str(time.time()).encode()).decode().strip("=")
    dockerconfig = json.dumps({"auths": {"quay.io": {"auth": base64.b64encode(f"u:{secret_value}".encode()).decode()}}})
    writer = OperatorStatusWriter(cluster, ["apiserver", "calico"], delay=1)
    writer.start()
    res = ansible.playbook("playbooks/install_ebpf.yml",
                           _vars(cluster, tmp_path, ebpf_install_variant="TigeraSecureEnterprise",
                                 ebpf_install_downloads_url=url, ebpf_install_pull_secret=dockerconfig,
                                 ebpf_install_goldmane=False, ebpf_install_whisker=False,
                                 ebpf_install_disable_kube_proxy=False),
                           callback="default", extra_args=["-vvv"])
    writer.stop.set()
    assert res.rc == 0, res.stdout[-4000:]
    for text in (res.stdout, res.stderr, (tmp_path / "artifacts" / "custom-resources.ebpf.yaml").read_text()):
        assert secret_value not in text
        assert base64.b64encode(dockerconfig.encode()).decode() not in text
    secret = _get(cluster, "secret", "tigera-pull-secret", "-n", "tigera-operator")
    assert secret["type"] == "kubernetes.io/dockerconfigjson"
    assert base64.b64decode(secret["data"][".dockerconfigjson"]).decode() == dockerconfig
    inst = _get(cluster, "installation", "default")
    assert inst["spec"]["variant"] == "TigeraSecureEnterprise"
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"
    assert inst["spec"]["imagePullSecrets"] == [{"name": "tigera-pull-secret"}]
    assert _get(cluster, "apiserver", "default")["spec"] == docs[1]["spec"]
    assert _get(cluster, "imageset", "enterprise-v3.22.2")["spec"] == docs[2]["spec"]
    edited = (tmp_path / "artifacts" / "custom-resources.ebpf.yaml").read_text()
    assert "# document 1\n" + yaml.safe_dump(docs[1], sort_keys=False) in edited


def test_missing_pull_secret_for_enterprise_fails_before_any_write(cluster, ansible, tmp_path):
    mark = cluster.audit.mark()
    res = ansible.playbook("playbooks/install_ebpf.yml",
                           _vars(cluster, tmp_path, ebpf_install_variant="TigeraSecureEnterprise"), callback="default")
    assert res.rc != 0
    assert "ebpf_install_pull_secret_file / ebpf_install_pull_secret" in res.stdout
    assert cluster.audit.writes_since(mark) == []


@pytest.mark.parametrize("var,value,needle", [
    ("ebpf_install_variant", "Calicoo", "ebpf_install_variant"),
    ("ebpf_install_calico_version", "3.31", "ebpf_install_calico_version"),
    ("ebpf_install_manifest_url", "ftp://example.org", "ebpf_install_manifest_url"),
    ("ebpf_install_timeout", 0, "ebpf_install_timeout"),
])
def test_bad_input_fails_before_any_write(cluster, ansible, tmp_path, var, value, needle):
    mark = cluster.audit.mark()
    res = ansible.playbook("playbooks/install_ebpf.yml", _vars(cluster, tmp_path, **{var: value}), callback="default")
    assert res.rc != 0
    assert needle in res.stdout
    assert cluster.audit.writes_since(mark) == []


def test_eks_bottlerocket_sets_flex_volume_path_and_others_do_not(cluster, ansible, tmp_path):
    """Check mode: the edited Installation is returned without writing (EKS+Bottlerocket vs kubeadm)."""
    for platform, bottlerocket, expected in (("eks", "true", "/var/lib/kubelet/plugins"), ("kubeadm", "auto", None)):
        res = ansible.playbook("playbooks/install_ebpf.yml",
                               _vars(cluster, tmp_path, ebpf_install_platform=platform,
                                     ebpf_install_bottlerocket=bottlerocket, ebpf_install_run_preflight=False,
                                     ebpf_install_disable_kube_proxy=False),
                               check=True)
        edited = res.result_of("Edit the Installation for the eBPF data plane (kept as an artifact for review)")
        assert edited["installation"]["spec"].get("flexVolumePath") == expected, platform


def test_enable_ebpf_patches_an_existing_installation(cluster, ansible, tmp_path, clean_calico):
    base = f"{cluster.mirror_url}/v3.31.4/manifests"
    cluster.apply(f"{base}/operator-crds.yaml")
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/installations.operator.tigera.io")
    cluster.apply(yaml.safe_dump({"apiVersion": TS_API, "kind": "Installation", "metadata": {"name": "default"},
                                  "spec": {"calicoNetwork": {"linuxDataplane": "Iptables", "hostPorts": "Enabled"}}}))
    for name in ("calico",):
        OperatorStatusWriter(cluster, [name], delay=0).run()
    v = _vars(cluster, tmp_path, ebpf_install_disable_kube_proxy=False, ebpf_install_tigerastatus_expected=["calico"])
    # check mode first: the Installation's diff is shown, nothing is written
    mark = cluster.audit.mark()
    preview = ansible.playbook("playbooks/enable_ebpf.yml", v, check=True, diff=True, callback="default")
    assert preview.rc == 0, preview.stdout[-3000:]
    assert cluster.audit.writes_since(mark) == []
    diff_lines = [line.replace(" ", "") for line in preview.stdout.splitlines()]
    assert '-"linuxDataplane":"Iptables"' in diff_lines and '+"linuxDataplane":"BPF"' in diff_lines, preview.stdout[-3000:]
    assert '-"hostPorts":"Enabled",' in diff_lines, preview.stdout[-3000:]
    assert _get(cluster, "installation", "default")["spec"]["calicoNetwork"]["linuxDataplane"] == "Iptables"
    res = ansible.playbook("playbooks/enable_ebpf.yml", v)
    assert res.rc == 0, res.stdout[-3000:]
    inst = _get(cluster, "installation", "default")
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF"
    assert "hostPorts" not in inst["spec"]["calicoNetwork"]
    mark = cluster.audit.mark()
    again = ansible.playbook("playbooks/enable_ebpf.yml", v)
    assert again.rc == 0 and again.changed() == 0
    check = ansible.playbook("playbooks/enable_ebpf.yml", v, check=True)
    assert check.rc == 0
    assert cluster.audit.writes_since(mark) == []


def test_enable_ebpf_refuses_without_an_installation(cluster, ansible, tmp_path, clean_calico):
    mark = cluster.audit.mark()
    res = ansible.playbook("playbooks/enable_ebpf.yml", _vars(cluster, tmp_path), callback="default")
    assert res.rc != 0 and "install_ebpf.yml" in res.stdout
    assert cluster.audit.writes_since(mark) == []
