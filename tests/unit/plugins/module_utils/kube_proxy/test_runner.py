"""kube_proxy/runner.py (kube_proxy_info) behind the real ``Client``, over a small read-only in-memory transport
(``helpers/read_only_transport.py``): which platform it acts for, what it reads, and that it never sends a write."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.kube_proxy.runner import run_kube_proxy_info

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.read_only_transport import Transport, client


# -- kube_proxy_info --------------------------------------------------------------------------------------------------

KS = "/api/v1/namespaces/kube-system"
DS_PATH = "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy"


def daemonset(node_selector=None):
    return {"metadata": {"name": "kube-proxy", "namespace": "kube-system", "generation": 1},
            "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
                     "template": {"spec": {"nodeSelector": dict(node_selector or {}),
                                           "containers": [{"name": "kube-proxy", "command": ["kube-proxy"]}]}}},
            "status": {"desiredNumberScheduled": 1, "currentNumberScheduled": 1, "updatedNumberScheduled": 1,
                       "numberReady": 1, "observedGeneration": 1}}


def test_kube_proxy_ipvs_configmap_switch():
    t = Transport({DS_PATH: daemonset({"kubernetes.io/os": "linux"}),
                   KS + "/configmaps/kube-proxy": {"metadata": {"name": "kube-proxy"},
                                                   "data": {"config.conf": "kind: KubeProxyConfiguration\nmode: ipvs\n"}},
                   KS + "/pods/kube-proxy-a": {"metadata": {"name": "kube-proxy-a", "labels": {"k8s-app": "kube-proxy"}}}})
    c = client(t)
    out = run_kube_proxy_info(c, platform="kubeadm", now="2026-11-25T06:00:00Z")
    assert out["running"] is True
    assert out["daemonset"]["pods"] == 1 and out["daemonset"]["settled"] is False
    assert out["mode"]["ipvs"] is True and out["mode"]["roll_pending"] is False
    assert out["mode"]["source"] == "ConfigMap kube-system/kube-proxy config.conf"
    # the switch is stamped: a re-run after a run cut before the roll knows the roll is still to do
    assert out["mode"]["switch"] == {"configmap": "kube-proxy", "patch": {
        "metadata": {"annotations": {"lifecycle.calico-ops.io/kube-proxy-mode-switched-at": "2026-11-25T06:00:00Z"}},
        "data": {"config.conf": "kind: KubeProxyConfiguration\nmode: iptables\n"}}}
    assert out["daemonset"]["patch"] == {"spec": {"template": {"spec": {"nodeSelector": {"non-calico": "true"}}}}}
    assert c.requests["write"] == 0


def _switched_world(rolled_at):
    ds = daemonset({"kubernetes.io/os": "linux"})
    if rolled_at:
        ds["spec"]["template"]["metadata"] = {"annotations": {"kubectl.kubernetes.io/restartedAt": rolled_at}}
    return Transport({DS_PATH: ds, KS + "/configmaps/kube-proxy": {
        "metadata": {"name": "kube-proxy",
                     "annotations": {"lifecycle.calico-ops.io/kube-proxy-mode-switched-at": "2026-11-25T06:00:00Z"}},
        "data": {"config.conf": "kind: KubeProxyConfiguration\nmode: iptables\n"}}})


def test_kube_proxy_a_switch_not_rolled_since_is_pending():
    """Issue 18 (tests/reliability/test_faults.py, kube_proxy_disabled): a run cut between the ConfigMap's switch and
    the DaemonSet's roll; the re-run finds mode iptables and must still roll."""
    for rolled_at, pending in ((None, True), ("2026-11-25T05:59:59Z", True), ("2026-11-25T06:00:00Z", False),
                               ("2026-11-25T06:00:07Z", False)):
        out = run_kube_proxy_info(client(_switched_world(rolled_at)), platform="kubeadm")
        assert (out["mode"]["mode"], out["mode"]["ipvs"], out["mode"]["switch"]) == ("iptables", False, None)
        assert out["mode"]["roll_pending"] is pending, rolled_at


def test_kube_proxy_iptables_without_our_switch_is_not_pending():
    t = Transport({DS_PATH: daemonset(), KS + "/configmaps/kube-proxy": {
        "metadata": {"name": "kube-proxy"}, "data": {"config.conf": "mode: iptables\n"}}})
    assert run_kube_proxy_info(client(t), platform="kubeadm")["mode"]["roll_pending"] is False


def test_kube_proxy_eks_configmap_name():
    t = Transport({DS_PATH: daemonset(),
                   KS + "/configmaps/kube-proxy-config": {"metadata": {"name": "kube-proxy-config"},
                                                          "data": {"config": "mode: \"iptables\"\n"}}})
    out = run_kube_proxy_info(client(t), platform="eks")
    assert (out["mode"]["mode"], out["mode"]["configmap"], out["mode"]["ipvs"]) == ("iptables", "kube-proxy-config", False)


def test_kube_proxy_aks_uses_the_crd_api_when_v3_is_not_served():
    t = Transport({"/apis/crd.projectcalico.org/v1/felixconfigurations/default": {
        "metadata": {"name": "default"}, "spec": {"bpfKubeProxyIptablesCleanupEnabled": True}}},
        groups=["crd.projectcalico.org/v1"])
    out = run_kube_proxy_info(client(t), platform="aks")
    assert out["felix"]["api_version"] == "crd.projectcalico.org/v1"
    assert out["felix"]["exists"] is True and out["felix"]["value"] is True
    assert out["felix"]["patch"] == {"spec": {"bpfKubeProxyIptablesCleanupEnabled": False}}


def test_kube_proxy_aks_prefers_v3():
    t = Transport(groups=["crd.projectcalico.org/v1", "projectcalico.org/v3"])
    out = run_kube_proxy_info(client(t), platform="aks")
    assert out["felix"]["api_version"] == "projectcalico.org/v3"
    assert out["felix"]["exists"] is False
    assert out["felix"]["create"]["apiVersion"] == "projectcalico.org/v3"


def test_kube_proxy_openshift_not_served():
    out = run_kube_proxy_info(client(Transport()), platform="openshift", state="enabled")
    assert out["openshift"]["served"] is False and out["openshift"]["exists"] is False
    assert out["openshift"]["patch"] == {"spec": {"deployKubeProxy": True}}


def test_kube_proxy_kops_cluster_name_from_the_server():
    out = run_kube_proxy_info(client(Transport()), server_url="https://api.demo.k8s.example.com", platform="kops",
                              kops_state_store="s3://state")
    assert out["kops"]["cluster_name"] == "demo.k8s.example.com"
    assert out["kops"]["state_store"] == "s3://state"
    assert out["kops"]["commands"][1] == "yq -i '.spec.kubeProxy.enabled = false' cluster.yaml"
    assert out["kops"]["commands"][3] == "kops update cluster --name demo.k8s.example.com --state s3://state --yes"


def test_kube_proxy_mke_with_pods_and_no_daemonset():
    t = Transport({KS + "/pods/kube-proxy-x": {"metadata": {"name": "kube-proxy-x", "labels": {"k8s-app": "kube-proxy"}}}})
    out = run_kube_proxy_info(client(t), platform="mke")
    assert out["daemonset"]["present"] is False
    assert (out["daemonset"]["node_selector"], out["daemonset"]["selector_applied"]) == ({}, False)
    assert out["mode"] == {"mode": None, "ipvs": False, "switch": None, "roll_pending": False}
    assert out["running"] is True
    assert out["mke"]["failed"] is True


def test_kube_proxy_ipvs_flag_wins_over_an_iptables_configmap():
    ds = daemonset()
    ds["spec"]["template"]["spec"]["containers"][0]["args"] = ["--proxy-mode=ipvs"]
    t = Transport({DS_PATH: ds, KS + "/configmaps/kube-proxy": {"metadata": {"name": "kube-proxy"},
                                                                "data": {"config.conf": "mode: iptables\n"}}})
    out = run_kube_proxy_info(client(t), platform="kubeadm")
    assert (out["mode"]["mode"], out["mode"]["where"], out["mode"]["configmap"]) == ("ipvs", "args", None)
    assert out["mode"]["switch"]["daemonset_patch"]["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "--proxy-mode=iptables"]


def test_kube_proxy_iptables_flag_does_not_hide_the_configmap():
    ds = daemonset()
    ds["spec"]["template"]["spec"]["containers"][0]["args"] = ["--proxy-mode=iptables"]
    t = Transport({DS_PATH: ds, KS + "/configmaps/kube-proxy": {"metadata": {"name": "kube-proxy"},
                                                                "data": {"config.conf": "mode: ipvs\n"}}})
    out = run_kube_proxy_info(client(t), platform="kubeadm")
    assert (out["mode"]["mode"], out["mode"]["where"]) == ("ipvs", "configmap")


def test_kube_proxy_openshift_served():
    t = Transport({"/apis/operator.openshift.io/v1/networks/cluster": {
        "metadata": {"name": "cluster"}, "spec": {"deployKubeProxy": True}}}, groups=["operator.openshift.io/v1"])
    out = run_kube_proxy_info(client(t), platform="openshift")
    assert (out["openshift"]["served"], out["openshift"]["exists"], out["openshift"]["value"]) == (True, True, True)
    assert out["openshift"]["patch"] == {"spec": {"deployKubeProxy": False}}


def test_kube_proxy_reads_how_calico_node_reaches_the_api_server():
    """The operator's calico-node first, then a manifest install's; the ConfigMap its envFrom names is read."""
    manifest_ds = {"metadata": {"name": "calico-node", "namespace": "kube-system"}, "spec": {"template": {"spec": {
        "containers": [{"name": "calico-node", "envFrom": [{"configMapRef": {"name": "kubernetes-services-endpoint"}}]}]}}}}
    t = Transport({DS_PATH: daemonset(), "/apis/apps/v1/namespaces/kube-system/daemonsets/calico-node": manifest_ds,
                   KS + "/configmaps/kubernetes-services-endpoint": {
                       "metadata": {"name": "kubernetes-services-endpoint"},
                       "data": {"KUBERNETES_SERVICE_HOST": "10.0.0.10", "KUBERNETES_SERVICE_PORT": "6443"}}})
    c = client(t)
    out = run_kube_proxy_info(c, platform="kubeadm")
    assert out["calico_api"]["daemonset"] == "kube-system/calico-node" and out["calico_api"]["direct"] is True
    assert ("GET", "/apis/apps/v1/namespaces/calico-system/daemonsets/calico-node") in t.log
    assert ("GET", "/api/v1/namespaces/default/services/kubernetes") in t.log
    assert c.requests["write"] == 0
    none = run_kube_proxy_info(client(Transport({DS_PATH: daemonset()})), platform="kubeadm")
    assert none["calico_api"]["daemonset"] is None
