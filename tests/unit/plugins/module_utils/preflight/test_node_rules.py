"""preflight/node_rules.py: the eBPF preflight's per-node rule table (OS, kernel, architecture, Windows, immutable OS,
host checks), every example of issue 3 plus edge cases (no cluster)."""

import copy

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform import detect
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform.nodes import node_facts
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import node_rules, rules as r

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.node_objects import node


def judge(**kwargs):
    cgroup = kwargs.pop("cgroup_v2_path", None)
    return node_rules.judge_node(node_facts(node(**kwargs)), cgroup)


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
    assert node_rules.judge_node(node_facts(n))["architecture"]["verdict"] == "fail"


# -- missing nodeInfo and odd shapes -------------------------------------------------------------

def test_missing_node_info_warns_and_never_raises():
    checks = node_rules.judge_node(node_facts(node(node_info=False)))
    assert checks["architecture"]["verdict"] == "warn"
    assert checks["os_kernel"]["verdict"] == "warn"
    assert "missing nodeInfo" in checks["os_kernel"]["reason"]
    assert checks["windows"]["verdict"] == "ok"
    assert checks["immutable_os"]["verdict"] == "ok"


@pytest.mark.parametrize("obj", [{}, None, {"metadata": None, "status": None, "spec": None},
                                 {"status": {"nodeInfo": None}}, "not a node"])
def test_node_facts_of_broken_objects(obj):
    facts = node_facts(obj)
    checks = node_rules.judge_node(facts)
    assert set(checks) == set(r.NODE_CHECKS)
    assert r.worst(checks.values()) == "warn"


# -- Windows, immutable OS ----------------------------------------------------------------------------

def test_windows_by_node_info_and_by_label():
    by_info = judge(os_image="Windows Server 2019 Datacenter", kernel="10.0.17763.5329",
                    operating_system="windows")
    assert by_info["windows"]["verdict"] == "fail"
    assert by_info["os_kernel"]["verdict"] == "fail"
    by_label = node_rules.judge_node(node_facts(node(node_info=False, labels={"kubernetes.io/os": "windows"})))
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


# -- host-level ---------------------------------------------------------------------------------------

OS_RELEASE = '''NAME="Red Hat Enterprise Linux"
VERSION="8.1 (Ootpa)"
ID="rhel"
VERSION_ID="8.1"
PRETTY_NAME="Red Hat Enterprise Linux 8.1 (Ootpa)"
'''


def test_host_facts_are_judged_by_the_same_rules_as_api_nodes():
    host = node_rules.host_facts("h1", "4.18.0-147.el8.x86_64", "x86_64", node_rules.parse_os_release(OS_RELEASE))
    api = node_facts(node(os_image="Red Hat Enterprise Linux 8.1 (Ootpa)", kernel="4.18.0-147.el8.x86_64"))
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


def test_rules_do_not_mutate_their_input():
    n = node(labels={"kubernetes.azure.com/cluster": "x"})
    before = copy.deepcopy(n)
    facts = node_facts(n)
    node_rules.judge_node(facts)
    detect.detect_platform([facts])
    assert n == before
