"""owner_references.Runner against the in-memory API (the real Client, a fake transport)."""

import json
import time
import threading
import os

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references.rules import (
    OwnerReferencesError, entry_key)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references.runner import Runner, run
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records import files as record_files
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.store import RecordStore
from ansible_collections.calico_ops.lifecycle.tests.unit.plugins.module_utils.fake_k8s import client, standard_api

CALICO = "projectcalico.org/v3"


class Killed(BaseException):
    """The module's process dies here."""


def ref(owner, controller=None, block=None):
    out = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
           "uid": owner["metadata"]["uid"]}
    if controller is not None:
        out["controller"] = controller
    if block is not None:
        out["blockOwnerDeletion"] = block
    return out


class World(object):
    """Owners (Calico NetworkPolicy + GlobalNetworkPolicy, a non-Calico Deployment) and their dependents."""

    def __init__(self):
        self.dyn = dyn = standard_api()
        self.np = dyn.put(CALICO, "networkpolicies", {"apiVersion": CALICO, "kind": "NetworkPolicy",
                                                      "metadata": {"name": "np1", "namespace": "a"}})
        self.np_b = dyn.put(CALICO, "networkpolicies", {"apiVersion": CALICO, "kind": "NetworkPolicy",
                                                        "metadata": {"name": "np1", "namespace": "b"}})
        self.gnp = dyn.put(CALICO, "globalnetworkpolicies", {"apiVersion": CALICO, "kind": "GlobalNetworkPolicy",
                                                             "metadata": {"name": "gnp1"}})
        self.other = dyn.put("apps/v1", "deployments", {"metadata": {"name": "keeper", "namespace": "a"}})
        self.other["apiVersion"], self.other["kind"] = "apps/v1", "Deployment"
        self.other_ref = ref(self.other, controller=False)
        self.dependents = {
            ("v1", "configmaps", "a", "cm1"): [ref(self.np, controller=True, block=True)],
            ("v1", "configmaps", "a", "cm2"): [self.other_ref, ref(self.np)],
            ("v1", "secrets", "b", "s1"): [ref(self.np_b), ref(self.gnp)],
            ("apps/v1", "deployments", "a", "d1"): [ref(self.gnp, block=True)],
            ("example.com/v1", "widgets", "b", "w1"): [ref(self.np_b, controller=True)],
            ("v1", "namespaces", None, "c"): [ref(self.gnp)],
        }
        for (av, plural, ns, name), refs in self.dependents.items():
            meta = {"name": name, "ownerReferences": refs}
            if ns:
                meta["namespace"] = ns
            dyn.put(av, plural, {"metadata": meta})
        dyn.put("v1", "configmaps", {"metadata": {"name": "plain", "namespace": "a"}})
        dyn.put("v1", "events", {"metadata": {"name": "ev", "namespace": "a",
                                              "ownerReferences": [self.other_ref]}})

    def refs(self, av, plural, ns, name):
        return (self.dyn.obj(av, plural, name, ns)["metadata"]).get("ownerReferences")

    def recreate_owners(self):
        """What the v3.28 upgrade does: same owners, new UIDs."""
        for plural, owner in (("networkpolicies", self.np), ("networkpolicies", self.np_b),
                              ("globalnetworkpolicies", self.gnp)):
            meta = owner["metadata"]
            self.dyn.remove(CALICO, plural, meta["name"], meta.get("namespace"))
            fresh = dict(owner, metadata={k: v for k, v in meta.items() if k not in ("uid", "resourceVersion")})
            owner["metadata"]["uid"] = self.dyn.put(CALICO, plural, fresh)["metadata"]["uid"]

    def runner(self, tmp_path, check_mode=False, **kw):
        kw.setdefault("record_path", str(tmp_path / "record.json"))
        return Runner(client(self.dyn, check_mode=check_mode), **kw)


def calico_refs(refs):
    return [r for r in refs or [] if r["apiVersion"] == CALICO]


def test_detach_records_first_then_removes_only_calico_references(tmp_path):
    w = World()
    record_path = str(tmp_path / "record.json")
    seen_at_first_patch = []
    lock = threading.Lock()  # the patches go out from several threads

    def check_record(method, path, body):
        with lock:
            if method == "PATCH" and not seen_at_first_patch:
                cm = w.dyn.obj("v1", "configmaps", "calico-ops-owner-references", "kube-system")
                with open(record_path) as f:
                    seen_at_first_patch.append((len(json.loads(cm["data"]["record.json"])["entries"]),
                                                len(json.load(f)["entries"])))
    w.dyn.before_write = check_record
    result = w.runner(tmp_path, diff=True).detach()

    assert seen_at_first_patch == [(7, 7)]  # both copies held all 7 references before the first removal
    assert result["changed"] is True
    c = result["counts"]
    assert (c["affected"], c["recorded"], c["detached"], c["unlistable_types"]) == (6, 7, 7, 0)
    assert c["scanned_types"] == 10
    # objects: 13 stored (the event counted once although two groups serve it)
    assert c["objects"] == 13
    for key in w.dependents:
        assert calico_refs(w.refs(*key)) == []
    assert w.refs("v1", "configmaps", "a", "cm2") == [w.other_ref]
    assert w.refs("v1", "events", "a", "ev") == [w.other_ref]
    assert "ownerReferences" not in w.dyn.obj("v1", "configmaps", "cm1", "a")["metadata"]
    assert sorted(o["action"] for o in result["objects"]) == ["detached"] * 6
    assert len(result["diff"]) == 6
    assert result["record"]["entries"] == 7 and result["record"]["pending"] == 7
    # the file entries carry what attach needs
    with open(record_path) as f:
        entries = json.load(f)["entries"]
    ns_entry = [e for e in entries.values() if e["dependent"]["kind"] == "Namespace"][0]
    assert ns_entry["dependent"] == {"apiVersion": "v1", "kind": "Namespace", "resource": "namespaces",
                                     "name": "c", "uid": ns_entry["dependent"]["uid"]}
    assert ns_entry["ownerReference"] == ref(w.gnp)


def test_patches_are_guarded_by_a_test_of_the_current_references(tmp_path):
    w = World()
    patches = []
    orig = w.dyn.request

    def spy(method, path, body=None, **params):
        if method == "PATCH":
            patches.append(body)
        return orig(method, path, body=body, **params)
    w.dyn.request = spy
    w.runner(tmp_path).detach()
    for ops in patches:
        assert ops[0]["op"] == "test" and ops[0]["path"] == "/metadata/uid"
        assert ops[1] == {"op": "test", "path": "/metadata/ownerReferences", "value": ops[1]["value"]}
        assert calico_refs(ops[1]["value"])


def test_detach_again_records_nothing_and_writes_nothing(tmp_path):
    w = World()
    w.runner(tmp_path).detach()
    writes = len(w.dyn.writes())
    result = w.runner(tmp_path).detach()
    assert result["changed"] is False
    assert len(w.dyn.writes()) == writes
    assert result["counts"]["recorded"] == 0 and result["counts"]["affected"] == 0
    assert result["record"]["pending"] == 7  # kept


def test_a_reference_added_concurrently_is_recorded_before_it_is_removed_and_others_survive(tmp_path):
    w = World()
    late_np = w.dyn.put(CALICO, "networkpolicies", {"apiVersion": CALICO, "kind": "NetworkPolicy",
                                                    "metadata": {"name": "late", "namespace": "a"}})
    extra_owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "plain", "uid": "u-plain"}
    fired = []

    def concurrent_writer(method, path, body):
        if method == "PATCH" and path.endswith("/configmaps/cm1") and not fired:
            fired.append(1)
            cm = w.dyn.obj("v1", "configmaps", "cm1", "a")
            cm["metadata"]["ownerReferences"] += [ref(late_np), extra_owner]
            w.dyn.put("v1", "configmaps", cm)
    w.dyn.before_write = concurrent_writer
    result = w.runner(tmp_path).detach()
    assert fired
    assert w.refs("v1", "configmaps", "a", "cm1") == [extra_owner]  # the concurrent non-Calico owner kept
    store = RecordStore(client(w.dyn), "kube-system", "calico-ops-owner-references",
                        str(tmp_path / "record.json"), "owner_references", cluster_id="cluster-uid-1")
    entries = store.load()
    assert len(entries) == 8
    cm1_uid = w.dyn.obj("v1", "configmaps", "cm1", "a")["metadata"]["uid"]
    assert entry_key(cm1_uid, ref(late_np)) in entries
    assert result["counts"]["detached"] == 8


def test_unlistable_types_stop_everything_before_any_write(tmp_path):
    w = World()
    w.dyn.failing["metrics.example/v1beta1"] = (503, "Service Unavailable")
    w.dyn.add_type("metrics.example/v1beta1", "nodemetrics", "NodeMetrics")
    w.dyn.list_failing["v1/secrets"] = (403, "Forbidden")
    with pytest.raises(OwnerReferencesError) as err:
        w.runner(tmp_path).detach()
    assert w.dyn.writes() == []
    assert not os.path.exists(str(tmp_path / "record.json"))
    assert "metrics.example/v1beta1" in str(err.value) and "v1/secrets" in str(err.value)
    res = err.value.result
    assert res["counts"]["unlistable_types"] == 2
    assert sorted((u["type"], u["status"], u["stage"]) for u in res["unlistable"]) == [
        ("metrics.example/v1beta1", 503, "discovery"), ("v1/secrets", 403, "list")]

    # told to go on without them: everything listable is detached, the rest reported
    result = w.runner(tmp_path, fail_on_unlistable=False).detach()
    assert result["counts"]["unlistable_types"] == 2
    assert result["counts"]["detached"] == 5  # the secret's two references were not seen
    assert calico_refs(w.refs("v1", "secrets", "b", "s1"))


def test_check_mode_detach_reports_and_writes_nothing(tmp_path):
    w = World()
    result = w.runner(tmp_path, check_mode=True, diff=True).detach()
    assert w.dyn.writes() == []
    assert not os.path.exists(str(tmp_path / "record.json"))
    assert result["changed"] is True and result["check_mode"] is True
    assert result["counts"]["detached"] == 7 and result["counts"]["affected"] == 6
    assert sorted(set(o["action"] for o in result["objects"])) == ["would detach"]
    diff = [d for d in result["diff"] if d["before_header"] == "ConfigMap a/cm2"][0]
    assert diff["after"] == {"metadata": {"ownerReferences": [w.other_ref]}}
    for key in w.dependents:
        assert len(calico_refs(w.refs(*key))) == len(calico_refs(w.dependents[key]))


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


def test_pagination_sees_every_object(tmp_path):
    w = World()
    for i in range(7):
        w.dyn.put("v1", "configmaps", {"metadata": {"name": "p%d" % i, "namespace": "z",
                                                    "ownerReferences": [ref(w.gnp)]}})
    result = w.runner(tmp_path, page_size=2).detach()
    assert result["counts"]["detached"] == 14
    lists = [e for e in w.dyn.log if e[0] == "GET" and e[1] == "/api/v1/configmaps"]
    assert len(lists) >= 5 and all(e[2]["limit"] == 2 for e in lists)


def test_owner_api_versions_selects_which_references_move(tmp_path):
    w = World()
    result = w.runner(tmp_path, owner_api_versions=["apps/v1"]).detach()
    assert result["counts"]["detached"] == 2  # cm2 and the event point at the Deployment
    assert w.refs("v1", "configmaps", "a", "cm2") == [ref(w.np)]


def test_run_entry_point_and_default_record_path(tmp_path, monkeypatch):
    monkeypatch.setattr(record_files, "DEFAULT_RECORD_DIR", str(tmp_path / "records"))
    w = World()
    result = run(client(w.dyn), {"state": "detached", "owner_api_versions": [CALICO],
                                 "record_namespace": "kube-system", "record_name": "calico-ops-owner-references",
                                 "record_path": None, "fail_on_unlistable": True,
                                 "fail_on_missing_owner": True, "page_size": 500})
    assert result["record"]["path"] == str(tmp_path / "records" / "calico-ops-owner-references-cluster-uid-1.json")
    assert os.path.exists(result["record"]["path"])
    with pytest.raises(ValueError):
        Runner(client(w.dyn)).run("absent")


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


def test_a_dependent_deleted_while_detaching_is_reported_gone(tmp_path):
    w = World()

    def delete_first(method, path, body):
        if method == "PATCH" and path.endswith("/configmaps/cm1"):
            w.dyn.remove("v1", "configmaps", "cm1", "a")
    w.dyn.before_write = delete_first
    result = w.runner(tmp_path).detach()
    assert [o["action"] for o in result["objects"] if o["name"] == "cm1"] == ["gone"]
    assert result["counts"]["failed"] == 0 and result["counts"]["detached"] == 6


def test_objects_are_read_as_metadata_only_so_no_secret_data_is_ever_received(tmp_path):
    """Every read of an object (scan, owner lookup, dependent re-read) asks for PartialObjectMetadata: a Secret's
    data never reaches the module (the fake answers the header as the API server does)."""
    world = World()
    world.dyn.put("v1", "secrets", {"metadata": {"name": "creds", "namespace": "b",
                                                 "ownerReferences": [ref(world.np_b)]},
                                    "data": {"password": "c2VjcmV0"}})
    runner = world.runner(tmp_path)
    result = runner.run("detached")
    assert ("v1", "secrets", "b", "creds") in [
        (d["apiVersion"], d["resource"], d.get("namespace"), d["name"])
        for d in (e["dependent"] for e in runner.store.entries.values())]
    world.recreate_owners()
    world.runner(tmp_path).run("attached")

    def is_own(path):  # the module's own record (ConfigMaps in kube-system) and the cluster's identity
        return path.startswith("/api/v1/namespaces/kube-system/configmaps") or path == "/api/v1/namespaces/kube-system"
    object_reads = [(m, p, a) for m, p, a in world.dyn.accepts
                    if m == "GET" and len([x for x in p.split("/") if x]) > (3 if p.startswith("/apis/") else 2)
                    and not is_own(p)]
    assert any("/secrets" in p for _m, p, _a in object_reads), "the runner read no Secrets"
    assert [r for r in object_reads if "as=PartialObjectMetadata" not in r[2]] == []
    assert "c2VjcmV0" not in json.dumps(result, default=str)
    assert world.dyn.obj("v1", "secrets", "creds", "b")["data"] == {"password": "c2VjcmV0"}
    assert calico_refs(world.refs("v1", "secrets", "b", "creds"))[0]["uid"] == world.np_b["metadata"]["uid"]


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


def test_an_empty_owner_api_versions_is_refused():
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references.runner import run
    with pytest.raises(OwnerReferencesError, match="owner_api_versions is an empty list"):
        run(None, {"state": "detached", "owner_api_versions": []})


def _detach_attach(tmp_path, workers):
    w = World()
    detached = w.runner(tmp_path / "d", workers=workers, diff=True).detach()
    w.recreate_owners()
    attached = w.runner(tmp_path / "d", workers=workers, diff=True).attach()
    return w, detached, attached


def test_several_workers_give_the_results_of_one(tmp_path):
    """Patches sent several at a time: the same counts, the same reports in the same order, the same diffs and the
    same references as one request at a time."""
    one = _detach_attach(tmp_path / "one", 1)
    many = _detach_attach(tmp_path / "many", 4)
    for a, b in ((one[1], many[1]), (one[2], many[2])):
        assert a["counts"] == b["counts"]
        assert sorted((o["kind"], o.get("namespace"), o["name"], o["action"]) for o in a["objects"]) == sorted(
            (o["kind"], o.get("namespace"), o["name"], o["action"]) for o in b["objects"])
        assert sorted(d["before_header"] for d in a["diff"]) == sorted(d["before_header"] for d in b["diff"])
    # in the order the job handles them, whatever the order the patches went out in: the scan's at detach, the
    # record's (by dependent UID within a chunk) at attach
    assert [o["name"] for o in many[1]["objects"]] == [o["name"] for o in one[1]["objects"]]
    assert [o["uid"] for o in many[2]["objects"]] == sorted(o["uid"] for o in many[2]["objects"])
    assert [d["before_header"] for d in many[2]["diff"]] == [
        "%s %s%s" % (o["kind"], o["namespace"] + "/" if o.get("namespace") else "", o["name"])
        for o in many[2]["objects"]]
    assert many[2]["counts"]["attached"] == 7 and many[2]["record"]["pending"] == 0
    for key, refs in many[0].dependents.items():
        assert [r["name"] for r in many[0].refs(*key)] == [r["name"] for r in refs]


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
    peak, gets = _peak_of(w, lambda m, p, params: m == "GET" and "policies/" in p)
    result = w.runner(tmp_path, workers=6).attach()
    assert result["counts"]["attached"] == 7 and result["failures"] == []
    assert sorted(gets) == sorted(set(gets)) and len(gets) == 3  # np a/np1, np b/np1, gnp1: once each
    assert peak[0] >= 2


def test_a_secret_dependent_s_data_never_reaches_the_module(tmp_path):
    """The scan reads metadata only, and each patch asks for the patched object's metadata back: the Secret's
    data is in no answer the module receives, detach or attach."""
    w = World()
    secret = w.dyn.obj("v1", "secrets", "s1", "b")
    secret["data"] = {"password": "aHVudGVyMg=="}
    w.dyn.put("v1", "secrets", secret)
    plain = w.dyn.request
    answers = []

    def request(method, path, body=None, **params):
        resp = plain(method, path, body, **params)
        answers.append((method, path, resp.data.decode("utf-8")))
        return resp
    w.dyn.request = request
    w.runner(tmp_path).detach()
    w.recreate_owners()
    w.runner(tmp_path).attach()
    patched = [p for m, p, _a in answers if m == "PATCH" and p.endswith("/secrets/s1")]
    assert len(patched) == 2  # detached, then attached
    assert [a for _m, _p, a in answers if "aHVudGVyMg==" in a] == []
    assert w.dyn.obj("v1", "secrets", "s1", "b")["data"] == {"password": "aHVudGVyMg=="}


def _peak_of(w, is_counted):
    """Wrap the fake API's requests: (peak of the counted ones in flight at once, their paths)."""
    plain = w.dyn.request
    active, peak, seen, lock = [0], [0], [], threading.Lock()

    def request(method, path, body=None, **params):
        counted = is_counted(method, path, params)
        if counted:
            with lock:
                seen.append(path)
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            time.sleep(0.02)
        try:
            return plain(method, path, body, **params)
        finally:
            if counted:
                with lock:
                    active[0] -= 1
    w.dyn.request = request
    return peak, seen


def test_the_scan_lists_the_types_several_at_a_time_and_reports_in_discovery_order(tmp_path):
    one = World().runner(tmp_path / "one", workers=1).detach()
    w = World()
    peak, lists = _peak_of(w, lambda m, p, params: m == "GET" and "PartialObjectMetadataList" in str(params))
    many = w.runner(tmp_path / "many", workers=4).detach()
    assert peak[0] >= 2 and len(lists) == len(set(lists)) >= 10  # each type once
    assert many["counts"] == one["counts"]
    assert [(o["kind"], o.get("namespace"), o["name"], o["action"]) for o in many["objects"]] == [
        (o["kind"], o.get("namespace"), o["name"], o["action"]) for o in one["objects"]]
