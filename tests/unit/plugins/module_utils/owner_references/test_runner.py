"""owner_references/runner.py: the Runner (state ``detached``, and what both states share) and ``run`` against the
in-memory API (the real Client, a fake transport; ``helpers/owner_references_world.py``)."""

from __future__ import absolute_import, division, print_function

import json
import os
import threading

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.report import DEFAULT_REPORT_LIMIT
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references.rules import OwnerReferencesError, entry_key
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references.runner import Runner, run
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records import files as record_files
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.store import RecordStore

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import NoClient, client
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.owner_references_world import CALICO, World, calico_refs, peak_of, ref


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


def test_the_scan_lists_the_types_several_at_a_time_and_reports_in_discovery_order(tmp_path):
    one = World().runner(tmp_path / "one", workers=1).detach()
    w = World()
    peak, lists = peak_of(w, lambda m, p, params: m == "GET" and "PartialObjectMetadataList" in str(params))
    many = w.runner(tmp_path / "many", workers=4).detach()
    assert peak[0] >= 2 and len(lists) == len(set(lists)) >= 10  # each type once
    assert many["counts"] == one["counts"]
    assert [(o["kind"], o.get("namespace"), o["name"], o["action"]) for o in many["objects"]] == [
        (o["kind"], o.get("namespace"), o["name"], o["action"]) for o in one["objects"]]


def test_owner_references_refuses_zero_workers_before_any_request():
    with pytest.raises(OwnerReferencesError, match="workers is 0: .*1 or more.*nothing was read or written"):
        run(NoClient(), {"state": "detached", "workers": 0})


def test_owner_references_refuses_a_negative_limit_before_any_request():
    with pytest.raises(OwnerReferencesError, match="report_limit is -1: .*0 or more.*nothing was read or written"):
        run(NoClient(), {"state": "detached", "report_limit": -1})


def test_owner_references_lists_the_first_objects_and_records_every_one(tmp_path):
    """The same run with a limit of 2 and without one: the same counts and record, the first two objects listed."""
    full = World().runner(tmp_path / "full", report_limit=1000).detach()
    w = World()
    cut = w.runner(tmp_path / "cut", report_limit=2).detach()
    assert cut["counts"] == full["counts"] and cut["counts"]["affected"] == 6
    assert [o["name"] for o in cut["objects"]] == [o["name"] for o in full["objects"]][:2]
    assert cut["not_listed"] == {"objects": 4} and full["not_listed"] == {"objects": 0}
    assert cut["record"]["entries"] == full["record"]["entries"] == 7
    w.recreate_owners()
    attached = w.runner(tmp_path / "cut", report_limit=0).attach()
    assert attached["objects"] == [] and attached["not_listed"] == {"objects": 6}
    assert attached["counts"]["attached"] == 7 and attached["record"]["pending"] == 0


def test_owner_references_lists_100_by_default(tmp_path):
    res = World().runner(tmp_path).detach()
    assert len(res["objects"]) == 6 and res["not_listed"] == {"objects": 0}
    assert World().runner(tmp_path / "d").report_limit == DEFAULT_REPORT_LIMIT == 100
