"""operator_migration: the pure rules (customisations against the release, the derived Installation, policies,
leftovers, phase decisions) and the read-only runner behind the real ``Client`` over the in-memory API server."""

import copy
import json

import pytest
import yaml

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration import compare, customisations, installation, policy, rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration.runner import (
    ReleaseManifestError, release_objects, run_operator_migration_info)

from ansible_collections.calico_ops.lifecycle.tests.unit.plugins.module_utils.fake_k8s import FakeDynamic, client

CNI = """{
  "name": "k8s-pod-network",
  "plugins": [
    {"type": "calico", "nodename": "__KUBERNETES_NODE_NAME__", "mtu": __CNI_MTU__, "ipam": {"type": "calico-ipam"}},
    {"type": "portmap", "snat": true}
  ]
}"""

NODE_ENV = [
    {"name": "DATASTORE_TYPE", "value": "kubernetes"},
    {"name": "WAIT_FOR_DATASTORE", "value": "true"},
    {"name": "NODENAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    {"name": "CALICO_NETWORKING_BACKEND",
     "valueFrom": {"configMapKeyRef": {"name": "calico-config", "key": "calico_backend"}}},
    {"name": "CLUSTER_TYPE", "value": "k8s,bgp"},
    {"name": "IP", "value": "autodetect"},
    {"name": "CALICO_IPV4POOL_IPIP", "value": "Always"},
    {"name": "FELIX_IPINIPMTU", "valueFrom": {"configMapKeyRef": {"name": "calico-config", "key": "veth_mtu"}}},
    {"name": "FELIX_DEFAULTENDPOINTTOHOSTACTION", "value": "ACCEPT"},
    {"name": "FELIX_HEALTHENABLED", "value": "true"},
]

RELEASE = [
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
     "metadata": {"name": "calico-kube-controllers", "namespace": "kube-system"}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "calico-node", "namespace": "kube-system"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "calico-config", "namespace": "kube-system"},
     "data": {"calico_backend": "bird", "veth_mtu": "0", "cni_network_config": CNI}},
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
     "metadata": {"name": "ippools.crd.projectcalico.org"}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "calico-node"}},
    {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "calico-node", "namespace": "kube-system"},
     "spec": {"template": {"spec": {
         "nodeSelector": {"kubernetes.io/os": "linux"},
         "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
         "initContainers": [{"name": "install-cni", "image": "quay.io/calico/cni:v3.31.4",
                             "env": [{"name": "CNI_CONF_NAME", "value": "10-calico.conflist"}]}],
         "containers": [{"name": "calico-node", "image": "quay.io/calico/node:v3.31.4", "env": NODE_ENV}],
         "volumes": [{"name": "lib-modules", "hostPath": {"path": "/lib/modules"}}]}}}},
    {"apiVersion": "apps/v1", "kind": "Deployment",
     "metadata": {"name": "calico-kube-controllers", "namespace": "kube-system"},
     "spec": {"template": {"spec": {
         "nodeSelector": {"kubernetes.io/os": "linux"},
         "containers": [{"name": "calico-kube-controllers", "image": "quay.io/calico/kube-controllers:v3.31.4",
                         "env": [{"name": "ENABLED_CONTROLLERS", "value": "node,loadbalancer"},
                                 {"name": "DATASTORE_TYPE", "value": "kubernetes"}]}]}}}},
]
RELEASE_TEXT = yaml.safe_dump_all(RELEASE)
POOL = {"metadata": {"name": "default-ipv4-ippool"},
        "spec": {"cidr": "192.168.0.0/16", "ipipMode": "Always", "natOutgoing": True, "blockSize": 26,
                 "nodeSelector": "all()"}}


def release():
    return release_objects(RELEASE_TEXT, "kube-system", "calico-node", "calico-kube-controllers", "calico-config")


def observed(edit=None):
    rel = release()
    obs = {"node_ds": copy.deepcopy(rel["node_ds"]), "kube_controllers": copy.deepcopy(rel["kube_controllers"]),
           "config_map": copy.deepcopy(rel["config_map"]), "ippools": [copy.deepcopy(POOL)]}
    if edit:
        edit(obs)
    return obs


def node(obs):
    return obs["node_ds"]["spec"]["template"]["spec"]["containers"][0]


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


def test_image_parts():
    assert compare.image_parts("quay.io/calico/node:v3.31.4") == ("quay.io/", "calico", "node", "v3.31.4")
    assert compare.image_parts("calico/node:v3.27.5@sha256:ab") == ("", "calico", "node", "v3.27.5")
    assert compare.image_parts("localhost:5000/node") == ("localhost:5000/", "", "node", None)


# -- policies and leftovers -------------------------------------------------------------------------------------

def test_policy_changes_name_each_object():
    def pol(name, order, ns="team"):
        return {"metadata": {"name": name, "namespace": ns, "uid": "x", "resourceVersion": "1"},
                "spec": {"order": order}}
    before = policy.policy_digest({"k/np": [pol("a", 1), pol("b", 2)]})
    assert policy.policy_changes(before, policy.policy_digest({"k/np": [pol("a", 1), pol("b", 2)]})) == []
    after = policy.policy_digest({"k/np": [pol("a", 5), pol("c", 1)]})
    assert policy.policy_changes(before, after) == ["k/np team/b: gone", "k/np team/c: new", "k/np team/a: changed"]
    assert policy.policy_counts(after) == {"k/np": 2}


def test_leftovers_are_ownerless_objects_never_crds():
    refs = [("v1", "ServiceAccount", "kube-system", "calico-node"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole", None, "calico-node"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "ippools.crd.projectcalico.org"),
            ("v1", "ConfigMap", "kube-system", "gone")]
    live = {refs[0]: {"metadata": {"name": "calico-node"}},
            refs[1]: {"metadata": {"name": "calico-node", "ownerReferences": [{"kind": "Installation"}]}},
            refs[2]: {"metadata": {"name": "ippools.crd.projectcalico.org"}}, refs[3]: None}
    assert rules.leftovers(refs, live) == [list(refs[0])]
    refs.append(("rbac.authorization.k8s.io/v1", "ClusterRole", None, "calico-tier-getter"))
    live[refs[-1]] = {"metadata": {"name": "calico-tier-getter"}}
    assert rules.leftovers(refs, live, cluster_scoped=True) == [list(refs[-1])]


# -- decisions ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("obs,record,refusals,version,datastore,action,phase,needle", [
    ({"node_ds": {}}, None, [], "v3.31.4", "kubernetes", "migrate", "manifest", "manifest install"),
    ({"node_ds": {}}, None, [], "v3.31.4", "etcdv3", "refuse", "manifest", "migrate_datastore.yml"),
    ({"node_ds": {}, "canal": True}, None, [], "v3.31.4", "kubernetes", "refuse", "manifest", "Canal"),
    ({"node_ds": {}}, None, [], "v3.14.2", "kubernetes", "refuse", "manifest", "older than v3.15"),
    ({"node_ds": {}}, None, [], "latest", "kubernetes", "refuse", "manifest", "not a Calico release"),
    ({"node_ds": {}, "installation": {}}, None, [], "v3.31.4", "kubernetes", "refuse", "manifest", "no record"),
    ({"node_ds": {}}, None, [{"where": "w", "name": "X", "value": "1", "refused": "r", "fix": "f"}], "v3.31.4",
     "kubernetes", "refuse", "manifest", "w X=1: refused, r; fix: f"),
    ({"node_ds": {}}, "recorded", [], "v3.31.4", "kubernetes", "migrate", "recorded", "operator is next"),
    ({"node_ds": {}, "operator": {}}, "operator", [], "v3.31.4", "kubernetes", "migrate", "operator", "Installation"),
    ({"node_ds": {}, "operator": {}, "installation": {}}, "installation", [], "v3.31.4", "kubernetes", "migrate",
     "installation", "moving"),
    ({"node_ds": None, "installation": {}}, "installation", [], None, None, "migrate", "migrated", "verifying"),
    ({"node_ds": None, "installation": {}}, "verified", [], None, None, "migrate", "verified", "verifying"),
    ({"node_ds": None, "installation": {}}, "done", [], None, None, "nothing", "done", "done"),
    ({"node_ds": None, "installation": {}}, None, [], None, None, "nothing", "operator-managed", "operator-managed"),
    ({"node_ds": None}, None, [], None, None, "refuse", "manifest", "nothing to migrate"),
])
def test_decide(obs, record, refusals, version, datastore, action, phase, needle):
    plan = rules.decide(obs, record, refusals, version, datastore)
    assert (plan["action"], plan["phase"]) == (action, phase) and needle in plan["reason"], plan


# -- the runner ---------------------------------------------------------------------------------------------------

def cluster(with_operator_crds=False, record=None, edit=None, felix=True):
    dyn = FakeDynamic()
    for api, plural, kind, ns in (("apps/v1", "daemonsets", "DaemonSet", True),
                                  ("apps/v1", "deployments", "Deployment", True),
                                  ("v1", "configmaps", "ConfigMap", True),
                                  ("v1", "serviceaccounts", "ServiceAccount", True),
                                  ("v1", "nodes", "Node", False),
                                  ("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
                                  ("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", False),
                                  ("apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition",
                                   False),
                                  ("crd.projectcalico.org/v1", "ippools", "IPPool", False),
                                  ("crd.projectcalico.org/v1", "felixconfigurations", "FelixConfiguration", False),
                                  ("crd.projectcalico.org/v1", "globalnetworkpolicies", "GlobalNetworkPolicy", False),
                                  ("networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", True)):
        dyn.add_type(api, plural, kind, namespaced=ns)
    obs = observed(edit)
    seeded = (("apps/v1", "daemonsets", obs["node_ds"]), ("apps/v1", "deployments", obs["kube_controllers"]),
              ("v1", "configmaps", obs["config_map"]), ("crd.projectcalico.org/v1", "ippools", POOL))
    for api, plural, o in seeded:
        dyn.put(api, plural, o)
    for doc in RELEASE[:2] + RELEASE[4:5]:
        dyn.put(doc["apiVersion"], {"PodDisruptionBudget": "poddisruptionbudgets", "ServiceAccount": "serviceaccounts",
                                    "ClusterRole": "clusterroles"}[doc["kind"]], doc)
    for i in range(3):
        dyn.put("v1", "nodes", {"metadata": {"name": "n%d" % i}})
    if felix:
        dyn.put("crd.projectcalico.org/v1", "felixconfigurations", {"metadata": {"name": "default"}, "spec": {}})
    dyn.put("crd.projectcalico.org/v1", "globalnetworkpolicies", {"metadata": {"name": "deny"}, "spec": {"order": 1}})
    dyn.put("networking.k8s.io/v1", "networkpolicies", {"metadata": {"name": "np", "namespace": "team"},
                                                        "spec": {"podSelector": {}}})
    if with_operator_crds:
        dyn.add_type("operator.tigera.io/v1", "installations", "Installation", namespaced=False)
        dyn.put("apiextensions.k8s.io/v1", "customresourcedefinitions",
                {"metadata": {"name": "installations.operator.tigera.io"}})
    if record:
        dyn.put("v1", "configmaps", {"metadata": {"name": "calico-ops-operator-migration",
                                                  "namespace": "kube-system"}, "data": record})
    return dyn


def test_runner_on_a_manifest_install_plans_the_migration_and_reads_each_type_once():
    dyn = cluster()
    out = run_operator_migration_info(client(dyn), RELEASE_TEXT)
    assert out["plan"] == {"action": "migrate", "phase": "manifest", "reason": "a manifest install of Calico v3.31.4"}
    assert out["calico_node"] == {"exists": True, "version": "v3.31.4", "datastore": "kubernetes"}
    assert out["derived"]["calicoNetwork"]["ipPools"][0]["cidr"] == "192.168.0.0/16"
    assert out["policies"] == {"crd.projectcalico.org/v1/globalnetworkpolicies": 1,
                               "networking.k8s.io/v1/networkpolicies": 1}
    assert [m["kind"] for m in out["manifest_era"]] == ["DaemonSet", "Deployment", "ConfigMap"]
    assert out["manifest_refs"][0] == ["policy/v1", "PodDisruptionBudget", "kube-system", "calico-kube-controllers"]
    assert out["lines"][-1].startswith("plan: migrate from phase manifest")
    assert dyn.writes() == []
    lists = [path for method, path, _q in dyn.log if method == "GET" and path.endswith("/globalnetworkpolicies")]
    assert len(lists) == 1


def test_runner_refuses_a_customisation_before_any_write_and_accept_lets_it_go():
    def edit(obs):
        node(obs)["env"].append({"name": "MY_TUNING", "value": "x"})
    out = run_operator_migration_info(client(cluster(edit=edit)), RELEASE_TEXT)
    assert out["plan"]["action"] == "refuse" and "MY_TUNING" in out["plan"]["reason"]
    out = run_operator_migration_info(client(cluster(edit=edit)), RELEASE_TEXT, accept=["MY_TUNING"])
    assert out["plan"]["action"] == "migrate"


def test_runner_needs_the_release_manifest_while_the_manifest_calico_node_runs():
    with pytest.raises(ReleaseManifestError, match="release_manifest is needed"):
        run_operator_migration_info(client(cluster()), None)
    with pytest.raises(ReleaseManifestError, match="no DaemonSet calico-node"):
        run_operator_migration_info(client(cluster()), yaml.safe_dump_all(RELEASE[:3]))


def test_runner_compares_policies_with_the_record_and_lists_leftovers():
    dyn = cluster(with_operator_crds=True)
    before = run_operator_migration_info(client(dyn), RELEASE_TEXT)
    dyn.objects["apps/daemonsets"].clear()
    dyn.objects["apps/deployments"].clear()
    dyn.put("operator.tigera.io/v1", "installations", {"metadata": {"name": "default"}, "spec": {},
                                                       "status": {"computed": before["derived"]}})
    dyn.put("networking.k8s.io/v1", "networkpolicies", {"metadata": {"name": "np", "namespace": "team"},
                                                        "spec": {"podSelector": {"matchLabels": {"a": "b"}}}})
    record = {"phase": "installation", "policies": json.dumps(before["policy_digest"]),
              "installation": json.dumps(before["derived"]), "manifest_refs": json.dumps(before["manifest_refs"])}
    dyn.put("v1", "configmaps", {"metadata": {"name": "calico-ops-operator-migration", "namespace": "kube-system"},
                                 "data": record})
    out = run_operator_migration_info(client(dyn), None, leftovers=True)
    assert out["plan"]["action"] == "migrate" and out["plan"]["phase"] == "migrated"
    assert out["policy_changes"] == ["networking.k8s.io/v1/networkpolicies team/np: changed"]
    assert out["installation"]["differences"] == []
    assert out["kept"] == [["rbac.authorization.k8s.io/v1", "ClusterRole", None, "calico-node"]]
    kinds = sorted(tuple(x["ref"][1:]) for x in out["leftovers"])
    assert kinds == [("ConfigMap", "kube-system", "calico-config"),
                     ("PodDisruptionBudget", "kube-system", "calico-kube-controllers"),
                     ("ServiceAccount", "kube-system", "calico-node")]
    cm = next(x["object"] for x in out["leftovers"] if x["ref"][1] == "ConfigMap")
    assert cm["data"]["calico_backend"] == "bird" and "uid" not in cm["metadata"]
    assert dyn.writes() == []


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


def test_runner_refuses_before_any_write_when_felixconfiguration_default_is_missing():
    """The operator's conversion fails without it (seen with v1.40.7: MigrationError "error reading
    felixconfiguration ... not found"), so the preflight refuses instead."""
    dyn = cluster(felix=False)
    out = run_operator_migration_info(client(dyn), RELEASE_TEXT)
    assert out["plan"]["action"] == "refuse" and "FelixConfiguration default does not exist" in out["plan"]["reason"]
    assert dyn.writes() == []


def test_what_the_record_keeps_is_the_whole_object_and_the_live_one_is_not_changed():
    """The record's copy of a removed object keeps every field of it (a ServiceAccount's imagePullSecrets, not only
    spec/data) but server-set metadata; reading it does not change the object read (an earlier version popped kubectl's
    annotation out of the live object)."""
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.objects import applyable
    live = {"apiVersion": "v1", "kind": "ServiceAccount", "status": {},
            "metadata": {"name": "calico-node", "namespace": "kube-system", "uid": "u", "resourceVersion": "9",
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "team": "net"}},
            "imagePullSecrets": [{"name": "mirror"}], "automountServiceAccountToken": False}
    before = copy.deepcopy(live)
    assert applyable(live) == {"apiVersion": "v1", "kind": "ServiceAccount",
                               "metadata": {"name": "calico-node", "namespace": "kube-system",
                                            "annotations": {"team": "net"}},
                               "imagePullSecrets": [{"name": "mirror"}], "automountServiceAccountToken": False}
    assert live == before
