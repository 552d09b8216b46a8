"""operator_migration/rules.py: leftovers and phase decisions."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration import rules


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
