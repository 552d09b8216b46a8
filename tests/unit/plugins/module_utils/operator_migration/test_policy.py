"""operator_migration/policy.py: the policy digest and what changed against the record."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.operator_migration import policy


# -- policies -------------------------------------------------------------------------------------------------

def test_policy_changes_name_each_object():
    def pol(name, order, ns="team"):
        return {"metadata": {"name": name, "namespace": ns, "uid": "x", "resourceVersion": "1"},
                "spec": {"order": order}}
    before = policy.policy_digest({"k/np": [pol("a", 1), pol("b", 2)]})
    assert policy.policy_changes(before, policy.policy_digest({"k/np": [pol("a", 1), pol("b", 2)]})) == []
    after = policy.policy_digest({"k/np": [pol("a", 5), pol("c", 1)]})
    assert policy.policy_changes(before, after) == ["k/np team/b: gone", "k/np team/c: new", "k/np team/a: changed"]
    assert policy.policy_counts(after) == {"k/np": 2}
