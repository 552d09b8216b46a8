"""kube_proxy/rules.py, kube-proxy per platform: selector patches, IPVS switch, AKS/OpenShift/kOps/MKE rules (the
DaemonSet's settling: k8s/test_daemonset.py)."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.kube_proxy import rules as r
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.objects.merge_patch import apply_merge_patch
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.daemonsets import daemonset, pods


SEL = {"non-calico": "true"}


# -- selector patches ----------------------------------------------------------------------------------

def test_disable_adds_the_selector_and_keeps_others():
    ds = daemonset({"kubernetes.io/os": "linux"})
    after = apply_merge_patch(ds, r.selector_patch("disabled", SEL))
    assert r.node_selector(after) == {"kubernetes.io/os": "linux", "non-calico": "true"}
    assert r.selector_applied(after, SEL)


def test_enable_removes_only_the_selector_keys():
    ds = daemonset({"kubernetes.io/os": "linux", "non-calico": "true"})
    after = apply_merge_patch(ds, r.selector_patch("enabled", SEL))
    assert r.node_selector(after) == {"kubernetes.io/os": "linux"}
    assert not r.selector_applied(after, SEL)


def test_patches_are_idempotent():
    ds = daemonset({"kubernetes.io/os": "linux", "non-calico": "true"})
    assert apply_merge_patch(ds, r.selector_patch("disabled", SEL)) == ds
    ds = daemonset({"kubernetes.io/os": "linux"})
    assert apply_merge_patch(ds, r.selector_patch("enabled", SEL)) == ds


def test_selector_values_become_strings():
    assert r.selector_patch("disabled", {"non-calico": True}) == {
        "spec": {"template": {"spec": {"nodeSelector": {"non-calico": "True"}}}}}


def test_selector_applied_needs_the_value_too():
    assert not r.selector_applied(daemonset({"non-calico": "false"}), SEL)
    assert not r.selector_applied(daemonset(), SEL)


def test_running():
    assert r.kube_proxy_running(daemonset(), pods(3), SEL) is True
    assert r.kube_proxy_running(daemonset(SEL, desiredNumberScheduled=0), [], SEL) is False
    assert r.kube_proxy_running(None, [], SEL) is False
    assert r.kube_proxy_running(None, pods(1), SEL) is True            # MKE-like: pods without a DaemonSet
    assert r.kube_proxy_running(None, pods(1, deleting=1), SEL) is False


# -- IPVS -----------------------------------------------------------------------------------------------

KUBEADM_CONF = """apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
ipvs:
  scheduler: "rr"
  strictARP: true
kind: KubeProxyConfiguration
mode: "ipvs" # set by kubeadm
nodePortAddresses: null
"""


def test_switch_mode_text_yaml_keeps_everything_else():
    out = r.switch_mode_text(KUBEADM_CONF)
    assert out == KUBEADM_CONF.replace('mode: "ipvs"', 'mode: "iptables"')
    assert "scheduler: \"rr\"" in out


def test_switch_mode_text_unquoted_and_json():
    assert r.switch_mode_text("kind: KubeProxyConfiguration\nmode: ipvs\n") == \
        "kind: KubeProxyConfiguration\nmode: iptables\n"
    assert r.switch_mode_text('{"kind": "KubeProxyConfiguration", "mode": "ipvs"}') == \
        '{"kind": "KubeProxyConfiguration", "mode": "iptables"}'


def test_switch_mode_text_without_a_mode():
    assert r.switch_mode_text("kind: KubeProxyConfiguration\n") is None
    assert r.switch_mode_text(None) is None


def test_mode_from_configmap():
    assert r.mode_from_configmap({"data": {"config.conf": KUBEADM_CONF, "kubeconfig.conf": "x"}}) == (
        "config.conf", "ipvs")
    assert r.mode_from_configmap({"data": {"config": "mode: iptables\n"}}) == ("config", "iptables")
    assert r.mode_from_configmap({}) == (None, None)


def test_switch_args_both_forms():
    assert r.switch_mode_args(["kube-proxy", "--proxy-mode=ipvs", "--v=2"]) == [
        "kube-proxy", "--proxy-mode=iptables", "--v=2"]
    assert r.switch_mode_args(["--proxy-mode", "ipvs"]) == ["--proxy-mode", "iptables"]


def test_mode_from_daemonset_and_switch_containers():
    ds = daemonset(containers=[{"name": "kube-proxy", "command": ["/usr/local/bin/kube-proxy"],
                                "args": ["--proxy-mode=ipvs"]}])
    assert r.mode_from_daemonset(ds) == ("kube-proxy", "ipvs")
    switched = r.switch_containers(ds)
    assert switched == [{"name": "kube-proxy", "command": ["/usr/local/bin/kube-proxy"],
                         "args": ["--proxy-mode=iptables"]}]
    assert ds["spec"]["template"]["spec"]["containers"][0]["args"] == ["--proxy-mode=ipvs"]  # not mutated


# -- AKS, OpenShift -------------------------------------------------------------------------------------

def test_felix_api_version():
    assert r.felix_api_version(["projectcalico.org/v3", "crd.projectcalico.org/v1"]) == "projectcalico.org/v3"
    assert r.felix_api_version(["crd.projectcalico.org/v1"]) == "crd.projectcalico.org/v1"
    assert r.felix_api_version(["apps/v1"]) is None


def test_felix_patch_and_body():
    assert r.felix_patch("disabled") == {"spec": {"bpfKubeProxyIptablesCleanupEnabled": False}}
    assert r.felix_patch("enabled") == {"spec": {"bpfKubeProxyIptablesCleanupEnabled": None}}
    assert r.felix_body("crd.projectcalico.org/v1") == {
        "apiVersion": "crd.projectcalico.org/v1", "kind": "FelixConfiguration", "metadata": {"name": "default"},
        "spec": {"bpfKubeProxyIptablesCleanupEnabled": False}}


def test_aks_message_says_the_gain_is_lost():
    assert "performance gain is lost" in r.AKS_GAIN_LOST
    assert "bpfKubeProxyIptablesCleanupEnabled: false" in r.AKS_GAIN_LOST


def test_openshift_patch():
    assert r.openshift_patch("disabled") == {"spec": {"deployKubeProxy": False}}
    assert r.openshift_patch("enabled") == {"spec": {"deployKubeProxy": True}}


# -- kOps -------------------------------------------------------------------------------------------------

def test_kops_enabled_defaults_to_true():
    assert r.kops_kube_proxy_enabled({"spec": {}}) is True
    assert r.kops_kube_proxy_enabled({"spec": {"kubeProxy": {"enabled": None}}}) is True
    assert r.kops_kube_proxy_enabled({"spec": {"kubeProxy": {"enabled": False}}}) is False


def test_kops_set_kube_proxy_keeps_the_rest():
    doc = {"kind": "Cluster", "spec": {"kubeProxy": {"proxyMode": "iptables"}, "kubernetesVersion": "1.30.0"}}
    out = r.kops_set_kube_proxy(doc, False)
    assert out["spec"]["kubeProxy"] == {"proxyMode": "iptables", "enabled": False}
    assert out["spec"]["kubernetesVersion"] == "1.30.0"
    assert "enabled" not in doc["spec"]["kubeProxy"]


def test_kops_commands_are_exact():
    assert r.kops_commands("prod.k8s.local", "s3://state", enabled=False) == [
        "kops get cluster --name prod.k8s.local --state s3://state -o yaml > cluster.yaml",
        "yq -i '.spec.kubeProxy.enabled = false' cluster.yaml",
        "kops replace -f cluster.yaml --state s3://state",
        "kops update cluster --name prod.k8s.local --state s3://state --yes",
        "kops rolling-update cluster --name prod.k8s.local --state s3://state --yes",
    ]


def test_kops_commands_with_placeholders_are_quoted():
    cmds = r.kops_commands(None, None, enabled=True)
    assert cmds[0] == "kops get cluster --name '<cluster name>' --state '<state store, e.g. s3://bucket>' -o yaml > cluster.yaml"
    assert cmds[1] == "yq -i '.spec.kubeProxy.enabled = true' cluster.yaml"


# -- MKE --------------------------------------------------------------------------------------------------------

def test_mke():
    failed, msg = r.mke_message("disabled", True)
    assert failed is True and "--kube-proxy-mode=disabled --kube-default-drop-masq-bits" in msg
    failed, msg = r.mke_message("disabled", False)
    assert failed is False and "--kube-proxy-mode=disabled --kube-default-drop-masq-bits" in msg
    failed, msg = r.mke_message("enabled", False)
    assert failed is False and "--kube-proxy-mode=iptables" in msg


# -- edge cases found by mutation runs ----------------------------------------------------------------------------------

def test_running_edge_cases():
    # pods not created yet, nothing disables it: it is about to run
    assert r.kube_proxy_running(daemonset(), [], SEL) is True
    # the selector is in place but the controller has not caught up: not running any more
    assert r.kube_proxy_running(daemonset(SEL), [], SEL) is False
    # no node matches anyway
    assert r.kube_proxy_running(daemonset(desiredNumberScheduled=0), [], SEL) is False


def test_switch_args_flag_without_a_value_is_left_alone():
    assert r.switch_mode_args(["kube-proxy", "--proxy-mode"]) == ["kube-proxy", "--proxy-mode"]


def test_mode_from_daemonset_reads_command_and_args():
    ds = daemonset(containers=[{"name": "kp", "command": ["kube-proxy", "--proxy-mode=ipvs"]}])
    assert r.mode_from_daemonset(ds) == ("kp", "ipvs")
    assert r.mode_from_daemonset(daemonset()) == (None, None)


def test_mode_from_configmap_skips_keys_without_a_mode():
    assert r.mode_from_configmap({"data": {"a.conf": "kind: Other\n", "config.conf": "mode: ipvs\n"}}) == (
        "config.conf", "ipvs")


def test_kops_set_kube_proxy_on_a_null_section():
    assert r.kops_set_kube_proxy({"spec": {"kubeProxy": None}}, False) == {"spec": {"kubeProxy": {"enabled": False}}}


def test_kops_commands_name_the_binary_given():
    assert r.kops_commands("c.example.com", "s3://s", False, binary="/opt/bin/kops")[3] == \
        "/opt/bin/kops update cluster --name c.example.com --state s3://s --yes"


# -- how calico-node reaches the API server (the guard before kube-proxy is disabled) -----------------------------

def calico_node(namespace="calico-system", env=None, env_from=None):
    container = {"name": "calico-node", "env": [{"name": k, "value": v} for k, v in (env or {}).items()]}
    container["env"].append({"name": "NODENAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}})
    if env_from:
        container["envFrom"] = [{"configMapRef": {"name": n, "optional": True}} for n in env_from]
    return {"metadata": {"name": "calico-node", "namespace": namespace},
            "spec": {"template": {"spec": {"containers": [{"name": "install-cni"}, container]}}}}


def test_calico_api_path_the_operator_renders_the_endpoint_into_env():
    ds = calico_node(env={"KUBERNETES_SERVICE_HOST": "10.0.0.10", "KUBERNETES_SERVICE_PORT": "6443"})
    out = r.calico_api_path(ds, {})
    assert out["direct"] is True and (out["host"], out["port"]) == ("10.0.0.10", "6443")
    assert out["daemonset"] == "calico-system/calico-node" and "env" in out["source"]


def test_calico_api_path_without_the_configmap_goes_through_the_kubernetes_service():
    out = r.calico_api_path(calico_node(env={"FELIX_HEALTHENABLED": "true"}), {})
    assert out["direct"] is False and out["host"] is None and out["source"] is None


def test_calico_api_path_manifest_envfrom_configmap():
    ds = calico_node("kube-system", env_from=["kubernetes-services-endpoint"])
    assert r.envfrom_configmaps(ds) == [("kube-system", "kubernetes-services-endpoint")]
    missing = r.calico_api_path(ds, {("kube-system", "kubernetes-services-endpoint"): None})
    assert missing["direct"] is False
    cm = {"data": {"KUBERNETES_SERVICE_HOST": "api.example", "KUBERNETES_SERVICE_PORT": "443"}}
    found = r.calico_api_path(ds, {("kube-system", "kubernetes-services-endpoint"): cm})
    assert found["direct"] is True and found["host"] == "api.example"
    assert found["source"] == "ConfigMap kube-system/kubernetes-services-endpoint (envFrom)"
    half = r.calico_api_path(ds, {("kube-system", "kubernetes-services-endpoint"): {
        "data": {"KUBERNETES_SERVICE_HOST": "api.example"}}})
    assert half["direct"] is False  # a host without a port does not take calico-node past the Service


def test_calico_api_path_no_calico_node():
    assert r.calico_api_path(None, {}) == {"daemonset": None, "direct": False, "host": None, "port": None,
                                           "source": None}


def test_calico_api_path_the_kubernetes_service_is_not_direct():
    """Without the ConfigMap the operator renders its own KUBERNETES_SERVICE_HOST: the kubelet set it to the
    `kubernetes` Service's ClusterIP, which kube-proxy serves (seen with the real operator)."""
    ds = calico_node(env={"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"})
    out = r.calico_api_path(ds, {}, ["10.96.0.1"])
    assert out["direct"] is False and out["host"] == "10.96.0.1" and "kube-proxy serves" in out["source"]
    assert r.calico_api_path(ds, {}, ["10.96.0.2"])["direct"] is True
    by_name = calico_node(env={"KUBERNETES_SERVICE_HOST": "kubernetes.default.svc.cluster.local",
                               "KUBERNETES_SERVICE_PORT": "443"})
    assert r.calico_api_path(by_name, {})["direct"] is False
