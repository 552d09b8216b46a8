"""preflight/cluster_rules.py: the cluster-wide checks of the eBPF preflight (platform, kube-proxy, features in use),
every example of issue 3 plus edge cases (no cluster)."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform import detect
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.nodes import node_facts
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import cluster_rules

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.node_objects import node


# -- platform ------------------------------------------------------------------------------------------

def facts_of(*nodes):
    return [node_facts(n) for n in nodes]


@pytest.mark.parametrize("name", ["gke", "tkg", "rke"])
def test_unsupported_platforms_fail(name):
    details = detect.platform_details(name, facts_of(node()), source="override")
    assert cluster_rules.check_platform(details)["verdict"] == "fail"
    assert details["supported"] is False


@pytest.mark.parametrize("name", ["generic", "kubeadm", "openshift", "kops", "mke", "eks"])
def test_supported_platforms_pass(name):
    assert cluster_rules.check_platform(detect.platform_details(name, facts_of(node())))["verdict"] == "ok"


def test_aks_with_azure_cni_cannot_disable_kube_proxy():
    facts = facts_of(node(labels={"kubernetes.azure.com/cluster": "MC", "kubernetes.azure.com/azure-cni-overlay":
                                  "true"}))
    details = detect.platform_details("aks", facts)
    assert details["kube_proxy_can_be_disabled"] is False
    assert details["felix_configuration"] == {"bpfKubeProxyIptablesCleanupEnabled": False}
    got = cluster_rules.check_platform(details)
    assert got["verdict"] == "warn"
    assert "bpfKubeProxyIptablesCleanupEnabled: false" in got["reason"]


def test_aks_with_byo_cni_can_disable_kube_proxy():
    facts = facts_of(node(labels={"kubernetes.azure.com/cluster": "MC",
                                  "kubernetes.azure.com/network-plugin": "none"}))
    details = detect.platform_details("aks", facts)
    assert details["kube_proxy_can_be_disabled"] is True
    assert details["felix_configuration"] == {}
    assert cluster_rules.check_platform(details)["verdict"] == "ok"


def test_aks_without_cni_labels_warns_that_it_cannot_tell():
    details = detect.platform_details("aks", facts_of(node(labels={"kubernetes.azure.com/cluster": "MC"})))
    assert details["kube_proxy_can_be_disabled"] is None
    assert cluster_rules.check_platform(details)["verdict"] == "warn"


def test_eks_with_bottlerocket_needs_flex_volume_path():
    facts = facts_of(node("br-1", os_image="Bottlerocket OS 1.19.2 (aws-k8s-1.29)", kernel="6.1.72"),
                     node("al-1", os_image="Amazon Linux 2", kernel="5.10.209-198.858.amzn2.x86_64"))
    details = detect.platform_details("eks", facts)
    assert details["installation"] == {"flexVolumePath": "/var/lib/kubelet/plugins"}
    assert details["operator_dns_nameservers"] == ["169.254.169.253"]
    got = cluster_rules.check_platform(details)
    assert got["verdict"] == "warn" and "flexVolumePath: /var/lib/kubelet/plugins" in got["reason"]
    plain = detect.platform_details("eks", facts[1:])
    assert plain["installation"] == {} and cluster_rules.check_platform(plain)["verdict"] == "ok"


@pytest.mark.parametrize("mode, present, expected", [
    ("ipvs", True, "fail"), ("iptables", True, "ok"), ("", True, "ok"), (None, True, "ok"),
    ("nftables", True, "warn"), (None, False, "ok"),
])
def test_check_kube_proxy(mode, present, expected):
    assert cluster_rules.check_kube_proxy(mode, "ConfigMap kube-system/kube-proxy", present)["verdict"] == expected


# -- features ------------------------------------------------------------------------------------------

def test_findings_name_the_first_objects_and_count_all():
    refs = ["Service/ns/s%02d" % i for i in range(25)]
    got = cluster_rules.findings(refs, "SCTP", "none", max_objects=20)
    assert got["verdict"] == "fail" and got["count"] == 25 and got["objects"] == refs[:20]
    assert got["reason"] == "SCTP: 25 (Service/ns/s00, Service/ns/s01, Service/ns/s02, ...)"
    assert cluster_rules.findings([], "SCTP", "none") == {"verdict": "ok", "reason": "none", "objects": [], "count": 0}


def test_feature_predicates():
    assert cluster_rules.service_has_sctp({"spec": {"ports": [{"protocol": "TCP"}, {"protocol": "SCTP"}]}})
    assert not cluster_rules.service_has_sctp({"spec": {"ports": [{"port": 80}]}})
    assert not cluster_rules.service_has_sctp({})
    assert cluster_rules.policy_has_log_action({"spec": {"egress": [{"action": "Allow"}, {"action": "Log"}]}})
    assert cluster_rules.policy_has_log_action({"spec": {"ingress": [{"action": "log"}]}})
    assert not cluster_rules.policy_has_log_action({"spec": {"ingress": [{"action": "Allow"}], "egress": None}})
    assert cluster_rules.pod_has_floating_ips({"metadata": {"annotations": {"cni.projectcalico.org/floatingIPs": "[]"}}})
    assert not cluster_rules.pod_has_floating_ips({"metadata": {}})
    assert cluster_rules.felix_floating_ips({"spec": {"floatingIPs": "Enabled"}})
    assert not cluster_rules.felix_floating_ips({"spec": {"floatingIPs": "Disabled"}})
    assert cluster_rules.felix_policy_sync({"spec": {"policySyncPathPrefix": "/var/run/nodeagent"}})
    assert cluster_rules.object_ref({"kind": "GlobalNetworkPolicy", "metadata": {"name": "g"}}) == "GlobalNetworkPolicy/g"


@pytest.mark.parametrize("spec, expected", [
    ({"webApplicationFirewall": "Enabled"}, {"web_application_firewall"}),
    ({"logCollection": {"collectLogs": "Enabled"}}, {"l7_logs"}),
    ({"l7LogCollection": {"collectL7Logs": "Enabled"}}, {"l7_logs"}),
    ({"applicationLayerPolicy": "Enabled", "sidecarInjection": "Enabled"}, {"application_layer_policy"}),
    ({"webApplicationFirewall": "Disabled", "logCollection": {"collectLogs": "Disabled"}}, set()),
    ({}, {"application_layer_policy"}),
])
def test_application_layer_features(spec, expected):
    assert cluster_rules.application_layer_features({"spec": spec}) == expected
