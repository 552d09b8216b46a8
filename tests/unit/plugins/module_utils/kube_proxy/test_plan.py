"""kube_proxy/plan.py: what the kube_proxy role does, decided from what kube_proxy_info read - when kube-proxy goes and
what is patched, per platform; every refusal names the variable to change and stops before any write."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.kube_proxy.plan import plan, settings_problems
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.kube_proxy.rules import selector_patch

SELECTOR = {"non-calico": "true"}


def settings(**over):
    out = {"state": "disabled", "namespace": "kube-system", "daemonset": "kube-proxy", "configmaps": ["kube-proxy"],
           "node_selector": dict(SELECTOR), "wait_timeout": 300, "poll_interval": 5, "kops_timeout": 3600,
           "switch_ipvs_to_iptables": False, "require_calico_api": True, "openshift_name": "cluster",
           "openshift_field": "deployKubeProxy", "felix_name": "default",
           "felix_field": "bpfKubeProxyIptablesCleanupEnabled", "prefix": "kube_proxy_"}
    out.update(over)
    return out


def info(platform="kubeadm", present=True, running=True, state="disabled", direct=True, mode=None, **extra):
    """What kube_proxy_info reads, as much of it as the plan uses."""
    out = {"platform": {"name": platform, "title": platform, "source": "user", "details": {}},
           "daemonset": {"present": present, "patch": selector_patch(state, SELECTOR)},
           "running": running, "mode": dict({"ipvs": False, "roll_pending": False, "source": None}, **(mode or {})),
           "calico_api": {"daemonset": "calico-system/calico-node", "direct": direct, "host": "10.96.0.1"}}
    out.update(extra)
    return out


def test_kubeadm_disable_patches_the_daemonset_then_waits_for_it_to_empty():
    out = plan(info(), settings())
    assert out["problems"] == []
    assert [(w["resource"], w["namespace"], w["name"], w["patch"], w["missing"]) for w in out["writes"]] == [
        ("daemonsets", "kube-system", "kube-proxy", {"spec": {"template": {"spec": {"nodeSelector": SELECTOR}}}},
         "fail")]
    assert out["writes"][0]["label"] == 'DaemonSet\'s nodeSelector - kube-system/kube-proxy: add {"non-calico": "true"}'
    assert (out["wait"], out["ipvs"], out["kops"], out["notes"]) == ("disabled", False, False, [])


@pytest.mark.parametrize("platform", ["generic", "eks"])
def test_generic_and_eks_use_the_daemonset_too(platform):
    out = plan(info(platform), settings())
    assert [w["resource"] for w in out["writes"]] == ["daemonsets"] and out["wait"] == "disabled"
    assert any("EKS add-on" in n for n in out["notes"]) is (platform == "eks")


def test_enable_removes_only_the_selector_keys_and_waits_for_every_pod():
    out = plan(info(state="enabled"), settings(state="enabled"))
    assert out["writes"][0]["patch"] == {"spec": {"template": {"spec": {"nodeSelector": {"non-calico": None}}}}}
    assert out["writes"][0]["label"].endswith('remove {"non-calico": "true"}') and out["wait"] == "enabled"


def test_no_daemonset_is_already_disabled_and_cannot_be_enabled():
    out = plan(info(present=False, running=False), settings())
    assert (out["problems"], out["writes"], out["wait"]) == ([], [], None)
    assert "kube-proxy is already disabled" in out["notes"][0]
    out = plan(info(present=False, running=False, state="enabled"), settings(state="enabled"))
    assert "kube_proxy_state: enabled, but there is no DaemonSet kube-system/kube-proxy" in out["problems"][0]
    assert out["writes"] == [] and out["wait"] is None


def test_calico_node_through_the_kubernetes_service_is_refused_unless_the_user_says_otherwise():
    found = plan(info(direct=False), settings())
    assert len(found["problems"]) == 1 and "KUBERNETES_SERVICE_HOST 10.96.0.1" in found["problems"][0]
    assert "kube_proxy_require_calico_api: false" in found["problems"][0]
    assert (found["writes"], found["wait"]) == ([], None)
    assert plan(info(direct=False), settings(require_calico_api=False))["problems"] == []
    assert plan(info(direct=False, state="enabled"), settings(state="enabled"))["problems"] == []
    unset = info(direct=False)
    unset["calico_api"]["host"] = None  # no ConfigMap, nothing in its environment
    assert "(no KUBERNETES_SERVICE_HOST/PORT in its environment)" in plan(unset, settings())["problems"][0]


def test_no_calico_yet_is_not_refused():
    i = info()
    i["calico_api"] = {"daemonset": None, "direct": False, "host": None}
    assert plan(i, settings())["problems"] == []


def test_ipvs_is_refused_without_leave_and_switched_first_with_it():
    mode = {"ipvs": True, "source": "ConfigMap kube-system/kube-proxy config.conf"}
    refused = plan(info(mode=mode), settings())
    assert "kube-proxy runs in IPVS mode (ConfigMap kube-system/kube-proxy config.conf)" in refused["problems"][0]
    assert "kube_proxy_switch_ipvs_to_iptables: true" in refused["problems"][0] and not refused["ipvs"]
    switched = plan(info(mode=mode), settings(switch_ipvs_to_iptables=True))
    assert switched["problems"] == [] and switched["ipvs"] and switched["wait"] == "disabled"
    # a switch of an earlier run whose roll was cut: rolled now, without the leave (the mode is iptables already)
    assert plan(info(mode={"roll_pending": True}), settings())["ipvs"] is True
    # nothing to switch where kube-proxy does not run
    assert plan(info(mode=mode, running=False), settings())["problems"] == []


@pytest.mark.parametrize("over, words", [
    (dict(configmaps=[]), "kube_proxy_configmaps is an empty list"),
    (dict(node_selector={}), "kube_proxy_node_selector: must have at least one key"),
    (dict(wait_timeout=0), "kube_proxy_timeout (0) and kube_proxy_poll_interval (5) must be positive"),
    (dict(poll_interval=600), "the interval not longer than the timeout"),
    (dict(kops_timeout=0), "kube_proxy_kops_timeout: must be a positive number of seconds (got 0)"),
    (dict(state="enabled", switch_ipvs_to_iptables=True), "kube_proxy_switch_ipvs_to_iptables: true only applies"),
])
def test_bad_settings_name_the_variable(over, words):
    found = settings_problems(settings(**over))
    assert len(found) == 1 and words in found[0], found
    out = plan(info(), settings(**over))
    assert out["problems"] == found and out["writes"] == [] and out["wait"] is None


def test_without_the_prefix_the_options_are_named():
    assert settings_problems(settings(prefix="", wait_timeout=0))[0].startswith("wait_timeout (0) and poll_interval")


def test_an_unsupported_platform_is_refused_with_its_evidence():
    i = info("gke")
    i["platform"].update(title="Google GKE", details={"detected": {"evidence": ["node label cloud.google.com/gke"]}})
    found = plan(i, settings())["problems"]
    assert found == ["kube_proxy_platform: Google GKE was detected (node label cloud.google.com/gke), and the eBPF "
                     "data plane does not support it. Set kube_proxy_platform if the detection is wrong."]


def test_openshift_patches_the_network_config_or_says_it_is_missing():
    net = {"api_version": "operator.openshift.io/v1", "served": True, "exists": True, "patch": {"spec": {"x": 1}}}
    out = plan(info("openshift", openshift=net), settings())
    assert [(w["resource"], w["namespace"], w["name"]) for w in out["writes"]] == [("networks", None, "cluster")]
    assert out["wait"] is None and out["writes"][0]["label"].endswith("spec.deployKubeProxy=false")
    missing = plan(info("openshift", openshift=dict(net, exists=False, served=False)), settings())
    assert missing["problems"] == ["networks.operator.openshift.io 'cluster' was not found (the API is not served): "
                                   "is this OpenShift? Set kube_proxy_platform if not."]


def test_aks_keeps_kube_proxy_and_sets_felix_whatever_calico_node_reaches():
    felix = {"api_version": "projectcalico.org/v3", "patch": {"spec": {"f": False}}, "create": {"kind": "F"},
             "message": "AKS with Azure CNI: ... performance gain is lost"}
    out = plan(info("aks", direct=False, felix=felix), settings())
    assert out["problems"] == [] and out["wait"] is None
    assert [(w["resource"], w["missing"], w["create"]) for w in out["writes"]] == [
        ("felixconfigurations", "create", {"kind": "F"})]
    assert "performance gain is lost" in out["notes"][0]
    back = plan(info("aks", felix=felix, state="enabled"), settings(state="enabled"))
    assert back["writes"][0]["missing"] == "skip" and "back to its default (true)" in back["notes"][0]
    none = plan(info("aks", felix=dict(felix, api_version=None)), settings())
    assert "FelixConfiguration is served neither" in none["problems"][0] and none["writes"] == []


def test_mke_and_kops_write_nothing_through_the_api():
    mke = plan(info("mke", mke={"failed": True, "message": "MKE: --kube-proxy-mode=disabled"}), settings())
    assert mke["problems"] == ["MKE: --kube-proxy-mode=disabled"] and mke["writes"] == []
    ok = plan(info("mke", running=False, mke={"failed": False, "message": "MKE: flags"}), settings())
    assert ok["problems"] == [] and ok["notes"] == ["MKE: flags"] and ok["wait"] is None
    kops = plan(info("kops", kops={}), settings())
    assert (kops["kops"], kops["writes"], kops["wait"]) == (True, [], None)


@pytest.mark.parametrize("platform, running, serves", [
    ("kubeadm", True, True), ("kubeadm", False, False), ("eks", False, False), ("generic", True, True),
    ("openshift", False, True), ("kops", False, True), ("aks", False, True), ("mke", False, True),
])
def test_whether_kube_proxy_may_still_serve_services(platform, running, serves):
    extra = {"openshift": {"api_version": "v1", "served": True, "exists": True, "patch": {}},
             "felix": {"api_version": "v3", "patch": {}, "create": {}, "message": "m"},
             "mke": {"failed": False, "message": "m"}, "kops": {}}
    assert plan(info(platform, running=running, **extra), settings())["serves"] is serves
