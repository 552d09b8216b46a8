"""platform/detect.py: the platform detected from the nodes and the API groups, its details, and ``choose_platform``
(which reads the API groups itself)."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform import detect, facts
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.detect import choose_platform
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.nodes import node_facts

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.node_objects import node
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.read_only_transport import Transport, client


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


# -- platform ------------------------------------------------------------------------------------------

def facts_of(*nodes):
    return [node_facts(n) for n in nodes]


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
    assert detect.detect_platform(facts, groups)["name"] == expected


def test_detect_platform_prefers_the_specific_one_and_keeps_evidence():
    facts = facts_of(node("a", annotations={"kubeadm.alpha.kubernetes.io/cri-socket": "x"}),
                     node("b", labels={"cloud.google.com/gke-nodepool": "p"}))
    got = detect.detect_platform(facts)
    assert got["name"] == "gke"
    assert got["evidence"] == ["label cloud.google.com/gke-nodepool (node b)"]
    assert got["other_signals"] == ["kubeadm"]


def test_choose_platform_reads_the_api_groups_itself():
    t = Transport(groups=["operator.openshift.io/v1"])
    chosen = choose_platform(client(t), "auto")
    assert (chosen["name"], chosen["source"]) == ("openshift", "detected")
    assert ("GET", "/apis") in t.log
