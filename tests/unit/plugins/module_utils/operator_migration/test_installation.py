"""operator_migration/installation.py: the Installation derived from what the install runs with."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration import installation

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.operator_migration_install import node, observed, release


# -- the Installation -----------------------------------------------------------------------------------------

def test_the_derived_installation_is_what_the_install_runs_with():
    spec = installation.derive_installation(observed(), release())
    assert spec == {
        "calicoNetwork": {"ipPools": [{"name": "default-ipv4-ippool", "cidr": "192.168.0.0/16",
                                       "encapsulation": "IPIP", "natOutgoing": "Enabled", "nodeSelector": "all()",
                                       "disableBGPExport": False, "blockSize": 26}],
                          "bgp": "Enabled", "nodeAddressAutodetectionV4": {"firstFound": True},
                          "linuxDataplane": "Iptables"},
        "cni": {"type": "Calico", "ipam": {"type": "Calico"}}, "flexVolumePath": "None"}


def test_the_derived_installation_follows_changes():
    def edit(obs):
        node(obs)["env"] += [{"name": "IP_AUTODETECTION_METHOD", "value": "cidr=10.0.0.0/8,172.16.0.0/12"},
                             {"name": "FELIX_BPFENABLED", "value": "true"}]
        node(obs)["image"] = "registry.example:5000/mirror/calico/node:v3.31.4"
        obs["config_map"]["data"].update(veth_mtu="1440", calico_backend="vxlan")
        obs["ippools"] = [{"metadata": {"name": "pods"}, "spec": {"cidr": "10.244.0.0/16", "vxlanMode": "Always"}},
                          {"metadata": {"name": "off"}, "spec": {"cidr": "10.9.0.0/16", "disabled": True}},
                          {"metadata": {"name": "v6"}, "spec": {"cidr": "fd00::/48"}}]
        obs["kube_controllers"]["spec"]["template"]["spec"]["nodeSelector"]["role"] = "infra"
    spec = installation.derive_installation(observed(edit), release())
    net = spec["calicoNetwork"]
    assert [p["name"] for p in net["ipPools"]] == ["pods", "v6"]
    assert net["ipPools"][0]["encapsulation"] == "VXLAN" and net["ipPools"][1]["encapsulation"] == "None"
    assert net["mtu"] == 1440 and net["bgp"] == "Disabled" and net["linuxDataplane"] == "BPF"
    assert net["nodeAddressAutodetectionV4"] == {"cidrs": ["10.0.0.0/8", "172.16.0.0/12"]}
    assert spec["registry"] == "registry.example:5000/" and spec["imagePath"] == "mirror/calico"
    assert spec["controlPlaneNodeSelector"] == {"role": "infra"}


def test_a_pool_mixing_ipip_and_vxlan_cannot_be_expressed():
    with pytest.raises(ValueError, match="mixes IPIP"):
        installation.convert_pool({"metadata": {"name": "x"}, "spec": {"cidr": "10.0.0.0/16", "ipipMode": "Always",
                                                                       "vxlanMode": "Always"}})


def test_installation_differences_only_count_the_derived_fields():
    want = {"calicoNetwork": {"mtu": 1440, "ipPools": [{"cidr": "10.0.0.0/16"}]}}
    computed = {"calicoNetwork": {"mtu": 1440, "ipPools": [{"cidr": "10.0.0.0/16", "blockSize": 26}]},
                "variant": "Calico"}
    assert installation.installation_differences(want, computed) == []
    computed["calicoNetwork"]["mtu"] = 1500
    assert installation.installation_differences(want, computed) == [
        "spec.calicoNetwork.mtu: derived 1440, the operator has 1500"]
