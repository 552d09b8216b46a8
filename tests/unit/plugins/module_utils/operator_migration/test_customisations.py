"""operator_migration/customisations.py: what an install changed against the release, each change mapped to the
Installation or refused by name."""

import json

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration import compare, customisations

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.operator_migration_install import CNI, node, observed, release


# -- customisations -------------------------------------------------------------------------------------------

def test_an_install_as_released_has_no_customisation():
    assert customisations.customisations(observed(), release()) == []


def test_each_change_is_mapped_or_refused_by_name():
    def edit(obs):
        node(obs)["env"] += [{"name": "CALICO_IPV4POOL_CIDR", "value": "10.244.0.0/16"},
                             {"name": "FELIX_LOGFILEPATH", "value": "none"},
                             {"name": "FELIX_LOGSEVERITYSCREEN", "value": "debug"},
                             {"name": "IP_AUTODETECTION_METHOD", "value": "interface=eth1"},
                             {"name": "MY_TUNING", "value": "x"}]
        node(obs)["image"] = "registry.example:5000/mirror/calico/node:v3.31.4"
        obs["node_ds"]["spec"]["template"]["spec"]["nodeSelector"]["role"] = "net"
        obs["node_ds"]["spec"]["template"]["spec"]["volumes"].append({"name": "extra", "emptyDir": {}})
        obs["config_map"]["data"]["veth_mtu"] = "1440"
    items = dict((i["name"], i) for i in customisations.customisations(observed(edit), release()))
    assert items["CALICO_IPV4POOL_CIDR"]["maps_to"].startswith("spec.calicoNetwork.ipPools[].cidr")
    assert items["FELIX_LOGFILEPATH"]["maps_to"].startswith("FelixConfiguration default")
    assert "drops calico-node env FELIX_LOGSEVERITYSCREEN" in items["FELIX_LOGSEVERITYSCREEN"]["refused"]
    assert "spec.logSeverityScreen of FelixConfiguration default to debug" in items["FELIX_LOGSEVERITYSCREEN"]["fix"]
    assert items["IP_AUTODETECTION_METHOD"]["maps_to"] == "spec.calicoNetwork.nodeAddressAutodetectionV4"
    assert items["calico-node"]["maps_to"] == "spec.registry registry.example:5000/ and spec.imagePath mirror/calico"
    assert items["veth_mtu"]["maps_to"] == "spec.calicoNetwork.mtu"
    assert "no field for calico-node env MY_TUNING" in items["MY_TUNING"]["refused"]
    assert "every node" in items["role"]["refused"]
    assert "volume the release does not have" in items["extra"]["refused"]
    refused = customisations.refused(list(items.values()))
    assert sorted(i["name"] for i in refused) == ["FELIX_LOGSEVERITYSCREEN", "MY_TUNING", "extra", "role"]
    assert sorted(i["name"] for i in customisations.refused(list(items.values()), accept=[
        "MY_TUNING", "role", "FELIX_LOGSEVERITYSCREEN"])) == ["extra"]
    line = customisations.item_line(items["MY_TUNING"])
    assert line.startswith("calico-node env MY_TUNING=x: refused") and "operator_migration_accept" in line


@pytest.mark.parametrize("name,value,needle", [
    ("FELIX_DEFAULTENDPOINTTOHOSTACTION", "DROP", "FELIX_DEFAULTENDPOINTTOHOSTACTION=accept"),
    ("IP", "10.0.0.5", "IP=autodetect or IP=none"),
    ("NODENAME", "fixed-name", "NODENAME must be unset"),
])
def test_what_the_operators_converter_refuses_is_refused(name, value, needle):
    def edit(obs):
        env = node(obs)["env"]
        env[:] = [e for e in env if e["name"] != name] + [{"name": name, "value": value}]
    refused = customisations.refused(customisations.customisations(observed(edit), release()))
    assert [i["name"] for i in refused] == [name] and needle in refused[0]["refused"]


def test_kube_controllers_enabled_controllers_and_node_selector():
    def edit(obs):
        spec = obs["kube_controllers"]["spec"]["template"]["spec"]
        spec["nodeSelector"]["node-role.kubernetes.io/control-plane"] = ""
        spec["containers"][0]["env"][0]["value"] = "node,policy"
    items = dict((i["name"], i) for i in customisations.customisations(observed(edit), release()))
    assert "ENABLED_CONTROLLERS" in items and items["ENABLED_CONTROLLERS"]["refused"]
    assert items["node-role.kubernetes.io/control-plane"]["maps_to"] == "spec.controlPlaneNodeSelector"


def test_cni_config_with_another_plugin_is_refused_and_host_local_is_mapped():
    def edit(obs):
        conf = json.loads(CNI.replace("__CNI_MTU__", "0"))
        conf["plugins"][0]["ipam"] = {"type": "host-local"}
        conf["plugins"].append({"type": "sbr"})
        obs["config_map"]["data"]["cni_network_config"] = json.dumps(conf)
    items = dict((i["name"], i) for i in customisations.customisations(observed(edit), release()))
    assert items["ipam"]["maps_to"] == "spec.cni.ipam.type HostLocal"
    assert items["plugin sbr"]["refused"]


def test_the_operators_migration_label_is_not_a_customisation():
    def edit(obs):
        obs["node_ds"]["spec"]["template"]["spec"]["nodeSelector"][compare.MIGRATION_LABEL] = "pre-operator"
    assert customisations.customisations(observed(edit), release()) == []


def test_what_the_api_server_fills_in_is_no_customisation():
    """Read back from the API server, a manifest's objects carry defaults it left out (seen: a fieldRef's
    apiVersion v1, a hostPath's empty type); those are not the user's changes."""
    def edit(obs):
        for e in node(obs)["env"]:
            if "valueFrom" in e and "fieldRef" in e["valueFrom"]:
                e["valueFrom"]["fieldRef"]["apiVersion"] = "v1"
        obs["node_ds"]["spec"]["template"]["spec"]["volumes"][0]["hostPath"]["type"] = ""
    assert customisations.customisations(observed(edit), release()) == []

    def changed(obs):
        obs["node_ds"]["spec"]["template"]["spec"]["volumes"][0]["hostPath"]["type"] = "Directory"
    assert [i["name"] for i in customisations.customisations(observed(changed), release())] == ["lib-modules"]
