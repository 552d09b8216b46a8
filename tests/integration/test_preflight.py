"""eBPF preflight (module ebpf_preflight_info, role preflight) against the local control plane.

Each case shapes kwok nodes (or objects) for itself and removes them afterwards: the control plane is shared
by the whole run. Assertions name the exact check, node and verdict.
"""

import contextlib
import json
import platform
import sys
import urllib.request

import pytest
import yaml

from localcp.fixtures import Ansible
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import yaml_text

pytestmark = pytest.mark.integration

PLAY = """
- name: Preflight
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Run the preflight
      calico_ops.lifecycle.ebpf_preflight_info:
        platform: "{{ pf_platform | default('auto') }}"
        ignore: "{{ pf_ignore | default([]) }}"
      register: preflight
"""

UBUNTU_2204 = {"osImage": "Ubuntu 22.04.4 LTS", "kernelVersion": "5.15.0-105-generic"}


def preflight(ansible, check=False, **extra_vars):
    res = ansible.playbook(PLAY, extra_vars=extra_vars or None, check=check)
    assert res.rc == 0, res.stdout[-4000:] + res.stderr[-4000:]
    return res.result_of("Run the preflight")


@contextlib.contextmanager
def temporary_nodes(cluster, *specs):
    names = [s["metadata"]["name"] for s in specs]
    try:
        cluster.add_nodes(list(specs))
        yield names
    finally:
        cluster.remove_nodes(names)
        cluster.wait_for(lambda: all(cluster.kubectl("get", "node", n, check=False).returncode != 0
                                     for n in names), timeout=60, what="the test nodes to go")


def role_task(res, name, host="localhost"):
    """A task result of the preflight role (the play output names role tasks ``<role> : <name>``)."""
    for t in res.tasks:
        if t["host"] == host and (t["task"] == name or t["task"].endswith(" : " + name)):
            return t["result"]
    raise KeyError("no task named %r in the play output: %s" % (name, [t["task"] for t in res.tasks]))


def failing_lines_about(result, node):
    return [line for line in result["summary"]["failing"] if line.startswith("node %s:" % node)]


# -- per node ---------------------------------------------------------------------------------------

@pytest.mark.oldest_core  # also on ansible-core 2.16 in make test (tests/integration/conftest.py)
def test_all_good_ubuntu_2204_node(cluster, ansible):
    with temporary_nodes(cluster, cluster.node_spec("pf-ubuntu", **UBUNTU_2204)):
        result = preflight(ansible)
    node = result["nodes"]["pf-ubuntu"]
    assert node["verdict"] == "ok", node
    assert {c: v["verdict"] for c, v in node["checks"].items()} == {
        "architecture": "ok", "os_kernel": "ok", "windows": "ok", "immutable_os": "ok"}
    assert node["checks"]["os_kernel"]["reason"] == "Ubuntu 22.04.4 LTS (20.04 or newer)"
    assert result["platform"]["name"] == "generic"
    assert result["checks"]["platform"]["verdict"] == "ok"
    assert result["eligible"] is True, result["summary"]["failing"]
    assert result["changed"] is False


def test_rhel_81_with_kernel_4_18_0_147_fails_os_kernel(cluster, ansible):
    spec = cluster.node_spec("pf-rhel81", osImage="Red Hat Enterprise Linux 8.1 (Ootpa)",
                             kernelVersion="4.18.0-147.el8.x86_64")
    with temporary_nodes(cluster, spec):
        result = preflight(ansible)
    check = result["nodes"]["pf-rhel81"]["checks"]["os_kernel"]
    assert check == {"verdict": "fail", "reason": "RHEL 8.1 is older than 8.2 (kernel 4.18.0-147.el8.x86_64)"}
    assert result["eligible"] is False
    assert failing_lines_about(result, "pf-rhel81") == [
        "node pf-rhel81: os_kernel: RHEL 8.1 is older than 8.2 (kernel 4.18.0-147.el8.x86_64)"]


def test_windows_node_fails_windows(cluster, ansible):
    spec = cluster.node_spec("pf-win", osImage="Windows Server 2019 Datacenter", kernelVersion="10.0.17763.5329",
                             operatingSystem="windows")
    with temporary_nodes(cluster, spec):
        result = preflight(ansible)
    checks = result["nodes"]["pf-win"]["checks"]
    assert checks["windows"]["verdict"] == "fail"
    assert checks["os_kernel"] == {"verdict": "fail", "reason": "Windows Server 2019 Datacenter is not Linux"}
    assert result["nodes"]["node-1"]["checks"]["windows"]["verdict"] == "ok"
    assert result["eligible"] is False


def test_arm64_passes_and_s390x_fails_architecture(cluster, ansible):
    with temporary_nodes(cluster, cluster.node_spec("pf-arm64", architecture="arm64", **UBUNTU_2204),
                         cluster.node_spec("pf-s390x", architecture="s390x", **UBUNTU_2204)):
        result = preflight(ansible)
    assert result["nodes"]["pf-arm64"]["checks"]["architecture"] == {"verdict": "ok", "reason": "arm64"}
    assert result["nodes"]["pf-arm64"]["verdict"] == "ok"
    assert result["nodes"]["pf-s390x"]["checks"]["architecture"] == {
        "verdict": "fail", "reason": "s390x is not supported by the eBPF data plane (amd64 and arm64 only)"}
    assert failing_lines_about(result, "pf-s390x") == [
        "node pf-s390x: architecture: s390x is not supported by the eBPF data plane (amd64 and arm64 only)"]


def test_ignore_downgrades_a_failing_check(cluster, ansible):
    with temporary_nodes(cluster, cluster.node_spec("pf-s390x-ign", architecture="s390x", **UBUNTU_2204)):
        result = preflight(ansible, pf_ignore=["architecture"])
    check = result["nodes"]["pf-s390x-ign"]["checks"]["architecture"]
    assert check["verdict"] == "warn" and check["ignored"] is True
    assert failing_lines_about(result, "pf-s390x-ign") == []
    assert result["summary"]["ignored"] == ["architecture"]


# -- platform -----------------------------------------------------------------------------------------

def test_gke_labelled_cluster_fails_platform(cluster, ansible):
    specs = [cluster.node_spec("pf-gke-%d" % i, labels={"cloud.google.com/gke-nodepool": "default-pool",
                                                        "cloud.google.com/gke-os-distribution": "cos"},
                               provider_id="gce://proj/us-central1-a/pf-gke-%d" % i,
                               osImage="Container-Optimized OS from Google", kernelVersion="6.1.58+",
                               kubeletVersion="v1.29.1-gke.1589018") for i in (1, 2)]
    with temporary_nodes(cluster, *specs):
        result = preflight(ansible)
        overridden = preflight(ansible, pf_platform="kubeadm")
    assert result["platform"]["name"] == "gke"
    assert result["platform"]["detected"]["nodes"] == 2
    assert result["checks"]["platform"]["verdict"] == "fail"
    assert result["checks"]["platform"]["reason"].startswith("Google GKE (detected from label cloud.google.com/")
    assert result["nodes"]["pf-gke-1"]["checks"]["os_kernel"]["verdict"] == "ok"
    assert "platform: " + result["checks"]["platform"]["reason"] in result["summary"]["failing"]
    assert overridden["platform"]["name"] == "kubeadm"
    assert overridden["platform"]["source"] == "override"
    assert overridden["checks"]["platform"]["verdict"] == "ok"


def test_aks_cluster_with_azure_cni_cannot_disable_kube_proxy(cluster, ansible):
    specs = [cluster.node_spec("pf-aks-%d" % i, labels={"kubernetes.azure.com/cluster": "MC_rg_aks_westeurope",
                                                        "kubernetes.azure.com/role": "agent",
                                                        "kubernetes.azure.com/azure-cni-overlay": "true"},
                               provider_id="azure:///subscriptions/x/resourceGroups/mc/providers/"
                                           "Microsoft.Compute/virtualMachineScaleSets/aks/virtualMachines/%d" % i,
                               osImage="Ubuntu 22.04.4 LTS", kernelVersion="5.15.0-1051-azure") for i in (1, 2)]
    with temporary_nodes(cluster, *specs):
        result = preflight(ansible)
    assert result["platform"]["name"] == "aks"
    assert result["platform"]["kube_proxy_can_be_disabled"] is False
    assert result["platform"]["felix_configuration"] == {"bpfKubeProxyIptablesCleanupEnabled": False}
    assert result["checks"]["platform"]["verdict"] == "warn"
    assert "bpfKubeProxyIptablesCleanupEnabled: false" in result["checks"]["platform"]["reason"]
    assert result["nodes"]["pf-aks-1"]["checks"]["os_kernel"]["verdict"] == "ok"


def test_bottlerocket_eks_needs_flex_volume_path_and_cgroup_path(cluster, ansible):
    specs = [cluster.node_spec("pf-eks-br-%d" % i, labels={"eks.amazonaws.com/nodegroup": "br",
                                                           "eks.amazonaws.com/capacityType": "ON_DEMAND"},
                               provider_id="aws:///us-west-2a/i-0abc%d" % i,
                               osImage="Bottlerocket OS 1.19.2 (aws-k8s-1.29)", kernelVersion="6.1.72",
                               kubeletVersion="v1.29.0-eks-a5ec690") for i in (1, 2)]
    with temporary_nodes(cluster, *specs):
        result = preflight(ansible)
    assert result["platform"]["name"] == "eks"
    assert result["platform"]["installation"] == {"flexVolumePath": "/var/lib/kubelet/plugins"}
    assert result["platform"]["operator_dns_nameservers"] == ["169.254.169.253"]
    assert result["checks"]["platform"]["verdict"] == "warn"
    assert "spec.flexVolumePath: /var/lib/kubelet/plugins" in result["checks"]["platform"]["reason"]
    immutable = result["nodes"]["pf-eks-br-1"]["checks"]["immutable_os"]
    assert immutable["verdict"] == "warn"
    assert "FelixConfiguration default spec.cgroupV2Path" in immutable["reason"]
    assert result["nodes"]["pf-eks-br-1"]["checks"]["os_kernel"]["verdict"] == "ok"


# -- cluster-wide features ------------------------------------------------------------------------

def test_ipvs_kube_proxy_fails_kube_proxy_mode(pristine_cluster, tmp_path):
    cluster, ansible = pristine_cluster, Ansible(pristine_cluster, tmp_path)
    conf = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nipvs:\n  strictARP: true\nmode: ipvs\n"
    cluster.kubectl("create", "configmap", "kube-proxy", "-n", "kube-system", "--from-literal=config.conf=" + conf)
    try:
        result = preflight(ansible)
    finally:
        cluster.kubectl("delete", "configmap", "kube-proxy", "-n", "kube-system")
    check = result["checks"]["kube_proxy_mode"]
    assert check["verdict"] == "fail"
    assert check["reason"] == ("kube-proxy runs in IPVS mode (ConfigMap kube-system/kube-proxy config.conf): "
                               "switch it to iptables mode first")
    assert result["kube_proxy"]["mode"] == "ipvs"
    after = preflight(ansible)
    assert after["checks"]["kube_proxy_mode"]["verdict"] == "ok"


def test_sctp_service_fails_sctp_services(cluster, ansible, namespace):
    cluster.apply(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "sctp-echo", "namespace": namespace},
        "spec": {"selector": {"app": "echo"}, "ports": [{"name": "sctp", "port": 9999, "protocol": "SCTP"}]}}))
    cluster.apply(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "tcp-echo", "namespace": namespace},
        "spec": {"selector": {"app": "echo"}, "ports": [{"name": "tcp", "port": 80, "protocol": "TCP"}]}}))
    result = preflight(ansible)
    check = result["checks"]["sctp_services"]
    assert check["verdict"] == "fail"
    assert check["objects"] == ["Service/%s/sctp-echo" % namespace]
    assert check["count"] == 1


def test_floating_ip_pod_fails_floating_ips(cluster, ansible, namespace):
    cluster.apply(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "fip", "namespace": namespace,
                     "annotations": {"cni.projectcalico.org/floatingIPs": '["10.0.0.1"]'}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}}))
    result = preflight(ansible)
    check = result["checks"]["floating_ips"]
    assert check["verdict"] == "fail"
    assert check["objects"] == ["Pod/%s/fip" % namespace]


CALICO_POLICY_CRDS = ("networkpolicies", "globalnetworkpolicies", "stagednetworkpolicies",
                      "stagedglobalnetworkpolicies", "felixconfigurations")


def _crd_exists(cluster, plural):
    return cluster.kubectl("get", "crd", "%s.crd.projectcalico.org" % plural, check=False).returncode == 0


def test_calico_checks_pass_as_not_installed_without_the_crds(pristine_cluster, tmp_path):
    cluster, ansible = pristine_cluster, Ansible(pristine_cluster, tmp_path)
    assert not any(_crd_exists(cluster, p) for p in CALICO_POLICY_CRDS)
    result = preflight(ansible)
    check = result["checks"]["policy_log_action"]
    assert check["verdict"] == "ok"
    assert check["reason"] == "not installed: Calico is not installed (crd.projectcalico.org/v1 not served)"
    assert result["calico"]["installed"] is False


def apply_calico_crds(cluster):
    """Server-side apply the crd.projectcalico.org CRDs of Calico v3.31.4's calico.yaml; return their names."""
    with urllib.request.urlopen(cluster.mirror_url + "/v3.31.4/manifests/calico.yaml", timeout=60) as resp:
        docs = [d for d in yaml_text.load_all(resp.read()) if d and d.get("kind") == "CustomResourceDefinition"
                and d["spec"]["group"] == "crd.projectcalico.org"]
    assert len(docs) > 15
    cluster.apply(yaml.safe_dump_all(docs))
    names = [d["metadata"]["name"] for d in docs]
    for name in names:
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/" + name)
    return names


@pytest.fixture(scope="module")
def calico_crds(cluster):
    """The crd.projectcalico.org CRDs of Calico v3.31.4's calico.yaml (server-side applied, once for this file);
    the ones this fixture created are deleted, and waited for, afterwards."""
    existing = set(cluster.kubectl("get", "crd", "-o", "name").stdout.split())
    names = apply_calico_crds(cluster)
    created = [n for n in names if "customresourcedefinition.apiextensions.k8s.io/" + n not in existing]
    yield names
    if created:
        cluster.kubectl("delete", "crd", "--wait=false", *created)
        cluster.wait_for(lambda: not set("customresourcedefinition.apiextensions.k8s.io/" + n for n in created)
                         & set(cluster.kubectl("get", "crd", "-o", "name").stdout.split()),
                         timeout=300, what="the Calico CRDs of this test file to be deleted")


def test_calico_policy_with_log_fails_policy_log_action(cluster, ansible, namespace, calico_crds):
    cluster.apply(yaml.safe_dump_all([
        {"apiVersion": "crd.projectcalico.org/v1", "kind": "GlobalNetworkPolicy",
         "metadata": {"name": "pf-log-all"},
         "spec": {"selector": "all()", "ingress": [{"action": "Log"}, {"action": "Allow"}]}},
        {"apiVersion": "crd.projectcalico.org/v1", "kind": "NetworkPolicy",
         "metadata": {"name": "pf-log-egress", "namespace": namespace},
         "spec": {"selector": "all()", "egress": [{"action": "Log"}]}},
        {"apiVersion": "crd.projectcalico.org/v1", "kind": "NetworkPolicy",
         "metadata": {"name": "pf-quiet", "namespace": namespace},
         "spec": {"selector": "all()", "ingress": [{"action": "Allow"}]}},
    ]))
    try:
        result = preflight(ansible)
    finally:
        cluster.kubectl("delete", "globalnetworkpolicies.crd.projectcalico.org", "pf-log-all")
    check = result["checks"]["policy_log_action"]
    assert check["verdict"] == "fail"
    assert check["objects"] == ["NetworkPolicy/%s/pf-log-egress" % namespace, "GlobalNetworkPolicy/pf-log-all"]
    assert check["count"] == 2
    assert result["calico"] == {"api_version": "crd.projectcalico.org/v1", "installed": True,
                                "cgroup_v2_path": None, "felix_configurations": []}


def test_felix_cgroup_path_clears_the_immutable_warning(pristine_cluster, tmp_path):
    cluster, ansible = pristine_cluster, Ansible(pristine_cluster, tmp_path)
    apply_calico_crds(cluster)
    spec = cluster.node_spec("pf-talos", osImage="Talos (v1.6.4)", kernelVersion="6.1.74-talos")
    felix = {"apiVersion": "crd.projectcalico.org/v1", "kind": "FelixConfiguration",
             "metadata": {"name": "default"}, "spec": {"cgroupV2Path": "/sys/fs/cgroup"}}
    with temporary_nodes(cluster, spec):
        before = preflight(ansible)
        cluster.apply(yaml.safe_dump(felix))
        try:
            after = preflight(ansible)
        finally:
            cluster.kubectl("delete", "felixconfigurations.crd.projectcalico.org", "default")
    assert before["nodes"]["pf-talos"]["checks"]["immutable_os"]["verdict"] == "warn"
    assert after["nodes"]["pf-talos"]["checks"]["immutable_os"]["verdict"] == "ok"
    assert after["calico"]["cgroup_v2_path"] == "/sys/fs/cgroup"


# -- read-only, one LIST of nodes ------------------------------------------------------------------

def test_module_reads_nodes_once_and_never_writes(cluster, ansible):
    mark = cluster.audit.mark()
    result = preflight(ansible, check=True)
    events = cluster.audit.events_since(mark)
    writes = cluster.audit.writes_since(mark)
    assert writes == [], [(e["verb"], e["requestURI"]) for e in writes]
    node_requests = [e for e in events if (e.get("objectRef") or {}).get("resource") == "nodes"]
    assert [e["verb"] for e in node_requests] == ["list"]
    assert result["api_requests"]["write"] == 0
    # the module's own reads (the kubernetes client's discovery comes on top, or from its cache)
    assert 0 < result["api_requests"]["read"] <= len([e for e in events if e["verb"] in ("get", "list")])


# -- the role -----------------------------------------------------------------------------------------

@pytest.mark.oldest_core  # also on ansible-core 2.16 in make test (tests/integration/conftest.py)
def test_role_reports_writes_nothing_and_fails_listing_every_failure(cluster, ansible, tmp_path):
    specs = [cluster.node_spec("pf-role-rhel", osImage="Red Hat Enterprise Linux 8.1 (Ootpa)",
                               kernelVersion="4.18.0-147.el8.x86_64"),
             cluster.node_spec("pf-role-s390x", architecture="s390x", **UBUNTU_2204)]
    with temporary_nodes(cluster, *specs):
        mark = cluster.audit.mark()
        res = ansible.playbook("playbooks/preflight.yml", extra_vars={"preflight_report_dir": str(tmp_path)},
                               env={"ANSIBLE_SHOW_CUSTOM_STATS": "1"})
        writes = cluster.audit.writes_since(mark)
    assert writes == [], [(e["verb"], e["requestURI"]) for e in writes]
    assert res.rc != 0
    msg = role_task(res, "Fail when the cluster cannot run the eBPF data plane")["msg"]
    assert "node pf-role-rhel: os_kernel: RHEL 8.1 is older than 8.2 (kernel 4.18.0-147.el8.x86_64)" in msg
    assert ("node pf-role-s390x: architecture: s390x is not supported by the eBPF data plane "
            "(amd64 and arm64 only)") in msg
    report = json.loads((tmp_path / "ebpf-preflight.json").read_text())
    assert report["eligible"] is False
    assert report["nodes"]["pf-role-rhel"]["checks"]["os_kernel"]["verdict"] == "fail"
    markdown = (tmp_path / "ebpf-preflight.md").read_text()
    assert markdown.startswith("# Calico eBPF preflight: NOT eligible")
    assert "| pf-role-s390x | fail | s390x |" in markdown
    table = role_task(res, "Show the preflight table")["msg"]
    assert table[0].startswith("eBPF preflight: NOT ELIGIBLE (fail)")
    assert any(line.startswith("os_kernel") and "node pf-role-rhel" in line for line in table)
    stats = res.data["global_custom_stats"]["calico_ops_preflight"]
    assert stats["eligible"] is False and stats["failing"] == 2


def test_role_passes_with_ignore_in_check_mode(cluster, ansible, tmp_path):
    with temporary_nodes(cluster, cluster.node_spec("pf-role-ign", architecture="s390x", **UBUNTU_2204)):
        mark = cluster.audit.mark()
        res = ansible.playbook("playbooks/preflight.yml", check=True,
                               extra_vars={"preflight_report_dir": str(tmp_path),
                                           "preflight_ignore": ["architecture"]})
        writes = cluster.audit.writes_since(mark)
    assert res.rc == 0, res.stdout[-4000:]
    assert writes == []
    report = json.loads((tmp_path / "ebpf-preflight.json").read_text())
    assert report["eligible"] is True
    assert report["nodes"]["pf-role-ign"]["checks"]["architecture"]["verdict"] == "warn"


def test_role_refuses_an_unknown_check_name_before_reading(cluster, ansible, tmp_path):
    mark = cluster.audit.mark()
    res = ansible.playbook("playbooks/preflight.yml", extra_vars={"preflight_report_dir": str(tmp_path),
                                                                  "preflight_ignore": ["kernel"]})
    assert res.rc != 0
    assert "preflight_ignore" in res.stdout and "kernel" in res.stdout
    assert cluster.audit.events_since(mark) == []
    assert not (tmp_path / "ebpf-preflight.json").exists()


def test_role_host_level_checks_on_this_machine(cluster, ansible, tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {
        "hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}},
        "children": {"k8s_nodes": {"hosts": {"this-machine": {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}))
    mark = cluster.audit.mark()
    res = ansible.playbook("playbooks/preflight.yml", inventory=str(inventory),
                           extra_vars={"preflight_report_dir": str(tmp_path), "preflight_host_group": "k8s_nodes",
                                       "preflight_fail_when_ineligible": False})
    assert res.rc == 0, res.stdout[-4000:]
    assert cluster.audit.writes_since(mark) == []
    report = json.loads((tmp_path / "ebpf-preflight.json").read_text())
    host = report["hosts"]["this-machine"]
    assert set(host["checks"]) == {"architecture", "os_kernel", "windows", "immutable_os", "bpffs", "cgroup_v2",
                                   "vxlan_module", "vlan_devices", "host_facts"}
    assert host["facts"]["kernel"] == platform.release()
    assert host["checks"]["windows"]["verdict"] == "ok"
    assert host["checks"]["host_facts"]["verdict"] == "ok"
    assert report["summary"]["hosts"]["total"] == 1
    assert "## Hosts" in (tmp_path / "ebpf-preflight.md").read_text()


def test_role_host_group_that_does_not_exist_is_refused(cluster, ansible, tmp_path):
    res = ansible.playbook("playbooks/preflight.yml", extra_vars={"preflight_report_dir": str(tmp_path),
                                                                  "preflight_host_group": "no_such_group"})
    assert res.rc != 0
    assert "preflight_host_group: the inventory has no hosts in a group named no_such_group" in res.stdout


def test_role_does_not_check_an_ssh_host_on_the_controller(cluster, ansible, tmp_path):
    """The playbook runs with `connection: local`; a host of the group without ansible_connection must still
    be reached over SSH (here: unreachable, so host_facts fails), not silently checked on the controller."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {
        "hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}},
        "children": {"k8s_nodes": {"hosts": {"far-node": {
            "ansible_host": "127.0.0.9", "ansible_port": 1, "ansible_user": "nobody",
            "ansible_ssh_common_args": "-o ConnectTimeout=5 -o BatchMode=yes"}}}}}}))
    res = ansible.playbook("playbooks/preflight.yml", inventory=str(inventory),
                           extra_vars={"preflight_report_dir": str(tmp_path), "preflight_host_group": "k8s_nodes"})
    assert res.rc != 0
    assert (tmp_path / "ebpf-preflight.json").exists(), res.stdout[-6000:] + res.stderr[-3000:]
    report = json.loads((tmp_path / "ebpf-preflight.json").read_text())
    check = report["hosts"]["far-node"]["checks"]["host_facts"]
    assert check["verdict"] == "fail" and check["reason"].startswith("unreachable: "), check
    msg = role_task(res, "Fail when the cluster cannot run the eBPF data plane")["msg"]
    assert "host far-node: host_facts: unreachable: " in msg
