"""platform/nodes.py: the facts of a Node object and the OS named by its osImage."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform import nodes
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.nodes import node_facts, parse_os


def test_parse_os_versions():
    assert parse_os("Ubuntu 22.04.4 LTS")["version"] == (22, 4)
    assert parse_os("Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)")["version"] == (9, 2)
    assert parse_os("CentOS Stream 8")["version"] == (8,)
    assert parse_os(None) == {"id": "unknown", "version": None, "name": "", "immutable": False}
    assert parse_os(42)["id"] == "unknown"
    assert parse_os("Gentoo Linux")["id"] == "other"


@pytest.mark.parametrize("os_image, os_id, version, immutable", [
    ("Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)", "rhcos", (9, 2), False),
    ("Red Hat Enterprise Linux 8.6 (Ootpa)", "rhel", (8, 6), False),
    ("Rocky Linux 9.3 (Blue Onyx)", "rocky", (9, 3), False),
    ("AlmaLinux 8.9 (Midnight Oncilla)", "almalinux", (8, 9), False),
    ("CentOS Linux 7 (Core)", "centos", (7,), False),
    ("Windows Server 2019 Datacenter", "windows", None, False),
    ("Talos (v1.6.4)", "talos", (1, 6), True),
    ("Bottlerocket OS 1.19.2 (aws-k8s-1.29)", "bottlerocket", (1, 19), True),
    ("Flatcar Container Linux by Kinvolk 3815.2.0 (Oklo)", "flatcar", (3815, 2), True),
    ("Fedora CoreOS 39.20240210.3.0", "fedora-coreos", (39,), True),
    ("  Ubuntu 24.04 LTS  ", "ubuntu", (24, 4), False),
])
def test_parse_os_names_the_distribution_its_version_and_whether_it_is_immutable(os_image, os_id, version, immutable):
    got = parse_os(os_image)
    assert (got["id"], got["version"], got["immutable"]) == (os_id, version, immutable)
    assert got["name"] == os_image.strip()


def test_version_tuple_stops_at_the_first_missing_group():
    assert nodes.version_tuple("9", "2") == (9, 2)
    assert nodes.version_tuple("8", None, "1") == (8,)
    assert nodes.version_tuple("", "3") is None
    assert nodes.version_tuple() is None


def test_node_facts_read_node_info_and_fall_back_to_the_labels():
    node = {"metadata": {"name": "n1", "labels": {"kubernetes.io/arch": "arm64", "kubernetes.io/os": "linux"},
                         "annotations": {"a": "b"}},
            "spec": {"providerID": "aws:///eu-west-1a/i-1"},
            "status": {"nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "osImage": "Ubuntu 22.04.4 LTS",
                                    "kernelVersion": "6.8.0", "kubeletVersion": "v1.33.1"}}}
    assert node_facts(node) == {
        "name": "n1", "source": "api", "architecture": "amd64", "operating_system": "linux",
        "os_image": "Ubuntu 22.04.4 LTS", "kernel": "6.8.0", "kubelet_version": "v1.33.1",
        "provider_id": "aws:///eu-west-1a/i-1", "labels": node["metadata"]["labels"], "annotations": {"a": "b"}}
    del node["status"]
    facts = node_facts(node)
    assert (facts["architecture"], facts["operating_system"], facts["os_image"]) == ("arm64", "linux", "")
    beta = node_facts({"metadata": {"labels": {"beta.kubernetes.io/arch": "s390x", "beta.kubernetes.io/os": "windows"}}})
    assert (beta["architecture"], beta["operating_system"], beta["name"]) == ("s390x", "windows", "")


@pytest.mark.parametrize("obj", [None, "not a node", {}, {"metadata": None, "spec": None, "status": {"nodeInfo": None}}])
def test_node_facts_of_anything_that_is_not_a_node_are_empty(obj):
    facts = node_facts(obj)
    assert facts["source"] == "api" and facts["labels"] == {} and facts["annotations"] == {}
    assert all(facts[k] == "" for k in ("name", "architecture", "operating_system", "os_image", "kernel",
                                        "kubelet_version", "provider_id"))
