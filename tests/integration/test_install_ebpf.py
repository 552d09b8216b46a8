"""install_ebpf.yml / enable_ebpf.yml end to end, against the real Tigera operator.

The tests that need the operator share one kubeadm-shaped control plane of this file's own (``operator_cluster``:
the kube-proxy addon as kubeadm creates it, Service default/kubernetes backed by a node-network EndpointSlice),
where the harness runs the real operator behind its Deployment (tests/localcp/podrunner.py: the binary of the
pod's image tag, authenticated as its ServiceAccount). Their assertions are on what the operator rendered and
reported - calico-node in calico-system, FelixConfiguration bpfEnabled, TigeraStatus written by the operator's
ServiceAccount - so they fail if the operator process does nothing. Writes of the operator's ServiceAccount are
the operator's, not ours: the audit log counts only ``admin`` (the playbooks' identity) as ours.

calico-node's data plane cannot run here (it needs a kernel): kwok runs its pods Running and ready, which is all
the operator waits for.
"""

import base64
import functools
import http.server
import json
import os
import threading
import time
from pathlib import Path

import pytest
import yaml

from calico_support import wipe_operator_resources
from localcp.cluster import ControlPlane
from localcp.fixtures import Ansible, Cluster, kill_tree

pytestmark = pytest.mark.integration

TS_API = "operator.tigera.io/v1"
OPERATOR_USER = "system:serviceaccount:tigera-operator:tigera-operator"


@pytest.fixture(scope="module")
def operator_cluster():
    """A kubeadm-shaped control plane shared by this file's operator tests (the real operator runs there)."""
    cp = ControlPlane(die_with_parent=True)
    cp.start(shape="kubeadm")
    try:
        yield Cluster(cp)
    finally:
        cp.stop(remove_dir=not os.environ.get("KEEP"))


def _wipe_calico(cluster):
    """Calico's uninstall order (calico_support.wipe_operator_resources: the custom resources and calico-system gone
    while the operator runs), then the operator's namespace and what the operator left cluster-wide."""
    wipe_operator_resources(cluster, timeout=300)
    cluster.kubectl("delete", "namespace", "tigera-operator", "--ignore-not-found", "--wait=true", check=False,
                    timeout=300)
    cluster.kubectl("delete", "tigerastatuses.operator.tigera.io,imagesets.operator.tigera.io,"
                    "felixconfigurations.crd.projectcalico.org,ippools.crd.projectcalico.org,"
                    "kubecontrollersconfigurations.crd.projectcalico.org",
                    "--all", "--ignore-not-found", check=False)


def _fresh_kube_proxy(cluster):
    """kube-proxy as kubeadm left it (the previous test may have disabled it, or the operator may have)."""
    from localcp import shapes
    net = shapes.node_network(cluster.cp.state["service_octet"])
    ds = [d for d in shapes.kubeadm_objects(net["address"], cluster.cp.state["api_port"], "v1.33.13")
          if d["kind"] == "DaemonSet"]
    cluster.kubectl("delete", "daemonset", "kube-proxy", "-n", "kube-system", "--ignore-not-found", "--wait=true")
    cluster.kubectl("apply", "--server-side", "--field-manager=kubeadm", "-f", "-", input=yaml.safe_dump_all(ds))
    cluster.kubectl("rollout", "status", "daemonset/kube-proxy", "-n", "kube-system", "--timeout=120s")


@pytest.fixture
def calico_clean(operator_cluster):
    _wipe_calico(operator_cluster)
    _fresh_kube_proxy(operator_cluster)
    yield operator_cluster
    if not os.environ.get("KEEP"):
        _wipe_calico(operator_cluster)


@pytest.fixture
def op_ansible(operator_cluster, tmp_path):
    return Ansible(operator_cluster, tmp_path)


def _vars(cluster, tmp_path, **extra):
    out = {
        "ebpf_install_variant": "Calico",
        "ebpf_install_manifest_url": cluster.mirror_url,
        "ebpf_install_platform": "kubeadm",
        "ebpf_install_artifacts_dir": str(tmp_path / "artifacts"),
        "ebpf_install_timeout": 240,
        "ebpf_install_poll_interval": 3,
        "services_endpoint_host": "api.cluster.example",
        "services_endpoint_port": 6443,
        # a DNS name on a cluster switched to eBPF needs this statement (Calico issue 10683); kwok's calico-node pods
        # resolve nothing (no process behind them), so stating it here changes nothing else
        "services_endpoint_nodes_resolve_host": True,
        "preflight_report_dir": str(tmp_path / "report"),
    }
    out.update(extra)
    return out


def _get(cluster, *args):
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def _maybe(cluster, *args):
    proc = cluster.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def _env(container):
    return {e["name"]: e.get("value") for e in container.get("env") or []}


def _container(ds, name, init=False):
    spec = ds["spec"]["template"]["spec"]
    return next((c for c in spec.get("initContainers" if init else "containers") or [] if c["name"] == name), None)


def _ts_states(cluster):
    items = (_maybe(cluster, "tigerastatus") or {}).get("items", [])
    out = {}
    for i in items:
        conds = {c["type"]: c["status"] for c in (i.get("status") or {}).get("conditions") or []}
        out[i["metadata"]["name"]] = conds
    return out


def _operator_writes(cluster, mark, resource=None):
    return [w for w in cluster.audit.writes_since(mark, users=(OPERATOR_USER,))
            if resource is None or w["objectRef"].get("resource") == resource]


NAMES = ["apiserver", "calico", "goldmane", "whisker"]


@pytest.mark.oldest_core  # also on ansible-core 2.16 in make test (tests/integration/conftest.py)
def test_install_ebpf_configmap_path_with_the_real_operator(calico_clean, op_ansible, tmp_path):
    """The documented path: ConfigMap before the operator, the real operator renders calico-node for BPF with the
    ConfigMap's endpoint and reports TigeraStatus Available, kube-proxy kept off the nodes; a re-run and check
    mode write nothing of ours while the operator keeps running."""
    cluster = calico_clean
    mark = cluster.audit.mark()
    res = op_ansible.playbook("playbooks/install_ebpf.yml", _vars(cluster, tmp_path), callback="default")
    assert res.rc == 0, res.stdout[-5000:] + res.stderr[-2000:]
    # progress lines from the TigeraStatus wait (the operator's own words), then the summary from the cluster
    assert "tigerastatus [" in res.stdout and "calico: Available" in res.stdout
    assert "FelixConfiguration default: bpfEnabled true" in res.stdout
    assert "API server for calico-node api.cluster.example:6443" in res.stdout

    # the real operator, at the version of the Deployment's image, authenticated as its ServiceAccount
    proc = cluster.wait_for_process("tigera-operator", "v1.40.7", timeout=10)
    assert proc["namespace"] == "tigera-operator" and proc["restarts"] == 0, proc
    cm = _get(cluster, "configmap", "kubernetes-services-endpoint", "-n", "tigera-operator")
    assert cm["data"] == {"KUBERNETES_SERVICE_HOST": "api.cluster.example", "KUBERNETES_SERVICE_PORT": "6443"}
    # what the operator rendered and reported (its ServiceAccount's writes, not ours)
    node = _get(cluster, "daemonset", "calico-node", "-n", "calico-system")
    env = _env(_container(node, "calico-node"))
    assert env["KUBERNETES_SERVICE_HOST"] == "api.cluster.example" and env["KUBERNETES_SERVICE_PORT"] == "6443"
    # v1.40 renders calico-node's ebpf-bootstrap init container for BPF on both paths; only the operator path gives
    # it the API server's endpoints (from the kubernetes EndpointSlice)
    boot = _container(node, "ebpf-bootstrap", init=True)
    assert boot is not None and "KUBERNETES_APISERVER_ENDPOINTS" not in _env(boot), boot
    assert _get(cluster, "felixconfiguration", "default")["spec"]["bpfEnabled"] is True
    states = _ts_states(cluster)
    for name in NAMES:
        assert states[name] == {"Available": "True", "Progressing": "False", "Degraded": "False"}, states
    assert _get(cluster, "installation", "default")["status"]["calicoVersion"] == "v3.31.4"
    assert _operator_writes(cluster, mark, "daemonsets"), "the operator wrote no DaemonSet"
    assert _operator_writes(cluster, mark, "tigerastatuses"), "the operator reported no TigeraStatus"
    ds = _get(cluster, "daemonset", "kube-proxy", "-n", "kube-system")
    assert ds["spec"]["template"]["spec"]["nodeSelector"]["non-calico"] == "true"
    assert ds["status"]["desiredNumberScheduled"] == 0

    # the ConfigMap was written before the operator Deployment
    order = [(w["objectRef"].get("resource"), w["objectRef"].get("name")) for w in cluster.audit.writes_since(mark)]
    assert order.index(("configmaps", "kubernetes-services-endpoint")) < order.index(("deployments", "tigera-operator"))

    # second run: nothing changes, nothing of ours is written (the operator keeps reconciling)
    mark = cluster.audit.mark()
    again = op_ansible.playbook("playbooks/install_ebpf.yml", _vars(cluster, tmp_path))
    assert again.rc == 0, again.stdout[-3000:]
    assert again.changed() == 0, [t["task"] for t in again.tasks if t["result"].get("changed")]
    assert cluster.audit.writes_since(mark) == []

    # check mode: nothing written
    mark = cluster.audit.mark()
    check = op_ansible.playbook("playbooks/install_ebpf.yml", _vars(cluster, tmp_path), check=True, diff=True)
    assert check.rc == 0, check.stdout[-3000:]
    assert cluster.audit.writes_since(mark) == []


def test_operator_path_needs_the_kubernetes_endpoint_slice(cluster, ansible, tmp_path):
    """The shared control plane has no EndpointSlice for Service default/kubernetes (like a cluster whose API
    server reconciler is off): refused before any write, naming why."""
    mark = cluster.audit.mark()
    res = ansible.playbook("playbooks/install_ebpf.yml", _vars(cluster, tmp_path, ebpf_install_bootstrap="operator"),
                           callback="default")
    assert res.rc != 0 and "has no EndpointSlice with a ready address" in res.stdout, res.stdout[-3000:]
    assert cluster.audit.writes_since(mark) == []


# Where install_ebpf.yml is killed, in order: the endpoint ConfigMap written (before the operator), the first
# operator CRD written (the CRD apply cut short), the operator Deployment written, Installation default created.
INTERRUPTIONS = [("configmaps", "kubernetes-services-endpoint"), ("customresourcedefinitions", None),
                 ("deployments", "tigera-operator"), ("installations", "default")]


def _kill_at_write(cluster, proc, mark, resource, name, timeout=300):
    """SIGKILL the playbook's whole process tree as soon as the audit log shows a write of ``resource``
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
                    kill_tree(proc)
                    return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    kill_tree(proc)
    raise AssertionError("no write of %s %s within %ss" % (resource, name, timeout))


def test_a_rerun_after_an_interruption_at_each_step_finishes_the_install(calico_clean, op_ansible, tmp_path):
    """install_ebpf.yml killed (SIGKILL, the whole process group) right after each step's first write, one run
    after another; then one more run finishes the job: the same end state as an uninterrupted install, with the
    real operator reporting it Available."""
    cluster = calico_clean
    # the operator's CRDs gone (an earlier test installed them), so the CRD step writes and can be cut
    tigera_crds = [c["metadata"]["name"] for c in _get(cluster, "crd")["items"]
                   if c["metadata"]["name"].endswith(".operator.tigera.io")]
    if tigera_crds:
        cluster.kubectl("delete", "crd", "--wait=true", *tigera_crds, timeout=300)
    variables = _vars(cluster, tmp_path)
    for resource, name in INTERRUPTIONS:
        mark = cluster.audit.mark()
        proc = op_ansible.start("playbooks/install_ebpf.yml", extra_vars=variables)
        assert _kill_at_write(cluster, proc, mark, resource, name), \
            "install_ebpf.yml ended before it wrote %s %s" % (resource, name)
    assert _get(cluster, "daemonset", "kube-proxy", "-n", "kube-system")["spec"]["template"]["spec"][
        "nodeSelector"].get("non-calico") is None, "the last interruption came after kube-proxy was disabled"
    res = op_ansible.playbook("playbooks/install_ebpf.yml", variables)
    assert res.rc == 0, res.stdout[-4000:] + res.stderr[-2000:]
    cm = _get(cluster, "configmap", "kubernetes-services-endpoint", "-n", "tigera-operator")
    assert cm["data"] == {"KUBERNETES_SERVICE_HOST": "api.cluster.example", "KUBERNETES_SERVICE_PORT": "6443"}
    operator_crds = [d["metadata"]["name"] for d in yaml.safe_load_all(
        (tmp_path / "artifacts" / "operator-crds.yaml").read_text()) if d and d.get("kind") == "CustomResourceDefinition"]
    established = set(c["metadata"]["name"] for c in _get(cluster, "crd")["items"]
                      if any(x["type"] == "Established" and x["status"] == "True" for x in c["status"]["conditions"]))
    assert set(operator_crds) <= established, sorted(set(operator_crds) - established)
    inst = _get(cluster, "installation", "default")
    assert inst["spec"]["calicoNetwork"]["linuxDataplane"] == "BPF" and inst["spec"]["variant"] == "Calico"
    assert _ts_states(cluster)["calico"]["Available"] == "True"
    env = _env(_container(_get(cluster, "daemonset", "calico-node", "-n", "calico-system"), "calico-node"))
    assert env["KUBERNETES_SERVICE_HOST"] == "api.cluster.example"
    ds = _get(cluster, "daemonset", "kube-proxy", "-n", "kube-system")
    assert ds["spec"]["template"]["spec"]["nodeSelector"]["non-calico"] == "true"
    assert ds["status"]["desiredNumberScheduled"] == 0
    mark = cluster.audit.mark()
    again = op_ansible.playbook("playbooks/install_ebpf.yml", variables)
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


def test_enterprise_variant_keeps_other_documents_and_hides_the_pull_secret(calico_clean, op_ansible, tmp_path,
                                                                            enterprise_site):
    """The enterprise variant with the real operator. The operator is real, Calico Enterprise is not here (no
    licence, no Tigera registry): the test asserts what the operator reports about that and that the play quotes
    it, and that the pull secret reaches the cluster and never the output or the artifacts."""
    cluster = calico_clean
    url, docs = enterprise_site
    secret_value = "s3cr3t-" + base64.b32encode(str(time.time()).encode()).decode().strip("=")
    dockerconfig = json.dumps({"auths": {"quay.io": {"auth": base64.b64encode(f"u:{secret_value}".encode()).decode()}}})
    res = op_ansible.playbook("playbooks/install_ebpf.yml",
                              _vars(cluster, tmp_path, ebpf_install_variant="TigeraSecureEnterprise",
                                    ebpf_install_downloads_url=url, ebpf_install_pull_secret=dockerconfig,
                                    ebpf_install_goldmane=False, ebpf_install_whisker=False,
                                    ebpf_install_disable_kube_proxy=False, ebpf_install_timeout=45),
                              callback="default", extra_args=["-vvv"])
    for text in (res.stdout, res.stderr, (tmp_path / "artifacts" / "custom-resources.ebpf.yaml").read_text()):
        assert secret_value not in text
        assert base64.b64encode(dockerconfig.encode()).decode() not in text
    # Calico Enterprise cannot come up here (no licence, no Tigera registry; this test's ImageSet lists one image):
    # the real operator reports it Degraded, and the play fails quoting the operator's own words
    assert res.rc != 0, res.stdout[-4000:]
    assert "TigeraStatus not Available after 45s" in res.stdout
    degraded = [(i["metadata"]["name"], c.get("message") or "")
                for i in (_maybe(cluster, "tigerastatus") or {}).get("items", [])
                for c in (i.get("status") or {}).get("conditions") or []
                if c["type"] == "Degraded" and c["status"] == "True"]
    assert degraded, "the real operator reported nothing Degraded for the enterprise variant"
    # what the play's last poll saw, component by component; the operator may degrade more components after it
    failure = [ln for ln in res.stdout.splitlines() if "TigeraStatus not Available after 45s: " in ln][-1]
    quoted = {seg.split(":", 1)[0].strip(): seg
              for seg in failure.split("TigeraStatus not Available after 45s: ", 1)[1].split("; ")}
    assert any("Degraded=True" in seg for seg in quoted.values()), failure
    for name, message in degraded:
        seg = quoted.get(name) or quoted.get("not reported by the operator yet") or ""
        if "Degraded=True" in seg:
            assert message[:60] in seg, (name, message, seg)  # the operator's own words
        else:  # degraded only after the play's last poll: the play still named it as not ready (or not there)
            assert (name + ": Available=") in seg or name in seg, (name, message, failure)
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


def test_enable_ebpf_refuses_without_an_installation(cluster, ansible, tmp_path):
    mark = cluster.audit.mark()
    res = ansible.playbook("playbooks/enable_ebpf.yml", _vars(cluster, tmp_path), callback="default")
    assert res.rc != 0 and "install_ebpf.yml" in res.stdout
    assert cluster.audit.writes_since(mark) == []
