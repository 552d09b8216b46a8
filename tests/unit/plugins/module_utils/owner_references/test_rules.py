"""owner_references/rules.py: the record's entry keys, the guarded JSON patch of an object's ownerReferences, and the
messages (pure functions; the job itself: test_runner.py and test_attach.py)."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references import rules

NP = {"apiVersion": "projectcalico.org/v3", "kind": "NetworkPolicy", "name": "np1", "uid": "u-1",
      "controller": True, "blockOwnerDeletion": True}


def test_group_of_an_api_version():
    assert rules.group_of("projectcalico.org/v3") == "projectcalico.org"
    assert rules.group_of("apps/v1") == "apps"
    assert rules.group_of("v1") == ""


def test_entry_key_is_the_dependent_and_the_exact_reference():
    key = rules.entry_key("dep-uid", NP)
    assert key == "dep-uid|projectcalico.org/v3|NetworkPolicy|np1|u-1"
    # the owner's UID is part of it: a later cycle (owners recreated with new UIDs) makes a new entry
    assert rules.entry_key("dep-uid", dict(NP, uid="u-2")) != key
    assert rules.entry_key("dep-uid", {"kind": "X"}) == "dep-uid||X||"


def test_same_owner_compares_group_kind_and_name_not_version_or_uid():
    assert rules.same_owner(NP, dict(NP, apiVersion="projectcalico.org/v4", uid="other"))
    assert not rules.same_owner(NP, dict(NP, apiVersion="crd.projectcalico.org/v1"))
    assert not rules.same_owner(NP, dict(NP, kind="GlobalNetworkPolicy"))
    assert not rules.same_owner(NP, dict(NP, name="np2"))
    assert rules.same_owner({"kind": "Pod", "name": "a"}, {"apiVersion": "v1", "kind": "Pod", "name": "a"})


def test_owner_brief_keeps_what_names_the_owner():
    assert rules.owner_brief(NP) == {"apiVersion": "projectcalico.org/v3", "kind": "NetworkPolicy", "name": "np1",
                                     "uid": "u-1"}
    assert rules.owner_brief({"kind": "X"}) == {"apiVersion": None, "kind": "X", "name": None, "uid": None}


def test_refs_patch_tests_the_uid_and_the_current_references_before_replacing_them():
    other = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "u-9"}
    assert rules.refs_patch("obj-uid", [other, NP], [other], "7") == [
        {"op": "test", "path": "/metadata/uid", "value": "obj-uid"},
        {"op": "test", "path": "/metadata/ownerReferences", "value": [other, NP]},
        {"op": "replace", "path": "/metadata/ownerReferences", "value": [other]}]


def test_refs_patch_removes_the_field_when_nothing_is_left():
    assert rules.refs_patch("obj-uid", [NP], [], "7") == [
        {"op": "test", "path": "/metadata/uid", "value": "obj-uid"},
        {"op": "test", "path": "/metadata/ownerReferences", "value": [NP]},
        {"op": "remove", "path": "/metadata/ownerReferences"}]


def test_refs_patch_without_the_field_is_guarded_by_the_resource_version():
    """A JSON patch test cannot assert that a field is absent: the resourceVersion stands in."""
    assert rules.refs_patch("obj-uid", None, [NP], "7") == [
        {"op": "test", "path": "/metadata/uid", "value": "obj-uid"},
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "add", "path": "/metadata/ownerReferences", "value": [NP]}]
    assert rules.refs_patch("obj-uid", None, [], "7") == [
        {"op": "test", "path": "/metadata/uid", "value": "obj-uid"},
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}]


def test_describe_object_with_and_without_a_namespace():
    assert rules.describe_object({"kind": "ConfigMap", "namespace": "a", "name": "cm1"}) == "ConfigMap a/cm1"
    assert rules.describe_object({"kind": "Namespace", "name": "c"}) == "Namespace c"
    assert rules.describe_object({"kind": "Namespace", "namespace": None, "name": "c"}) == "Namespace c"


def test_missing_owners_message_groups_the_lost_owners_by_dependent_in_order():
    cm = {"kind": "ConfigMap", "namespace": "a", "name": "cm1"}
    ns = {"kind": "Namespace", "name": "c"}
    missing = [{"dependent": cm, "reason": "NetworkPolicy np1 not found"},
               {"dependent": ns, "reason": "GlobalNetworkPolicy gnp1 not found"},
               {"dependent": cm, "reason": "GlobalNetworkPolicy gnp1 not found"}]
    assert rules.missing_owners_message(missing) == (
        "3 owner reference(s) were left out because the owner is missing (they stay pending in the record); "
        "2 dependent(s) are without them: ConfigMap a/cm1: owner NetworkPolicy np1 not found, owner "
        "GlobalNetworkPolicy gnp1 not found; Namespace c: owner GlobalNetworkPolicy gnp1 not found")


def test_the_error_carries_the_result():
    err = rules.OwnerReferencesError("stopped", {"changed": False})
    assert str(err) == "stopped" and err.result == {"changed": False}


def test_the_checkpoint_and_read_ahead_settings_hold_together():
    assert rules.ATTACH_AHEAD >= rules.CHECKPOINT_EVERY > 0 and rules.CHECKPOINT_SECONDS > 0
    assert rules.DEFAULT_OWNER_API_VERSIONS == ["projectcalico.org/v3"]
