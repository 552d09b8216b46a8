"""Role kube_proxy (and playbooks/kube_proxy.yml) on the local control plane.

kube-proxy here is a real DaemonSet in kube-system whose pods kwok runs on the kwok nodes (tolerations: all),
so the DaemonSet controller really schedules and removes pods when the nodeSelector changes. OpenShift's
Network operator config is served by a test CRD of the same group, kind and fields; AKS uses the real
FelixConfiguration CRD from Calico's v3.31.4 manifest (served by the harness's mirror); kOps uses a stand-in
``kops`` executable written by the test (a real kops needs a cloud for ``update``/``rolling-update``) that
records its arguments and keeps the cluster spec in a file.

Everything cluster-scoped a test creates is removed afterwards: the control plane is shared by the run.
"""

import contextlib
import json
import os
import stat
import textwrap
import time
import urllib.request

import pytest
import yaml
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import yaml_text

pytestmark = pytest.mark.integration

NS = "kube-system"
SELECTOR = {"non-calico": "true"}
PRE_EXISTING = {"kubernetes.io/os": "linux"}
PLAYBOOK = "playbooks/kube_proxy.yml"

KUBEADM_IPVS_CONF = textwrap.dedent("""\
    apiVersion: kubeproxy.config.k8s.io/v1alpha1
    bindAddress: 0.0.0.0
    clusterCIDR: 10.244.0.0/16
    ipvs:
      scheduler: "rr"
      strictARP: true
    kind: KubeProxyConfiguration
    mode: "ipvs"
    """)


# -- helpers ----------------------------------------------------------------------------------------------

def get_json(cluster, *args):
    proc = cluster.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def kube_proxy_pods(cluster):
    data = get_json(cluster, "pods", "-n", NS, "-l", "k8s-app=kube-proxy")
    return [p for p in data["items"] if not p["metadata"].get("deletionTimestamp")]


def linux_nodes(cluster):
    data = get_json(cluster, "nodes", "-l", "kubernetes.io/os=linux")
    return sorted(n["metadata"]["name"] for n in data["items"])


def node_selector(cluster):
    ds = get_json(cluster, "daemonset", "kube-proxy", "-n", NS)
    return ds["spec"]["template"]["spec"].get("nodeSelector") or {}


def run(ansible, check=False, diff=False, env=None, **extra):
    return ansible.playbook(PLAYBOOK, extra_vars=extra, check=check, diff=diff, env=env)


def assert_ok(res):
    assert res.rc == 0, "\n".join(failure_messages(res)) + "\n" + res.stdout[-3000:] + res.stderr[-3000:]


def assert_failed(res):
    assert res.rc != 0, res.stdout[-4000:]


def failure_messages(res):
    """The messages of failed tasks (and of the failed items of a failed loop)."""
    out = []
    for t in res.tasks:
        result = t["result"]
        if not result.get("failed"):
            continue
        out.append(str(result.get("msg", "")))
        out.extend(str(item.get("msg", "")) for item in result.get("results") or []
                   if item.get("failed") or "exception" in item)  # 2.21: a failed loop item has no "failed"
    return out


def role_task(res, suffix):
    for t in res.tasks:
        if t["task"].endswith(suffix):
            return t["result"]
    raise KeyError("no task ending with %r: %s" % (suffix, [t["task"] for t in res.tasks]))


def role_write(res, label_suffix):
    """The result of the plan's merge patch whose label ends with ``label_suffix`` (one item of the writes' loop)."""
    writes = [t["result"] for t in res.tasks if "Write what the plan says - " in t["task"]]
    for item in [i for w in writes for i in w.get("results") or []]:
        if item["item"]["label"].endswith(label_suffix):
            return item
    raise KeyError("no write labelled ...%r: %s" % (label_suffix, writes))


def debug_messages(res):
    out = []
    for t in res.tasks:
        msg = t["result"].get("msg")
        if isinstance(msg, list):
            out.extend(str(m) for m in msg)
        elif msg:
            out.append(str(msg))
    return out


def writes_by_resource(events):
    return sorted({(ev.get("objectRef") or {}).get("resource") for ev in events})


# -- fixtures --------------------------------------------------------------------------------------------------

def kube_proxy_daemonset(args=None):
    container = {"name": "kube-proxy", "image": "registry.k8s.io/kube-proxy:v1.33.13",
                 "command": ["/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf"]}
    if args:
        container["args"] = list(args)
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "kube-proxy", "namespace": NS, "labels": {"k8s-app": "kube-proxy"}},
            "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
                     "template": {"metadata": {"labels": {"k8s-app": "kube-proxy"}},
                                  "spec": {"nodeSelector": dict(PRE_EXISTING),
                                           "tolerations": [{"operator": "Exists"}],
                                           "containers": [container]}}}}


def remove_kube_proxy(cluster):
    cluster.kubectl("delete", "daemonset,configmap", "kube-proxy", "-n", NS, "--ignore-not-found", check=False)
    cluster.wait_for(lambda: not kube_proxy_pods(cluster), timeout=120, what="kube-proxy pods to go")


def create_kube_proxy(cluster, args=None):
    remove_kube_proxy(cluster)
    cluster.apply(yaml.safe_dump(kube_proxy_daemonset(args)))
    cluster.kubectl("rollout", "status", "daemonset/kube-proxy", "-n", NS, "--timeout=120s")
    expected = linux_nodes(cluster)
    assert len(expected) >= 3
    cluster.wait_for(lambda: len(kube_proxy_pods(cluster)) == len(expected), timeout=60,
                     what="a kube-proxy pod on every linux node")


@pytest.fixture
def kube_proxy_ds(cluster):
    """DaemonSet kube-system/kube-proxy (nodeSelector kubernetes.io/os: linux, tolerating everything) with a
    Running pod on every linux kwok node."""
    create_kube_proxy(cluster)
    yield
    remove_kube_proxy(cluster)


@pytest.fixture
def no_kube_proxy(cluster):
    remove_kube_proxy(cluster)
    yield


# -- kubeadm / generic: disable, enable, idempotent --------------------------------------------------------

def test_disable_then_enable_keeps_other_selectors_and_is_idempotent(cluster, ansible, kube_proxy_ds):
    nodes = linux_nodes(cluster)

    res = run(ansible, diff=True, kube_proxy_platform="kubeadm")
    assert_ok(res)
    assert res.changed() >= 1
    patch = role_write(res, "nodeSelector - kube-system/kube-proxy: add {\"non-calico\": \"true\"}")
    assert patch["changed"] is True
    assert patch["diff"]["after"]["spec"]["template"]["spec"]["nodeSelector"] == dict(PRE_EXISTING, **SELECTOR)
    assert node_selector(cluster) == dict(PRE_EXISTING, **SELECTOR)
    ds = get_json(cluster, "daemonset", "kube-proxy", "-n", NS)
    assert ds["status"]["desiredNumberScheduled"] == 0
    assert ds["status"].get("numberReady", 0) == 0
    assert kube_proxy_pods(cluster) == []

    mark = cluster.audit.mark()
    again = run(ansible, kube_proxy_platform="kubeadm")
    assert_ok(again)
    assert again.changed() == 0
    assert cluster.audit.writes_since(mark) == []

    res = run(ansible, diff=True, kube_proxy_platform="kubeadm", kube_proxy_state="enabled")
    assert_ok(res)
    assert res.changed() >= 1
    assert node_selector(cluster) == PRE_EXISTING
    ds = get_json(cluster, "daemonset", "kube-proxy", "-n", NS)
    assert ds["status"]["desiredNumberScheduled"] == len(nodes)
    assert ds["status"]["numberReady"] == len(nodes)
    assert sorted(p["spec"]["nodeName"] for p in kube_proxy_pods(cluster)) == nodes

    mark = cluster.audit.mark()
    again = run(ansible, kube_proxy_platform="kubeadm", kube_proxy_state="enabled")
    assert_ok(again)
    assert again.changed() == 0
    assert cluster.audit.writes_since(mark) == []


def test_eks_uses_the_daemonset_too(cluster, ansible, kube_proxy_ds):
    res = run(ansible, kube_proxy_platform="eks")
    assert_ok(res)
    assert node_selector(cluster) == dict(PRE_EXISTING, **SELECTOR)
    assert kube_proxy_pods(cluster) == []
    assert any("EKS add-on" in m for m in debug_messages(res))


def test_check_mode_writes_nothing_and_shows_the_patch(cluster, ansible, kube_proxy_ds):
    before = get_json(cluster, "daemonset", "kube-proxy", "-n", NS)
    mark = cluster.audit.mark()
    res = run(ansible, check=True, diff=True, kube_proxy_platform="kubeadm")
    assert_ok(res)
    # nothing persisted; what is sent is only merge_patch's server-side dry run of the nodeSelector patch (the API
    # server merges, check mode stops there), nothing else
    sent = cluster.audit.writes_since(mark, include_dry_run=True)
    assert [e for e in sent if "dryRun=All" not in e["requestURI"]] == []
    assert [(e["verb"], e["objectRef"]["resource"], e["objectRef"].get("name")) for e in sent] == [
        ("patch", "daemonsets", "kube-proxy")]
    assert res.changed() >= 1
    patch = role_write(res, "nodeSelector - kube-system/kube-proxy: add {\"non-calico\": \"true\"}")
    assert patch["diff"]["before"]["spec"]["template"]["spec"]["nodeSelector"] == PRE_EXISTING
    assert patch["diff"]["after"]["spec"]["template"]["spec"]["nodeSelector"] == dict(PRE_EXISTING, **SELECTOR)
    after = get_json(cluster, "daemonset", "kube-proxy", "-n", NS)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert len(kube_proxy_pods(cluster)) == len(linux_nodes(cluster))


def test_no_daemonset_is_already_disabled(cluster, ansible, no_kube_proxy):
    mark = cluster.audit.mark()
    res = run(ansible, kube_proxy_platform="kubeadm")
    assert_ok(res)
    assert res.changed() == 0
    assert cluster.audit.writes_since(mark) == []
    assert any("kube-proxy is already disabled" in m for m in debug_messages(res))

    res = run(ansible, kube_proxy_platform="kubeadm", kube_proxy_state="enabled")
    assert_failed(res)
    assert any("kubeadm init phase addon kube-proxy" in m for m in failure_messages(res))


def test_platform_auto_uses_the_preflight_detection(cluster, ansible, kube_proxy_ds):
    """auto: the platform is what the preflight module detects for the same cluster."""
    play = """
- name: Compare
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Preflight
      calico_ops.lifecycle.ebpf_preflight_info:
      register: pf
    - name: Kube-proxy info
      calico_ops.lifecycle.kube_proxy_info:
      register: kp
"""
    res = ansible.playbook(play)
    assert_ok(res)
    pf, kp = res.result_of("Preflight"), res.result_of("Kube-proxy info")
    assert kp["platform"]["source"] == "detected"
    assert kp["platform"]["name"] == pf["platform"]["name"]
    if kp["platform"]["name"] in ("generic", "kubeadm"):
        res = run(ansible, check=True)
        assert_ok(res)
        assert role_task(res, "Publish what was done for the roles that run after this one")[
            "ansible_facts"]["kube_proxy_result"]["platform_source"] == "detected"


# -- IPVS -------------------------------------------------------------------------------------------------------

def test_ipvs_is_refused_then_switched(cluster, ansible, kube_proxy_ds):
    cluster.apply(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "kube-proxy", "namespace": NS},
                                  "data": {"config.conf": KUBEADM_IPVS_CONF, "kubeconfig.conf": "apiVersion: v1\n"}}))

    mark = cluster.audit.mark()
    res = run(ansible, kube_proxy_platform="kubeadm")
    assert_failed(res)
    msgs = failure_messages(res)
    assert any("kube-proxy runs in IPVS mode (ConfigMap kube-system/kube-proxy config.conf)" in m
               and "kube_proxy_switch_ipvs_to_iptables: true" in m for m in msgs), msgs
    assert cluster.audit.writes_since(mark) == []
    assert node_selector(cluster) == PRE_EXISTING

    mark = cluster.audit.mark()
    res = run(ansible, kube_proxy_platform="kubeadm", kube_proxy_switch_ipvs_to_iptables=True)
    assert_ok(res)
    # the mode, the roll (template annotation), then the nodeSelector
    assert [((ev["objectRef"]["resource"], ev["objectRef"]["name"]), ev["verb"])
            for ev in cluster.audit.writes_since(mark) if ev["objectRef"]["resource"] != "pods"] == [
        (("configmaps", "kube-proxy"), "patch"), (("daemonsets", "kube-proxy"), "patch"),
        (("daemonsets", "kube-proxy"), "patch")]
    conf = get_json(cluster, "configmap", "kube-proxy", "-n", NS)["data"]["config.conf"]
    assert conf == KUBEADM_IPVS_CONF.replace('mode: "ipvs"', 'mode: "iptables"')
    ds = get_json(cluster, "daemonset", "kube-proxy", "-n", NS)
    assert "kubectl.kubernetes.io/restartedAt" in ds["spec"]["template"]["metadata"].get("annotations", {})
    rolled = role_task(res, "Wait for the DaemonSet to roll out in iptables mode")
    assert rolled is not None
    assert any("restart each node" in m for m in debug_messages(res))
    # then disabled, as asked
    assert node_selector(cluster) == dict(PRE_EXISTING, **SELECTOR)
    assert kube_proxy_pods(cluster) == []

    again = run(ansible, kube_proxy_platform="kubeadm", kube_proxy_switch_ipvs_to_iptables=True)
    assert_ok(again)
    assert again.changed() == 0


def test_ipvs_from_the_proxy_mode_flag_is_switched(cluster, ansible):
    create_kube_proxy(cluster, args=["--proxy-mode=ipvs", "--v=2"])
    try:
        res = run(ansible, kube_proxy_platform="kubeadm")
        assert_failed(res)
        assert any("DaemonSet kube-system/kube-proxy --proxy-mode" in m for m in failure_messages(res))
        res = run(ansible, kube_proxy_platform="kubeadm", kube_proxy_switch_ipvs_to_iptables=True)
        assert_ok(res)
        ds = get_json(cluster, "daemonset", "kube-proxy", "-n", NS)
        container = ds["spec"]["template"]["spec"]["containers"][0]
        assert container["args"] == ["--proxy-mode=iptables", "--v=2"]
        assert container["command"] == ["/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf"]
        assert ds["spec"]["template"]["spec"]["nodeSelector"] == dict(PRE_EXISTING, **SELECTOR)
    finally:
        remove_kube_proxy(cluster)


# -- OpenShift ----------------------------------------------------------------------------------------------------

NETWORK_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "networks.operator.openshift.io"},
    "spec": {"group": "operator.openshift.io", "scope": "Cluster",
             "names": {"plural": "networks", "singular": "network", "kind": "Network", "listKind": "NetworkList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                        "properties": {"deployKubeProxy": {"type": "boolean"},
                                                       "defaultNetwork": {"type": "object",
                                                                          "x-kubernetes-preserve-unknown-fields": True}}},
                               "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]}}


def wait_served(cluster, resource):
    cluster.wait_for(lambda: cluster.kubectl("get", resource, check=False).returncode == 0, timeout=60,
                     what=resource + " to be served")


def delete_crd(cluster, name):
    cluster.kubectl("delete", "crd", name, "--ignore-not-found", "--wait=true", "--timeout=60s", check=False)


@pytest.fixture
def openshift_network(cluster):
    cluster.apply(yaml.safe_dump(NETWORK_CRD))
    cluster.kubectl("wait", "--for=condition=Established", "crd/networks.operator.openshift.io", "--timeout=60s")
    wait_served(cluster, "networks.operator.openshift.io")
    cluster.apply(yaml.safe_dump({"apiVersion": "operator.openshift.io/v1", "kind": "Network",
                                  "metadata": {"name": "cluster"},
                                  "spec": {"deployKubeProxy": True,
                                           "defaultNetwork": {"type": "Calico"}}}))
    yield
    cluster.kubectl("delete", "networks.operator.openshift.io", "cluster", "--ignore-not-found", check=False)
    delete_crd(cluster, "networks.operator.openshift.io")


def network_spec(cluster):
    return get_json(cluster, "networks.operator.openshift.io", "cluster")["spec"]


def test_openshift_network_operator_config(cluster, ansible, openshift_network):
    res = run(ansible, diff=True, kube_proxy_platform="openshift")
    assert_ok(res)
    assert network_spec(cluster) == {"deployKubeProxy": False, "defaultNetwork": {"type": "Calico"}}
    patch = role_write(res, "spec.deployKubeProxy=false")
    assert patch["diff"]["before"] == {"spec": {"deployKubeProxy": True, "defaultNetwork": {"type": "Calico"}}}

    mark = cluster.audit.mark()
    again = run(ansible, kube_proxy_platform="openshift")
    assert_ok(again)
    assert again.changed() == 0
    assert cluster.audit.writes_since(mark) == []

    res = run(ansible, kube_proxy_platform="openshift", kube_proxy_state="enabled")
    assert_ok(res)
    assert network_spec(cluster)["deployKubeProxy"] is True


def test_openshift_is_detected_from_its_api_group(cluster, ansible, openshift_network):
    res = run(ansible, check=True)
    assert_ok(res)
    facts = role_task(res, "Publish what was done for the roles that run after this one")["ansible_facts"]
    assert facts["kube_proxy_result"]["platform"] == "openshift"
    assert facts["kube_proxy_result"]["platform_source"] == "detected"


def test_openshift_without_the_network_api_fails_plainly(cluster, ansible):
    if cluster.kubectl("get", "crd", "networks.operator.openshift.io", check=False).returncode == 0:
        pytest.skip("a Network CRD exists in this control plane")
    res = run(ansible, kube_proxy_platform="openshift")
    assert_failed(res)
    assert any("networks.operator.openshift.io 'cluster' was not found (the API is not served)" in m
               for m in failure_messages(res))


# -- AKS (FelixConfiguration from Calico's own CRD) ---------------------------------------------------------------

FELIX_CRD = "felixconfigurations.crd.projectcalico.org"


@pytest.fixture
def felix_crd(cluster):
    """The FelixConfiguration CRD exactly as Calico v3.31.4's calico.yaml ships it (server-side applied);
    removed afterwards only when this fixture created it."""
    existed = cluster.kubectl("get", "crd", FELIX_CRD, check=False).returncode == 0
    if not existed:
        with urllib.request.urlopen(cluster.mirror_url + "/v3.31.4/manifests/calico.yaml", timeout=60) as resp:
            docs = [d for d in yaml_text.load_all(resp.read()) if d]
        crds = [d for d in docs if d.get("kind") == "CustomResourceDefinition"
                and d["metadata"]["name"] == FELIX_CRD]
        assert len(crds) == 1
        cluster.apply(yaml.safe_dump(crds[0]))
        cluster.kubectl("wait", "--for=condition=Established", "crd/" + FELIX_CRD, "--timeout=60s")
    wait_served(cluster, FELIX_CRD)
    cluster.kubectl("delete", FELIX_CRD, "default", "--ignore-not-found", check=False)
    yield
    cluster.kubectl("delete", FELIX_CRD, "default", "--ignore-not-found", check=False)
    if not existed:
        delete_crd(cluster, FELIX_CRD)


def felix_default(cluster):
    return get_json(cluster, FELIX_CRD, "default")


def test_aks_sets_felix_and_leaves_the_daemonset_alone(cluster, ansible, kube_proxy_ds, felix_crd):
    ds_before = get_json(cluster, "daemonset", "kube-proxy", "-n", NS)
    mark = cluster.audit.mark()
    res = run(ansible, diff=True, kube_proxy_platform="aks")
    assert_ok(res)
    writes = cluster.audit.writes_since(mark)
    assert writes_by_resource(writes) == ["felixconfigurations"]
    assert [ev["verb"] for ev in writes] == ["create"]
    felix = felix_default(cluster)
    assert felix["apiVersion"] == "crd.projectcalico.org/v1"
    assert felix["spec"] == {"bpfKubeProxyIptablesCleanupEnabled": False}
    assert any("performance gain is lost" in m for m in debug_messages(res))
    ds_after = get_json(cluster, "daemonset", "kube-proxy", "-n", NS)
    assert ds_after["metadata"]["resourceVersion"] == ds_before["metadata"]["resourceVersion"]
    assert len(kube_proxy_pods(cluster)) == len(linux_nodes(cluster))

    mark = cluster.audit.mark()
    again = run(ansible, kube_proxy_platform="aks")
    assert_ok(again)
    assert again.changed() == 0
    assert cluster.audit.writes_since(mark) == []

    res = run(ansible, kube_proxy_platform="aks", kube_proxy_state="enabled")
    assert_ok(res)
    assert "bpfKubeProxyIptablesCleanupEnabled" not in felix_default(cluster)["spec"]


def test_aks_patches_an_existing_felix_configuration(cluster, ansible, felix_crd):
    cluster.apply(yaml.safe_dump({"apiVersion": "crd.projectcalico.org/v1", "kind": "FelixConfiguration",
                                  "metadata": {"name": "default"},
                                  "spec": {"bpfLogLevel": "", "logSeverityScreen": "Info",
                                           "bpfKubeProxyIptablesCleanupEnabled": True}}))
    mark = cluster.audit.mark()
    res = run(ansible, kube_proxy_platform="aks")
    assert_ok(res)
    assert [ev["verb"] for ev in cluster.audit.writes_since(mark)] == ["patch"]
    assert felix_default(cluster)["spec"] == {"bpfLogLevel": "", "logSeverityScreen": "Info",
                                              "bpfKubeProxyIptablesCleanupEnabled": False}


# -- kOps (stand-in CLI) ------------------------------------------------------------------------------------------------

KOPS_STANDIN = textwrap.dedent("""\
    #!/usr/bin/env python3
    # Stand-in for the kops CLI: records its arguments, keeps the cluster spec in a file.
    import json, os, shutil, sys
    here = os.path.dirname(os.path.abspath(__file__))
    args = sys.argv[1:]
    with open(os.path.join(here, "calls.jsonl"), "a") as f:
        f.write(json.dumps(args) + "\\n")
    spec = os.path.join(here, "cluster.yaml")
    def opt(name):
        return args[args.index(name) + 1] if name in args else None
    if args[:1] == ["version"]:
        print("Client version: 1.30.0 (stand-in)")
    elif args[:2] == ["get", "cluster"] and opt("-o") == "yaml":
        if opt("--name") != "demo.k8s.local" or not opt("--state"):
            sys.exit("cluster not found")
        sys.stdout.write(open(spec).read())
    elif args[:1] == ["replace"] and opt("-f") and opt("--state"):
        with open(os.path.join(here, "replaced.yaml"), "w") as out:
            out.write(open(opt("-f")).read())
        shutil.copy(opt("-f"), spec)
    elif args[:2] in (["update", "cluster"], ["rolling-update", "cluster"]) and "--yes" in args:
        print("applied" if args[0] == "update" else "rolled")
    else:
        sys.exit("unexpected arguments: %r" % (args,))
    """)

KOPS_CLUSTER = {"apiVersion": "kops.k8s.io/v1alpha2", "kind": "Cluster",
                "metadata": {"name": "demo.k8s.local", "creationTimestamp": None},
                "spec": {"kubernetesVersion": "1.30.2", "cloudProvider": "aws",
                         "kubeProxy": {"proxyMode": "iptables"},
                         "networking": {"calico": {"bpfEnabled": True}}}}


@pytest.fixture
def kops_cli(tmp_path):
    bindir = tmp_path / "kops-bin"
    bindir.mkdir()
    exe = bindir / "kops"
    exe.write_text(KOPS_STANDIN)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (bindir / "cluster.yaml").write_text(yaml.safe_dump(KOPS_CLUSTER))
    env = {"PATH": "%s%s%s" % (bindir, os.pathsep, os.environ["PATH"]), "KOPS_STATE_STORE": ""}

    class Kops:
        dir = bindir

        @staticmethod
        def calls():
            path = bindir / "calls.jsonl"
            return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

        @staticmethod
        def spec():
            return yaml.safe_load((bindir / "cluster.yaml").read_text())

    Kops.env = env
    return Kops


def test_kops_with_the_cli_changes_the_spec_and_rolls_it_out(cluster, ansible, kops_cli):
    kvars = dict(kube_proxy_platform="kops", kube_proxy_kops_cluster_name="demo.k8s.local",
                 kube_proxy_kops_state_store="s3://demo-state")
    mark = cluster.audit.mark()
    res = run(ansible, env=kops_cli.env, **kvars)
    assert_ok(res)
    assert cluster.audit.writes_since(mark) == []          # kOps changes its own spec; nothing in the API
    calls = kops_cli.calls()
    assert calls[0] == ["version"]
    assert calls[1] == ["get", "cluster", "--name", "demo.k8s.local", "--state", "s3://demo-state", "-o", "yaml"]
    assert calls[2][:2] == ["replace", "-f"] and calls[2][3:] == ["--state", "s3://demo-state"]
    assert calls[3] == ["update", "cluster", "--name", "demo.k8s.local", "--state", "s3://demo-state", "--yes"]
    assert calls[4] == ["rolling-update", "cluster", "--name", "demo.k8s.local", "--state", "s3://demo-state",
                        "--yes"]
    assert len(calls) == 5
    assert not os.path.exists(calls[2][2])                  # the temporary spec file is removed
    spec = kops_cli.spec()
    assert spec["spec"]["kubeProxy"] == {"proxyMode": "iptables", "enabled": False}
    assert spec["spec"]["networking"] == KOPS_CLUSTER["spec"]["networking"]
    assert spec["metadata"]["name"] == "demo.k8s.local"

    again = run(ansible, env=kops_cli.env, **kvars)
    assert_ok(again)
    assert again.changed() == 0
    assert [c[0] for c in kops_cli.calls()[5:]] == ["version", "get"]

    res = run(ansible, env=kops_cli.env, kube_proxy_state="enabled", **kvars)
    assert_ok(res)
    assert kops_cli.spec()["spec"]["kubeProxy"]["enabled"] is True


def test_kops_check_mode_runs_only_reads(cluster, ansible, kops_cli):
    res = run(ansible, check=True, env=kops_cli.env, kube_proxy_platform="kops",
              kube_proxy_kops_cluster_name="demo.k8s.local", kube_proxy_kops_state_store="s3://demo-state")
    assert_ok(res)
    assert res.changed() >= 1
    assert [c[0] for c in kops_cli.calls()] == ["version", "get"]
    assert "enabled" not in kops_cli.spec()["spec"]["kubeProxy"]


def test_kops_without_a_state_store_fails_with_the_exact_commands(cluster, ansible, kops_cli):
    res = run(ansible, env=kops_cli.env, kube_proxy_platform="kops", kube_proxy_kops_cluster_name="demo.k8s.local")
    assert_failed(res)
    msg = " ".join(failure_messages(res))
    assert "kube_proxy_kops_state_store (or KOPS_STATE_STORE)" in msg
    for cmd in ("kops get cluster --name demo.k8s.local --state '<state store, e.g. s3://bucket>' -o yaml > cluster.yaml",
                "yq -i '.spec.kubeProxy.enabled = false' cluster.yaml",
                "kops replace -f cluster.yaml --state '<state store, e.g. s3://bucket>'",
                "kops update cluster --name demo.k8s.local --state '<state store, e.g. s3://bucket>' --yes",
                "kops rolling-update cluster --name demo.k8s.local --state '<state store, e.g. s3://bucket>' --yes"):
        assert cmd in msg, msg
    assert [c[0] for c in kops_cli.calls()] == ["version"]


def test_kops_without_the_cli_fails_with_the_exact_commands(cluster, ansible, tmp_path):
    res = run(ansible, kube_proxy_platform="kops", kube_proxy_kops_cluster_name="demo.k8s.local",
              kube_proxy_kops_state_store="s3://demo-state", kube_proxy_kops_binary=str(tmp_path / "no-kops"))
    assert_failed(res)
    msg = " ".join(failure_messages(res))
    assert "the kops CLI (%s was not found or failed)" % (tmp_path / "no-kops") in msg
    assert "%s update cluster --name demo.k8s.local --state s3://demo-state --yes" % (tmp_path / "no-kops") in msg


# -- MKE -------------------------------------------------------------------------------------------------------------

def test_mke_fails_while_kube_proxy_runs(cluster, ansible, kube_proxy_ds):
    mark = cluster.audit.mark()
    res = run(ansible, kube_proxy_platform="mke")
    assert_failed(res)
    assert any("--kube-proxy-mode=disabled --kube-default-drop-masq-bits" in m for m in failure_messages(res))
    assert cluster.audit.writes_since(mark) == []


def test_mke_without_kube_proxy_reports_the_flags(cluster, ansible, no_kube_proxy):
    res = run(ansible, kube_proxy_platform="mke")
    assert_ok(res)
    assert res.changed() == 0
    assert any("--kube-proxy-mode=disabled --kube-default-drop-masq-bits" in m for m in debug_messages(res))


# -- bad input fails before any write, naming the variable ----------------------------------------------------------------

@pytest.mark.parametrize("extra, words", [
    (dict(kube_proxy_state="off"), "kube_proxy_state"),
    (dict(kube_proxy_platform="gke"), "kube_proxy_platform"),
    (dict(kube_proxy_node_selector={}), "kube_proxy_node_selector"),
    (dict(kube_proxy_timeout=0), "kube_proxy_timeout"),
    (dict(kube_proxy_state="enabled", kube_proxy_switch_ipvs_to_iptables=True), "kube_proxy_switch_ipvs_to_iptables"),
])
def test_bad_input_fails_before_any_write(cluster, ansible, kube_proxy_ds, extra, words):
    mark = cluster.audit.mark()
    res = run(ansible, **dict(dict(kube_proxy_platform="kubeadm"), **extra))
    assert_failed(res)
    assert any(words in m for m in failure_messages(res)), failure_messages(res)
    assert cluster.audit.writes_since(mark) == []
    assert node_selector(cluster) == PRE_EXISTING
