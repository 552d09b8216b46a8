"""The data plane's pure rules: node addresses, the CNI configuration install-cni would write, the calico/node
image's services, and where each component runs."""

import json

import pytest

from localcp import calico_node_image, dataplane, podnet, podrunner

# the operator's cni-config ConfigMap as v1.40.7 renders it (placeholders as install-cni replaces them)
OPERATOR_TEMPLATE = json.dumps({
    "name": "k8s-pod-network", "cniVersion": "0.3.1",
    "plugins": [{"type": "calico", "datastore_type": "kubernetes", "mtu": 0, "nodename_file_optional": False,
                 "log_file_path": "/var/log/calico/cni/cni.log",
                 "ipam": {"type": "calico-ipam", "assign_ipv4": "true", "assign_ipv6": "false"},
                 "container_settings": {"allow_ip_forwarding": False}, "policy": {"type": "k8s"},
                 "kubernetes": {"kubeconfig": "__KUBECONFIG_FILEPATH__"}},
                {"type": "bandwidth", "capabilities": {"bandwidth": True}},
                {"type": "portmap", "snat": True, "capabilities": {"portMappings": True}}]})

# calico.yaml's cni_network_config (manifest installs)
MANIFEST_TEMPLATE = """{
  "name": "k8s-pod-network", "cniVersion": "0.3.1",
  "plugins": [{"type": "calico", "log_level": "info", "log_file_path": "__LOG_FILE_PATH__",
               "datastore_type": "kubernetes", "nodename": "__KUBERNETES_NODE_NAME__", "mtu": __CNI_MTU__,
               "ipam": {"type": "calico-ipam"}, "policy": {"type": "k8s"},
               "kubernetes": {"kubeconfig": "__KUBECONFIG_FILEPATH__"}},
              {"type": "portmap", "snat": true, "capabilities": {"portMappings": true}}]
}"""


def test_nodes_get_a_subnet_each_behind_the_router():
    one, two = dataplane.node_net(7, 1), dataplane.node_net(7, 2)
    assert (one["address"], one["gateway"], one["subnet"]) == ("10.250.7.6", "10.250.7.5", "10.250.7.4/30")
    assert (two["address"], two["gateway"]) == ("10.250.7.10", "10.250.7.9")
    # the host's own /30 (10.250.N.0/30: .1 the API server's address, .2 the router) is never a node's
    assert all(not dataplane.node_net(7, i)["subnet"].startswith("10.250.7.0/") for i in range(1, 63))
    last = dataplane.node_net(7, dataplane.MAX_NODES)
    assert last["address"] == "10.250.7.250"
    with pytest.raises(ValueError, match="room for 62 nodes"):
        dataplane.node_net(7, dataplane.MAX_NODES + 1)
    # interface names fit Linux's 15 characters at the largest octet and index
    big = dataplane.node_net(254, 62)
    assert max(len(big["router_if"]), len(big["tmp_if"])) <= 15


def test_services_of_a_data_plane_get_a_range_that_leaves_the_pod():
    assert dataplane.service_range(9) == "10.251.9.0/24"
    assert dataplane.service_ip(9, 1) == "10.251.9.1"


def test_the_resolv_conf_names_only_the_namespace_itself():
    servers = [line.split()[1] for line in dataplane.RESOLV_CONF.splitlines() if line.startswith("nameserver")]
    assert servers == ["127.0.0.1"]


def test_the_operator_cni_config_becomes_the_calico_plugin_as_libcni_passes_it():
    conf = podnet.netconf(OPERATOR_TEMPLATE, {}, "node-1", "/run/k/calico-kubeconfig")
    assert conf["type"] == "calico" and conf["name"] == "k8s-pod-network" and conf["cniVersion"] == "0.3.1"
    assert conf["kubernetes"]["kubeconfig"] == "/run/k/calico-kubeconfig"
    assert conf["ipam"]["type"] == "calico-ipam"


def test_the_manifest_cni_config_placeholders_are_replaced_as_install_cni_does():
    conf = podnet.netconf(MANIFEST_TEMPLATE, {"CNI_MTU": "1450"}, "node-2", "/k")
    assert conf["nodename"] == "node-2" and conf["mtu"] == 1450
    assert conf["log_file_path"] == "/var/log/calico/cni/cni.log"  # install-cni's default
    assert "__" not in json.dumps(conf)


def test_a_cni_config_without_the_calico_plugin_is_refused():
    with pytest.raises(RuntimeError, match="no `calico` plugin"):
        podnet.netconf(json.dumps({"name": "x", "plugins": [{"type": "flannel"}]}), {}, "n", "/k")


def test_the_cni_result_addresses_are_the_pod_ips():
    result = {"ips": [{"address": "192.168.84.129/32"}, {"address": "fd00::1/128"}]}
    assert podnet.result_ips(result) == ["192.168.84.129", "fd00::1"]


def test_the_image_services_follow_rc_local():
    env = {"NODENAME": "node-1", "DATASTORE_TYPE": "kubernetes", "CALICO_NETWORKING_BACKEND": "vxlan"}
    plan = calico_node_image.services(env, "/b/calico-node")
    assert sorted(plan) == ["allocate-tunnel-addrs", "complete-startup", "felix", "monitor-addresses",
                            "node-status-reporter"]
    argv, felix_env = plan["felix"]
    assert argv == ["/b/calico-node", "-felix"]
    assert felix_env["FELIX_FELIXHOSTNAME"] == "node-1" and felix_env["FELIX_DATASTORETYPE"] == "kubernetes"
    none = calico_node_image.services(dict(env, CALICO_NETWORKING_BACKEND="none", CALICO_DISABLE_FELIX="true"),
                                      "/b/calico-node")
    assert "monitor-addresses" not in none and "felix" not in none
    # v3.29's and v3.30's rc.local enable no complete-startup service (v3.31's added it)
    assert sorted(calico_node_image.services(env, "/b/calico-node", "v3.29.7")) == [
        "allocate-tunnel-addrs", "felix", "monitor-addresses", "node-status-reporter"]
    assert "complete-startup" in calico_node_image.services(env, "/b/calico-node", "v3.31.4")


def test_each_release_runs_its_own_binaries():
    """A calico-node, Typha or install-cni image of an upgrade source runs that release's build (releases.py), not
    v3.31.4's."""
    bins = {"calico-node": "/c/v3.31.4/calico-node", "calico-node@v3.29.7": "/c/v3.29.7/calico-node",
            "calico-typha@v3.29.7": "/c/v3.29.7/calico-typha"}
    for image, path in (("quay.io/calico/node:v3.29.7", "/c/v3.29.7/calico-node"),
                        ("quay.io/calico/node:v3.31.4", "/c/v3.31.4/calico-node"),
                        ("quay.io/calico/typha:v3.29.7", "/c/v3.29.7/calico-typha"),
                        ("quay.io/calico/node:v3.27.5", None)):
        comp, tag = podrunner.component_for(image)
        assert comp.binary(bins, tag) == path, image


def test_data_plane_components_run_in_node_or_pod_namespaces():
    where = {c.name: (c.where, c.where_dataplane) for c in podrunner.COMPONENTS}
    assert where["calico-node"] == ("node", "node") and where["calico-typha"] == ("node", "node")
    assert where["calico-apiserver"] == ("host", "pod")  # its own pod network once Services need the data plane
    assert where["tigera-operator"] == ("host", "host")
    comp, tag = podrunner.component_for("registry.k8s.io/e2e-test-images/agnhost:2.53")
    assert comp.name == "agnhost" and comp.binary({}, tag)  # any tag: the netexec stand-in


def test_every_node_private_felix_setting_says_why():
    for key, (value, why) in podrunner.NODE_PRIVATE_FELIX.items():
        assert key.startswith("FELIX_") and value and len(why) > 20, key
