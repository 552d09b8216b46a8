"""operator_migration/runner.py: the read-only runner behind the real ``Client`` over the in-memory API server."""

import json

import pytest
import yaml

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration.runner import ReleaseManifestError, run_operator_migration_info

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import FakeDynamic, client
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.operator_migration_install import POOL, RELEASE, RELEASE_TEXT, node, observed


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


def test_runner_refuses_before_any_write_when_felixconfiguration_default_is_missing():
    """The operator's conversion fails without it (seen with v1.40.7: MigrationError "error reading
    felixconfiguration ... not found"), so the preflight refuses instead."""
    dyn = cluster(felix=False)
    out = run_operator_migration_info(client(dyn), RELEASE_TEXT)
    assert out["plan"]["action"] == "refuse" and "FelixConfiguration default does not exist" in out["plan"]["reason"]
    assert dyn.writes() == []
