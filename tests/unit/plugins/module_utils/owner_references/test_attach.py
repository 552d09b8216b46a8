"""owner_references/attach.py, state ``attached`` (a mixin of ``runner.Runner``), through the Runner against the
in-memory API (the real Client, a fake transport; ``helpers/owner_references_world.py``)."""

import json
import threading
import time

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references.rules import OwnerReferencesError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.store import RecordStore

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.owner_references_world import CALICO, Killed, World, calico_refs, peak_of, ref


def test_attach_puts_back_references_with_the_new_uids_and_recorded_fields(tmp_path):
    w = World()
    w.runner(tmp_path).detach()
    w.recreate_owners()
    result = w.runner(tmp_path, diff=True).attach()
    assert result["changed"] is True
    c = result["counts"]
    assert (c["attached"], c["missing_owners"], c["affected"], c["failed"]) == (7, 0, 6, 0)
    assert w.refs("v1", "configmaps", "a", "cm1") == [ref(w.np, controller=True, block=True)]
    assert w.refs("v1", "configmaps", "a", "cm2") == [w.other_ref, ref(w.np)]
    assert w.refs("v1", "secrets", "b", "s1") == [ref(w.np_b), ref(w.gnp)]  # namespaced owner: dependent's ns
    assert w.refs("apps/v1", "deployments", "a", "d1") == [ref(w.gnp, block=True)]  # cluster-scoped owner
    assert w.refs("example.com/v1", "widgets", "b", "w1") == [ref(w.np_b, controller=True)]
    assert w.refs("v1", "namespaces", None, "c") == [ref(w.gnp)]
    assert result["record"]["pending"] == 0 and result["record"]["done"] == 7
    assert len(result["diff"]) == 6
    owners = [o for obj in result["objects"] for o in obj["owners"]]
    assert all(o["uid"] != o["previous_uid"] for o in owners)

    writes = len(w.dyn.writes())
    again = w.runner(tmp_path).attach()  # attach twice: nothing changes
    assert again["changed"] is False and len(w.dyn.writes()) == writes


def test_attach_fixes_a_stale_reference_instead_of_adding_a_second_one(tmp_path):
    w = World()
    w.runner(tmp_path).detach()
    cm = w.dyn.obj("v1", "configmaps", "cm1", "a")
    cm["metadata"]["ownerReferences"] = [ref(w.np, controller=True, block=True)]  # old uid came back
    w.dyn.put("v1", "configmaps", cm)
    w.recreate_owners()
    w.runner(tmp_path).attach()
    assert w.refs("v1", "configmaps", "a", "cm1") == [ref(w.np, controller=True, block=True)]


def test_missing_owner_is_reported_and_the_rest_attached(tmp_path):
    w = World()
    w.runner(tmp_path).detach()
    w.recreate_owners()
    w.dyn.remove(CALICO, "globalnetworkpolicies", "gnp1")
    with pytest.raises(OwnerReferencesError, match="owner is missing") as err:
        w.runner(tmp_path).attach()
    res = err.value.result
    assert res["counts"]["missing_owners"] == 3 and res["counts"]["attached"] == 4
    assert sorted(m["dependent"]["name"] for m in res["missing_owners"]) == ["c", "d1", "s1"]
    assert all("GlobalNetworkPolicy gnp1 not found" in m["reason"] for m in res["missing_owners"])
    assert w.refs("v1", "secrets", "b", "s1") == [ref(w.np_b)]
    assert res["record"]["pending"] == 3

    result = w.runner(tmp_path, fail_on_missing_owner=False).attach()  # reported, not failed
    assert result["changed"] is False and result["counts"]["missing_owners"] == 3


def test_owner_type_not_served_is_a_missing_owner_with_the_reason(tmp_path):
    w = World()
    w.runner(tmp_path).detach()
    w.dyn.failing[CALICO] = (503, "Service Unavailable")
    with pytest.raises(OwnerReferencesError) as err:
        w.runner(tmp_path).attach()
    res = err.value.result
    assert res["counts"]["missing_owners"] == 7 and res["counts"]["attached"] == 0
    assert "projectcalico.org/v3 cannot be discovered" in res["missing_owners"][0]["reason"]
    assert [x for x in w.dyn.writes() if x[0] == "PATCH" and "/configmaps/calico-ops" not in x[1]][6:] == []


def test_dependent_gone_or_replaced_is_marked_done(tmp_path):
    w = World()
    w.runner(tmp_path).detach()
    w.recreate_owners()
    w.dyn.remove("v1", "configmaps", "cm1", "a")
    old = w.dyn.obj("v1", "configmaps", "cm2", "a")
    w.dyn.remove("v1", "configmaps", "cm2", "a")
    w.dyn.put("v1", "configmaps", {"metadata": {"name": "cm2", "namespace": "a"}})  # same name, new uid
    result = w.runner(tmp_path).attach()
    assert result["counts"]["dependents_gone"] == 2
    assert result["counts"]["attached"] == 5
    assert "ownerReferences" not in w.dyn.obj("v1", "configmaps", "cm2", "a")["metadata"]
    assert old["metadata"]["uid"] != w.dyn.obj("v1", "configmaps", "cm2", "a")["metadata"]["uid"]
    assert result["record"]["pending"] == 0


def test_check_mode_attach_writes_nothing(tmp_path):
    w = World()
    w.runner(tmp_path).detach()
    w.recreate_owners()
    with open(str(tmp_path / "record.json")) as f:
        record_before = f.read()
    writes = len(w.dyn.writes())
    result = w.runner(tmp_path, check_mode=True, diff=True).attach()
    assert len(w.dyn.writes()) == writes
    with open(str(tmp_path / "record.json")) as f:
        assert f.read() == record_before
    assert result["changed"] is True and result["counts"]["attached"] == 7
    assert sorted(set(o["action"] for o in result["objects"])) == ["would attach"]
    assert len(result["diff"]) == 6
    for key in w.dependents:
        assert calico_refs(w.refs(*key)) == []


def test_attach_killed_midway_is_finished_by_a_rerun_without_duplicates(tmp_path, monkeypatch):
    w = World()
    w.runner(tmp_path).detach()
    w.recreate_owners()
    patches = []

    def kill_on_third_patch(method, path, body):
        if method == "PATCH":
            patches.append(path)
            if len(patches) == 3:
                raise Killed()
    w.dyn.before_write = kill_on_third_patch
    # no checkpoint reaches the record before the process dies: the two applied patches are not marked done
    monkeypatch.setattr(RecordStore, "save", lambda self: None)
    with pytest.raises(Killed):  # one request at a time, so the process dies exactly at its third patch
        w.runner(tmp_path, checkpoint_every=1, checkpoint_seconds=0, workers=1).attach()
    monkeypatch.undo()
    w.dyn.before_write = None
    attached_before = [k for k in w.dependents if calico_refs(w.refs(*k))]
    assert len(attached_before) == 2

    result = w.runner(tmp_path).attach()
    assert result["counts"]["already_attached"] + result["counts"]["attached"] == 7
    assert result["counts"]["already_attached"] >= 2
    assert result["record"]["pending"] == 0
    for key, refs in w.dependents.items():
        assert len(w.refs(*key)) == len(refs)  # no duplicate
    assert w.refs("v1", "secrets", "b", "s1") == [ref(w.np_b), ref(w.gnp)]


def test_attach_checkpoints_as_it_goes(tmp_path):
    w = World()
    w.runner(tmp_path).detach()
    w.recreate_owners()
    seen = []

    def kill_on_fifth_patch(method, path, body):
        if method == "PATCH":
            seen.append(path)
            if len(seen) == 5:
                raise Killed()
    w.dyn.before_write = kill_on_fifth_patch
    with pytest.raises(Killed):  # one request at a time, so the process dies exactly at its fifth patch
        w.runner(tmp_path, checkpoint_every=1, checkpoint_seconds=0, workers=1).attach()
    w.dyn.before_write = None
    with open(str(tmp_path / "record.json")) as f:
        entries = json.load(f)["entries"]
    assert 0 < sum(1 for e in entries.values() if e["done"]) < 7


def test_a_costly_checkpoint_is_made_less_often(tmp_path, monkeypatch):
    """Checkpoints come at most once per ``checkpoint_seconds`` and at most once per ten times the last one's own
    duration: a record that takes long to save is not saved after every few dependents. The end state is saved."""
    w = World()
    w.runner(tmp_path).detach()
    w.recreate_owners()
    saves = []
    real_save = RecordStore.save

    def slow_save(self):
        saves.append(len([e for e in self.entries.values() if e.get("done")]))
        time.sleep(0.05)  # 10 x 0.05 s: no second checkpoint within half a second
        return real_save(self)
    monkeypatch.setattr(RecordStore, "save", slow_save)
    w.dyn.before_write = lambda method, path, body: time.sleep(0.01) if method == "PATCH" else None
    result = w.runner(tmp_path, checkpoint_every=1, checkpoint_seconds=0.001, workers=1).attach()
    w.dyn.before_write = None
    assert result["record"]["pending"] == 0
    assert saves[-1] == 7  # the final state, saved
    assert len(saves) <= 3, saves  # not one per dependent (6), as the 1 ms interval alone would give


def test_attach_restores_the_recorded_order_of_references(tmp_path):
    w = World()
    mixed = [ref(w.np), w.other_ref, ref(w.gnp, controller=False)]
    w.dyn.put("v1", "configmaps", {"metadata": {"name": "mixed", "namespace": "a", "ownerReferences": mixed}})
    w.runner(tmp_path).detach()
    assert w.refs("v1", "configmaps", "a", "mixed") == [w.other_ref]
    w.recreate_owners()
    w.runner(tmp_path).attach()
    assert w.refs("v1", "configmaps", "a", "mixed") == [ref(w.np), w.other_ref, ref(w.gnp, controller=False)]


def test_attach_lists_instead_of_getting_many_dependents_of_one_type_and_namespace(tmp_path):
    w = World()
    for i in range(12):
        w.dyn.put("v1", "configmaps", {"metadata": {"name": "many-%02d" % i, "namespace": "m",
                                                    "ownerReferences": [ref(w.gnp)]}})
    w.runner(tmp_path).detach()
    w.recreate_owners()
    # one of them is replaced by another object with its name: it must count as gone, not be re-attached
    w.dyn.remove("v1", "configmaps", "many-03", "m")
    w.dyn.put("v1", "configmaps", {"metadata": {"name": "many-03", "namespace": "m"}})
    start = len(w.dyn.log)
    result = w.runner(tmp_path).attach()
    reads = [e for e in w.dyn.log[start:] if e[0] == "GET"]
    assert [e for e in reads if e[1].startswith("/api/v1/namespaces/m/configmaps/")] == []
    assert len([e for e in reads if e[1] == "/api/v1/namespaces/m/configmaps"]) == 1
    assert result["counts"]["attached"] == 7 + 11 and result["counts"]["dependents_gone"] == 1
    for i in range(12):
        refs = w.refs("v1", "configmaps", "m", "many-%02d" % i)
        assert refs == (None if i == 3 else [ref(w.gnp)])


def test_attach_without_a_record_fails_naming_where_it_looked_and_where_one_is(tmp_path):
    w = World()
    w.runner(tmp_path, record_name="the-record").detach()
    other = tmp_path / "elsewhere"
    with pytest.raises(OwnerReferencesError) as err:
        w.runner(tmp_path, record_name="a-typo", record_path=str(other / "x.json")).attach()
    msg = str(err.value)
    assert "No owner references record at ConfigMap kube-system/a-typo and file %s" % (other / "x.json") in msg
    assert "nothing was attached" in msg and "require_record=false" in msg
    assert "ConfigMap kube-system/the-record (7 entries, 7 pending)" in msg
    assert err.value.result["records_found"][0]["where"] == "ConfigMap kube-system/the-record"
    assert not [x for x in w.dyn.writes() if "/configmaps/a-typo" in x[1]]
    # the file beside the path given is found too
    with pytest.raises(OwnerReferencesError) as err:
        w.runner(tmp_path, record_name="a-typo", record_path=str(tmp_path / "y.json")).attach()
    assert "file %s (7 entries, 7 pending)" % (tmp_path / "record.json") in str(err.value)
    # said explicitly: nothing to attach
    result = w.runner(tmp_path, record_name="a-typo", record_path=str(tmp_path / "z.json"),
                      require_record=False).attach()
    assert result["changed"] is False and "nothing to attach" in result["notes"][0]


def test_missing_owner_message_names_each_dependent_and_the_owner_it_lost(tmp_path):
    w = World()
    w.runner(tmp_path).detach()
    w.recreate_owners()
    w.dyn.remove(CALICO, "globalnetworkpolicies", "gnp1")
    with pytest.raises(OwnerReferencesError) as err:
        w.runner(tmp_path).attach()
    msg = str(err.value)
    lost = sorted(m["lost"] for m in err.value.result["missing_owners"])
    assert len(lost) == 3
    for line in lost:
        assert line in msg and line.endswith(": owner GlobalNetworkPolicy gnp1 not found")
    assert "3 dependent(s) are without them" in msg


def test_a_run_killed_while_patches_are_in_flight_is_finished_by_a_rerun(tmp_path, monkeypatch):
    """Several workers: the process dies at one patch while others are in flight (no checkpoint reaches the
    record); a re-run attaches the rest and finds those that went through, with no duplicate."""
    w = World()
    w.runner(tmp_path).detach()
    w.recreate_owners()
    patches = []
    lock = threading.Lock()

    def kill_on_third_patch(method, path, body):
        if method == "PATCH":
            with lock:
                patches.append(path)
                third = len(patches) == 3
            if third:
                raise Killed()
    w.dyn.before_write = kill_on_third_patch
    monkeypatch.setattr(RecordStore, "save", lambda self: None)
    with pytest.raises(Killed):
        w.runner(tmp_path, checkpoint_every=1, checkpoint_seconds=0, workers=4).attach()
    monkeypatch.undo()
    w.dyn.before_write = None
    result = w.runner(tmp_path, workers=4).attach()
    assert result["counts"]["already_attached"] + result["counts"]["attached"] == 7
    assert result["record"]["pending"] == 0
    for key, refs in w.dependents.items():
        assert len(w.refs(*key)) == len(refs)  # no duplicate
    assert w.refs("v1", "secrets", "b", "s1") == [ref(w.np_b), ref(w.gnp)]


def test_attach_looks_up_different_owners_at_the_same_time_and_each_once(tmp_path):
    """Workers needing different owners GET them concurrently (one lock per owner, not one for all: with 50 owners
    a single lock kept every worker waiting on ~50 GETs in a row); each owner is still read once."""
    w = World()
    w.runner(tmp_path).detach()
    w.recreate_owners()
    peak, gets = peak_of(w, lambda m, p, params: m == "GET" and "policies/" in p)
    result = w.runner(tmp_path, workers=6).attach()
    assert result["counts"]["attached"] == 7 and result["failures"] == []
    assert sorted(gets) == sorted(set(gets)) and len(gets) == 3  # np a/np1, np b/np1, gnp1: once each
    assert peak[0] >= 2
