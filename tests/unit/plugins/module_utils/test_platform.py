"""The platform package (module_utils/platform): the detection, the per-platform facts, the server URL and kube-proxy's
mode, read where the preflight, services_endpoint and kube_proxy packages now read them."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform import detect, facts, kube_proxy_mode, server
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.nodes import node_facts, parse_os
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import cluster_rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.services_endpoint import rules as endpoint_rules


def _node(name, labels=None, provider_id="", os_image="Ubuntu 22.04.4 LTS"):
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"providerID": provider_id},
            "status": {"nodeInfo": {"osImage": os_image, "kernelVersion": "6.8.0", "architecture": "amd64",
                                    "kubeletVersion": "v1.33.1", "operatingSystem": "linux"}}}


def test_detection_from_nodes_and_api_groups():
    eks = [node_facts(_node("a", {"eks.amazonaws.com/nodegroup": "ng"}, "aws:///eu-west-1a/i-1",
                            "Bottlerocket OS 1.19.0 (aws-k8s-1.29)"))]
    found = detect.detect_platform(eks, ["apps/v1"])
    assert found["name"] == "eks" and found["nodes"] == 1
    details = detect.platform_details("eks", eks, detection=found)
    assert details["operator_dns_nameservers"] == [facts.AWS_DNS]
    assert details["installation"] == {"flexVolumePath": facts.FLEX_VOLUME_PATH}
    assert detect.detect_platform([node_facts(_node("b"))], ["route.openshift.io/v1"])["name"] == "openshift"
    assert detect.detect_platform([node_facts(_node("c"))])["name"] == "generic"
    assert parse_os("Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)")["id"] == "rhcos"


def test_facts_and_server():
    assert set(facts.UNSUPPORTED_PLATFORMS) <= set(facts.PLATFORMS) and facts.PLATFORM_CHOICES[0] == "auto"
    assert facts.DEFAULT_PORTS["openshift"] == 6443 and facts.MKE_HOST == "proxy.local"
    assert server.parse_server("https://[fd00::1]:6443")["host"] == "fd00::1"
    assert server.parse_server("http://api.example.com")["port"] == 80
    assert server.kops_cluster_name_from_host("api.internal.prod.example.com") == "prod.example.com"
    assert server.kops_cluster_name_from_host("10.0.0.1") is None


def test_kube_proxy_mode():
    assert kube_proxy_mode.kube_proxy_mode_from_config("mode: ipvs\n") == "ipvs"
    assert kube_proxy_mode.kube_proxy_mode_from_args(["kube-proxy", "--proxy-mode", "iptables"]) == "iptables"


def test_one_definition_each():
    """The feature packages name the platform package's objects, they do not define their own."""
    assert cluster_rules.detect_platform is detect.detect_platform
    assert cluster_rules.kube_proxy_mode_from_config is kube_proxy_mode.kube_proxy_mode_from_config
    assert endpoint_rules.parse_server is server.parse_server and endpoint_rules.AWS_DNS == facts.AWS_DNS
