"""The eBPF preflight rule table: every example of issue 3 plus edge cases (no cluster)."""

import copy
from pathlib import Path

import pytest
import yaml

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import rules as r
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import cluster_rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import node_rules

REPO = Path(__file__).resolve().parents[4]


def node(name="n1", os_image="Ubuntu 22.04.4 LTS", kernel="5.15.0-105-generic", arch="amd64",
         operating_system="linux", labels=None, annotations=None, provider_id=None, kubelet="v1.33.13",
         node_info=True):
    obj = {"metadata": {"name": name, "labels": dict(labels or {}), "annotations": dict(annotations or {})},
           "spec": {}, "status": {}}
    if node_info:
        obj["status"]["nodeInfo"] = {"osImage": os_image, "kernelVersion": kernel, "architecture": arch,
                                     "operatingSystem": operating_system, "kubeletVersion": kubelet}
    if provider_id:
        obj["spec"]["providerID"] = provider_id
    return obj


def judge(**kwargs):
    cgroup = kwargs.pop("cgroup_v2_path", None)
    return node_rules.judge_node(node_rules.node_facts(node(**kwargs)), cgroup)


# -- kernel parsing ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("5.15.0-1051-azure", (5, 15, 0, 1051)),
    ("6.1.0-18-cloud-amd64", (6, 1, 0, 18)),
    ("5.10.209-198.858.amzn2.x86_64", (5, 10, 209, 198)),
    ("4.18.0-193.el8.x86_64", (4, 18, 0, 193)),
    ("4.18.0-147.el8.x86_64", (4, 18, 0, 147)),
    ("4.18.0-193.28.1.el8_2.x86_64", (4, 18, 0, 193)),
    ("6.8.0", (6, 8, 0, 0)),
    ("5.4", (5, 4, 0, 0)),
    ("6.1.74-talos", (6, 1, 74, 0)),
    ("  5.3.0-1-generic ", (5, 3, 0, 1)),
    ("", None),
    (None, None),
    ("abc", None),
    ("five.ten", None),
    (5.15, None),
    ("10.0.17763.5329", (10, 0, 17763, 0)),
])
def test_parse_kernel(text, expected):
    assert node_rules.parse_kernel(text) == expected


# -- OS and kernel table ----------------------------------------------------------------------------

@pytest.mark.parametrize("os_image, kernel, expected", [
    # Ubuntu 20.04 or newer passes; older fails whatever the kernel
    ("Ubuntu 22.04.4 LTS", "5.15.0-105-generic", "ok"),
    ("Ubuntu 20.04.6 LTS", "5.4.0-170-generic", "ok"),
    ("Ubuntu 24.04 LTS", "6.8.0-31-generic", "ok"),
    ("Ubuntu 18.04.6 LTS", "5.4.0-1109-azure", "fail"),
    ("Ubuntu 18.04.6 LTS", "6.1.0-18-cloud-amd64", "fail"),
    ("Ubuntu 16.04.7 LTS", "4.15.0-142-generic", "fail"),
    # RHEL 8.2+ by kernel release number; 8.1 fails; 9.x passes
    ("Red Hat Enterprise Linux 8.2 (Ootpa)", "4.18.0-193.el8.x86_64", "ok"),
    ("Red Hat Enterprise Linux 8.6 (Ootpa)", "4.18.0-372.9.1.el8.x86_64", "ok"),
    ("Red Hat Enterprise Linux 8.4 (Ootpa)", "4.18.0-147.el8.x86_64", "fail"),
    ("Red Hat Enterprise Linux 8.1 (Ootpa)", "4.18.0-147.el8.x86_64", "fail"),
    ("Red Hat Enterprise Linux 8.1 (Ootpa)", "4.18.0-193.el8.x86_64", "fail"),
    ("Red Hat Enterprise Linux 9.3 (Plow)", "5.14.0-362.8.1.el9_3.x86_64", "ok"),
    ("Red Hat Enterprise Linux Server 7.9 (Maipo)", "3.10.0-1160.el7.x86_64", "fail"),
    # CentOS Stream / Rocky / Alma 8 the same way, 9 passes
    ("CentOS Stream 8", "4.18.0-193.el8.x86_64", "ok"),
    ("CentOS Stream 8", "4.18.0-147.el8.x86_64", "fail"),
    ("CentOS Stream 9", "5.14.0-391.el9.x86_64", "ok"),
    ("Rocky Linux 8.9 (Green Obsidian)", "4.18.0-513.5.1.el8_9.x86_64", "ok"),
    ("Rocky Linux 8.1 (Green Obsidian)", "4.18.0-147.el8.x86_64", "fail"),
    ("AlmaLinux 8.2 (Arctic Sphynx)", "4.18.0-192.el8.x86_64", "fail"),
    ("AlmaLinux 9.3 (Shamrock Pampas Cat)", "5.14.0-362.8.1.el9_3.x86_64", "ok"),
    ("CentOS Linux 7 (Core)", "3.10.0-1160.el7.x86_64", "fail"),
    # any other distribution: kernel 5.3 or newer
    ("Debian GNU/Linux 12 (bookworm)", "6.1.0-18-cloud-amd64", "ok"),
    ("Amazon Linux 2", "5.10.209-198.858.amzn2.x86_64", "ok"),
    ("Amazon Linux 2", "4.14.336-257.562.amzn2.x86_64", "fail"),
    ("Container-Optimized OS from Google", "5.15.0-1051-azure", "ok"),
    ("SUSE Linux Enterprise Server 15 SP5", "5.3.18-150300.59.106-default", "ok"),
    ("SUSE Linux Enterprise Server 15 SP1", "4.12.14-197.29-default", "fail"),
    ("Bottlerocket OS 1.19.2 (aws-k8s-1.29)", "6.1.72", "ok"),
    ("Talos (v1.6.4)", "6.1.74-talos", "ok"),
    ("Flatcar Container Linux by Kinvolk 3815.2.0 (Oklo)", "6.1.77-flatcar", "ok"),
    ("Fedora CoreOS 39.20240210.3.0", "6.7.4-200.fc39.x86_64", "ok"),
    ("Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)", "5.14.0-284.52.1.el9_2.x86_64", "ok"),
    ("Red Hat Enterprise Linux CoreOS 412.86.202303011010-0 (Ootpa)", "4.18.0-372.46.1.el8_6.x86_64", "ok"),
    # odd strings
    ("Debian GNU/Linux 12 (bookworm)", "weird-kernel", "warn"),
    ("Red Hat Enterprise Linux 8.4 (Ootpa)", "", "warn"),
    ("", "", "warn"),
    ("", "6.1.0-18-cloud-amd64", "ok"),
    ("", "4.19.0-26-amd64", "fail"),
    ("!!!", "5.2.21", "fail"),
    ("Windows Server 2019 Datacenter", "10.0.17763.5329", "fail"),
])
def test_os_kernel_table(os_image, kernel, expected):
    got = judge(os_image=os_image, kernel=kernel)["os_kernel"]
    assert got["verdict"] == expected, got


def test_reasons_name_the_rule():
    assert judge(os_image="Red Hat Enterprise Linux 8.1 (Ootpa)",
                 kernel="4.18.0-147.el8.x86_64")["os_kernel"]["reason"] == \
        "RHEL 8.1 is older than 8.2 (kernel 4.18.0-147.el8.x86_64)"
    assert "older than 4.18.0-193" in judge(os_image="Red Hat Enterprise Linux 8.4 (Ootpa)",
                                            kernel="4.18.0-147.el8.x86_64")["os_kernel"]["reason"]
    assert "whatever the kernel" in judge(os_image="Ubuntu 18.04.6 LTS", kernel="5.4.0-1109-azure")[
        "os_kernel"]["reason"]
    assert "older than 5.3" in judge(os_image="Amazon Linux 2", kernel="4.14.336-257.562.amzn2.x86_64")[
        "os_kernel"]["reason"]


def test_parse_os_versions():
    assert node_rules.parse_os("Ubuntu 22.04.4 LTS")["version"] == (22, 4)
    assert node_rules.parse_os("Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)")["version"] == (9, 2)
    assert node_rules.parse_os("CentOS Stream 8")["version"] == (8,)
    assert node_rules.parse_os(None) == {"id": "unknown", "version": None, "name": "", "immutable": False}
    assert node_rules.parse_os(42)["id"] == "unknown"
    assert node_rules.parse_os("Gentoo Linux")["id"] == "other"


# -- architecture -----------------------------------------------------------------------------------

@pytest.mark.parametrize("arch, expected", [
    ("amd64", "ok"), ("arm64", "ok"), ("x86_64", "ok"), ("aarch64", "ok"), ("AMD64", "ok"),
    ("s390x", "fail"), ("ppc64le", "fail"), ("arm", "fail"), ("386", "fail"), ("aarch64_be", "fail"),
    ("", "warn"), (None, "warn"),
])
def test_architecture(arch, expected):
    assert node_rules.check_architecture(arch)["verdict"] == expected


def test_architecture_falls_back_to_the_label():
    n = node(node_info=False, labels={"kubernetes.io/arch": "s390x"})
    assert node_rules.judge_node(node_rules.node_facts(n))["architecture"]["verdict"] == "fail"


# -- missing nodeInfo and odd shapes -------------------------------------------------------------

def test_missing_node_info_warns_and_never_raises():
    checks = node_rules.judge_node(node_rules.node_facts(node(node_info=False)))
    assert checks["architecture"]["verdict"] == "warn"
    assert checks["os_kernel"]["verdict"] == "warn"
    assert "missing nodeInfo" in checks["os_kernel"]["reason"]
    assert checks["windows"]["verdict"] == "ok"
    assert checks["immutable_os"]["verdict"] == "ok"


@pytest.mark.parametrize("obj", [{}, None, {"metadata": None, "status": None, "spec": None},
                                 {"status": {"nodeInfo": None}}, "not a node"])
def test_node_facts_of_broken_objects(obj):
    facts = node_rules.node_facts(obj)
    checks = node_rules.judge_node(facts)
    assert set(checks) == set(r.NODE_CHECKS)
    assert r.worst(checks.values()) == "warn"


# -- Windows, immutable OS ----------------------------------------------------------------------------

def test_windows_by_node_info_and_by_label():
    by_info = judge(os_image="Windows Server 2019 Datacenter", kernel="10.0.17763.5329",
                    operating_system="windows")
    assert by_info["windows"]["verdict"] == "fail"
    assert by_info["os_kernel"]["verdict"] == "fail"
    by_label = node_rules.judge_node(node_rules.node_facts(node(node_info=False, labels={"kubernetes.io/os": "windows"})))
    assert by_label["windows"]["verdict"] == "fail"
    assert judge()["windows"]["verdict"] == "ok"


@pytest.mark.parametrize("os_image", ["Talos (v1.6.4)", "Bottlerocket OS 1.19.2 (aws-k8s-1.29)",
                                      "Flatcar Container Linux by Kinvolk 3815.2.0 (Oklo)",
                                      "Fedora CoreOS 39.20240210.3.0"])
def test_immutable_os_warns_with_the_field_until_cgroup_path_is_set(os_image):
    warned = judge(os_image=os_image, kernel="6.1.74")["immutable_os"]
    assert warned["verdict"] == "warn"
    assert "FelixConfiguration default spec.cgroupV2Path" in warned["reason"]
    assert warned["field"] == "FelixConfiguration default spec.cgroupV2Path"
    fixed = judge(os_image=os_image, kernel="6.1.74", cgroup_v2_path="/run/calico/cgroup")["immutable_os"]
    assert fixed["verdict"] == "ok"
    assert "/run/calico/cgroup" in fixed["reason"]


def test_mutable_os_is_not_immutable():
    assert judge(os_image="Ubuntu 22.04.4 LTS")["immutable_os"]["verdict"] == "ok"
    assert judge(os_image="Red Hat Enterprise Linux CoreOS 415.92.1 (Plow)")["immutable_os"]["verdict"] == "ok"


# -- platform ------------------------------------------------------------------------------------------

def facts_of(*nodes):
    return [node_rules.node_facts(n) for n in nodes]


@pytest.mark.parametrize("labels, annotations, kubelet, provider, groups, expected", [
    ({"cloud.google.com/gke-nodepool": "pool-1"}, {}, "v1.29.1-gke.1589018", "gce://p/z/n", [], "gke"),
    ({}, {}, "v1.29.1-gke.1589018", "", [], "gke"),
    ({}, {}, "v1.33.13", "gce://p/z/n", [], "generic"),
    ({}, {}, "v1.33.13", "", ["networking.gke.io/v1"], "gke"),
    ({"kubernetes.azure.com/cluster": "MC_rg"}, {}, "v1.29.0", "azure:///sub/x", [], "aks"),
    ({"eks.amazonaws.com/nodegroup": "ng-1"}, {}, "v1.29.0-eks-5e0fdde", "aws:///us-west-2a/i-1", [], "eks"),
    ({}, {}, "v1.29.0-eks-5e0fdde", "aws:///us-west-2a/i-1", [], "eks"),
    ({"run.tanzu.vmware.com/kubernetesDistributionVersion": "v1.26.5"}, {}, "v1.26.5+vmware.2", "", [],
     "tkg"),
    ({}, {"rke.cattle.io/external-ip": "10.0.0.1"}, "v1.27.10", "", [], "rke"),
    ({}, {}, "v1.28.5+rke2r1", "", [], "rke"),
    ({"node.openshift.io/os_id": "rhcos"}, {}, "v1.28.6+f1618d5", "", [], "openshift"),
    ({}, {}, "v1.28.6", "", ["config.openshift.io/v1", "route.openshift.io/v1"], "openshift"),
    ({"kops.k8s.io/instancegroup": "nodes"}, {}, "v1.29.0", "aws:///us-east-1a/i-2", [], "kops"),
    ({"com.docker.ucp.orchestrator.kubernetes": "true"}, {}, "v1.27.0", "", [], "mke"),
    ({}, {"kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock"}, "v1.33.0",
     "", [], "kubeadm"),
    ({}, {}, "v1.33.13", "", ["apps/v1", "crd.projectcalico.org/v1"], "generic"),
])
def test_detect_platform(labels, annotations, kubelet, provider, groups, expected):
    facts = facts_of(node(labels=labels, annotations=annotations, kubelet=kubelet, provider_id=provider))
    assert cluster_rules.detect_platform(facts, groups)["name"] == expected


def test_detect_platform_prefers_the_specific_one_and_keeps_evidence():
    facts = facts_of(node("a", annotations={"kubeadm.alpha.kubernetes.io/cri-socket": "x"}),
                     node("b", labels={"cloud.google.com/gke-nodepool": "p"}))
    got = cluster_rules.detect_platform(facts)
    assert got["name"] == "gke"
    assert got["evidence"] == ["label cloud.google.com/gke-nodepool (node b)"]
    assert got["other_signals"] == ["kubeadm"]


@pytest.mark.parametrize("name", ["gke", "tkg", "rke"])
def test_unsupported_platforms_fail(name):
    details = cluster_rules.platform_details(name, facts_of(node()), source="override")
    assert cluster_rules.check_platform(details)["verdict"] == "fail"
    assert details["supported"] is False


@pytest.mark.parametrize("name", ["generic", "kubeadm", "openshift", "kops", "mke", "eks"])
def test_supported_platforms_pass(name):
    assert cluster_rules.check_platform(cluster_rules.platform_details(name, facts_of(node())))["verdict"] == "ok"


def test_aks_with_azure_cni_cannot_disable_kube_proxy():
    facts = facts_of(node(labels={"kubernetes.azure.com/cluster": "MC", "kubernetes.azure.com/azure-cni-overlay":
                                  "true"}))
    details = cluster_rules.platform_details("aks", facts)
    assert details["kube_proxy_can_be_disabled"] is False
    assert details["felix_configuration"] == {"bpfKubeProxyIptablesCleanupEnabled": False}
    got = cluster_rules.check_platform(details)
    assert got["verdict"] == "warn"
    assert "bpfKubeProxyIptablesCleanupEnabled: false" in got["reason"]


def test_aks_with_byo_cni_can_disable_kube_proxy():
    facts = facts_of(node(labels={"kubernetes.azure.com/cluster": "MC",
                                  "kubernetes.azure.com/network-plugin": "none"}))
    details = cluster_rules.platform_details("aks", facts)
    assert details["kube_proxy_can_be_disabled"] is True
    assert details["felix_configuration"] == {}
    assert cluster_rules.check_platform(details)["verdict"] == "ok"


def test_aks_without_cni_labels_warns_that_it_cannot_tell():
    details = cluster_rules.platform_details("aks", facts_of(node(labels={"kubernetes.azure.com/cluster": "MC"})))
    assert details["kube_proxy_can_be_disabled"] is None
    assert cluster_rules.check_platform(details)["verdict"] == "warn"


def test_eks_with_bottlerocket_needs_flex_volume_path():
    facts = facts_of(node("br-1", os_image="Bottlerocket OS 1.19.2 (aws-k8s-1.29)", kernel="6.1.72"),
                     node("al-1", os_image="Amazon Linux 2", kernel="5.10.209-198.858.amzn2.x86_64"))
    details = cluster_rules.platform_details("eks", facts)
    assert details["installation"] == {"flexVolumePath": "/var/lib/kubelet/plugins"}
    assert details["operator_dns_nameservers"] == ["169.254.169.253"]
    got = cluster_rules.check_platform(details)
    assert got["verdict"] == "warn" and "flexVolumePath: /var/lib/kubelet/plugins" in got["reason"]
    plain = cluster_rules.platform_details("eks", facts[1:])
    assert plain["installation"] == {} and cluster_rules.check_platform(plain)["verdict"] == "ok"


# -- kube-proxy ---------------------------------------------------------------------------------------

KUBEADM_CONF = """apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
ipvs:
  scheduler: ""
  strictARP: false
kind: KubeProxyConfiguration
mode: %s
winkernel:
  enableDSR: false
"""


@pytest.mark.parametrize("text, expected", [
    (KUBEADM_CONF % "ipvs", "ipvs"),
    (KUBEADM_CONF % '"iptables"', "iptables"),
    (KUBEADM_CONF % '""', ""),
    (KUBEADM_CONF % "IPVS  # switched later", "ipvs"),
    ('{"kind":"KubeProxyConfiguration","mode":"ipvs"}', "ipvs"),
    ("kind: KubeProxyConfiguration\ndetectLocalMode: ClusterCIDR\n", None),
    ("nested:\n  mode: ipvs\n", None),
    (None, None),
])
def test_kube_proxy_mode_from_config(text, expected):
    assert cluster_rules.kube_proxy_mode_from_config(text) == expected


def test_kube_proxy_mode_from_args():
    assert cluster_rules.kube_proxy_mode_from_args(["kube-proxy", "--proxy-mode=ipvs"]) == "ipvs"
    assert cluster_rules.kube_proxy_mode_from_args(["kube-proxy", "--proxy-mode", "iptables"]) == "iptables"
    assert cluster_rules.kube_proxy_mode_from_args(["kube-proxy", "--config=/var/lib/kube-proxy/config.conf"]) is None


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


# -- host-level ---------------------------------------------------------------------------------------

OS_RELEASE = '''NAME="Red Hat Enterprise Linux"
VERSION="8.1 (Ootpa)"
ID="rhel"
VERSION_ID="8.1"
PRETTY_NAME="Red Hat Enterprise Linux 8.1 (Ootpa)"
'''


def test_host_facts_are_judged_by_the_same_rules_as_api_nodes():
    host = node_rules.host_facts("h1", "4.18.0-147.el8.x86_64", "x86_64", node_rules.parse_os_release(OS_RELEASE))
    api = node_rules.node_facts(node(os_image="Red Hat Enterprise Linux 8.1 (Ootpa)", kernel="4.18.0-147.el8.x86_64"))
    assert node_rules.judge_node(host) == node_rules.judge_node(api)
    fcos = node_rules.parse_os_release('ID=fedora\nVARIANT_ID=coreos\nNAME="Fedora Linux"\nVERSION_ID=39\n')
    assert node_rules.judge_node(node_rules.host_facts("h", "6.7.4", "aarch64", fcos))["immutable_os"]["verdict"] == "warn"


@pytest.mark.parametrize("host, check, expected", [
    ({"bpffs_mounted": True, "bpffs_supported": True}, "bpffs", "ok"),
    ({"bpffs_mounted": False, "bpffs_supported": True}, "bpffs", "warn"),
    ({"bpffs_mounted": False, "bpffs_supported": False}, "bpffs", "fail"),
    ({"bpffs_mounted": False, "bpffs_supported": None}, "bpffs", "warn"),
    ({"cgroup2_mount": "/sys/fs/cgroup", "cgroup2_supported": True}, "cgroup_v2", "ok"),
    ({"cgroup2_mount": "", "cgroup2_supported": True}, "cgroup_v2", "warn"),
    ({"cgroup2_mount": "", "cgroup2_supported": False}, "cgroup_v2", "fail"),
    ({"vxlan_loaded": True}, "vxlan_module", "ok"),
    ({"vxlan_loaded": False, "vxlan_available": "module x/vxlan.ko"}, "vxlan_module", "ok"),
    ({"vxlan_loaded": False, "vxlan_available": ""}, "vxlan_module", "fail"),
    ({"vxlan_loaded": False, "vxlan_available": None}, "vxlan_module", "warn"),
    ({"vlan_devices": ["eth0.100"]}, "vlan_devices", "fail"),
    ({"vlan_devices": []}, "vlan_devices", "ok"),
])
def test_host_rules(host, check, expected):
    facts = node_rules.host_facts("h", "6.1.0", "amd64", {"PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)"})
    assert node_rules.judge_host(facts, host)[check]["verdict"] == expected


# -- ignore, summary, the check names ------------------------------------------------------------

def test_apply_ignore_downgrades_only_failures():
    checks = {"os_kernel": r.verdict("fail", "old"), "windows": r.verdict("ok", "Linux"),
              "platform": r.verdict("fail", "GKE")}
    r.apply_ignore(checks, ["os_kernel", "windows"])
    assert checks["os_kernel"] == {"verdict": "warn", "reason": "ignored by request: old", "ignored": True}
    assert checks["windows"] == {"verdict": "ok", "reason": "Linux"}
    assert checks["platform"]["verdict"] == "fail"


def test_summary_lists_every_failing_node_and_check():
    nodes = {}
    for name, kwargs in (("good", {}), ("rhel", {"os_image": "Red Hat Enterprise Linux 8.1 (Ootpa)",
                                                 "kernel": "4.18.0-147.el8.x86_64"}),
                         ("z", {"arch": "s390x"})):
        checks = node_rules.judge_node(node_rules.node_facts(node(name, **kwargs)))
        nodes[name] = {"verdict": r.worst(checks.values()), "checks": checks}
    checks = {"sctp_services": cluster_rules.findings(["Service/a/b"], "SCTP", "none"),
              "platform": r.verdict("ok", "kubeadm")}
    s = r.summarise(nodes, checks)
    assert s["eligible"] is False and s["verdict"] == "fail"
    assert s["nodes"] == {"total": 3, "ok": 1, "warn": 0, "fail": 2}
    assert s["failing"] == [
        "node rhel: os_kernel: RHEL 8.1 is older than 8.2 (kernel 4.18.0-147.el8.x86_64)",
        "node z: architecture: s390x is not supported by the eBPF data plane (amd64 and arm64 only)",
        "sctp_services: SCTP: 1 (Service/a/b)",
    ]
    assert s["by_check"]["os_kernel"] == {"ok": 2, "warn": 0, "fail": 1}
    assert all(line in s["message"] for line in s["failing"])
    ok = r.summarise({"good": nodes["good"]}, {"platform": checks["platform"]})
    assert ok["eligible"] is True and ok["failing"] == []


def test_check_names_are_unique_and_cover_every_group():
    assert len(set(r.CHECK_NAMES)) == len(r.CHECK_NAMES)
    assert set(r.CHECK_NAMES) == set(r.NODE_CHECKS) | set(r.CLUSTER_CHECKS) | set(r.HOST_CHECKS)


def test_role_and_module_choices_are_the_known_check_names():
    """The role validates preflight_ignore against the names defined in preflight_rules (one list)."""
    spec = yaml.safe_load((REPO / "roles/preflight/meta/argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"]["options"]
    assert options["preflight_ignore"]["choices"] == list(r.CHECK_NAMES)
    assert options["preflight_platform"]["choices"] == list(r.PLATFORM_CHOICES)
    for module in ("ebpf_preflight_info", "ebpf_host_preflight_info"):
        text = (REPO / ("plugins/modules/%s.py" % module)).read_text()
        doc = yaml.safe_load(text.split('DOCUMENTATION = r"""', 1)[1].split('"""', 1)[0])
        assert doc["options"]["ignore"]["choices"] == list(r.CHECK_NAMES)
    doc = yaml.safe_load((REPO / "plugins/modules/ebpf_preflight_info.py").read_text()
                         .split('DOCUMENTATION = r"""', 1)[1].split('"""', 1)[0])
    assert doc["options"]["platform"]["choices"] == list(r.PLATFORM_CHOICES)


def test_rules_do_not_mutate_their_input():
    n = node(labels={"kubernetes.azure.com/cluster": "x"})
    before = copy.deepcopy(n)
    facts = node_rules.node_facts(n)
    node_rules.judge_node(facts)
    cluster_rules.detect_platform([facts])
    assert n == before
