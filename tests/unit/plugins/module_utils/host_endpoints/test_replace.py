"""host_endpoints/replace.py, the migration's steps "wait, record, delete" and "restore" (a mixin of
``runner.Runner``), through the runner against the in-memory API (``helpers/host_endpoints_world.py``)."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.rules import HostEndpointMigrationError

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.host_endpoints_world import CRD, Killed, RECORD, World, dry_run, hep


def test_a_node_whose_automatic_endpoint_never_appears_keeps_its_old_endpoint(tmp_path):
    w = World(tmp_path)
    w.controllers.skip = {"n2"}
    progress = tmp_path / "progress.log"
    with pytest.raises(HostEndpointMigrationError) as err:
        w.runner(wait_timeout=10, progress_path=str(progress)).run("migrated")
    msg = str(err.value)
    assert "1 node(s) kept their old host endpoint(s)" in msg and "n2 (no automatic host endpoint)" in msg
    assert "no status.runningConfig" in msg  # the hint: calico-kube-controllers does not report
    res = err.value.result
    assert res["changed"] is True
    assert res["not_replaced"] == [{"node": "n2", "endpoints": ["n2-hep"], "reason": "no automatic host endpoint"}]
    assert "n2-hep" in w.heps() and "n1-hep" not in w.heps() and "n3-hep" not in w.heps()
    assert sum(w.slept) == pytest.approx(10)
    entries = dict((e["endpoint"]["metadata"]["name"], e) for e in w.record().values())
    assert sorted(entries) == ["n1-hep", "n2-hep", "n3-hep"]  # all recorded before the first delete
    assert [n for n in sorted(entries) if entries[n].get("deleted")] == ["n1-hep", "n3-hep"]
    text = progress.read_text()
    assert oct(progress.stat().st_mode & 0o777) == "0o600"  # for its user only
    assert "node n1: automatic host endpoint n1-auto-hep present" in text
    assert "node n2: no automatic host endpoint after 10s: old host endpoint(s) n2-hep kept" in text

    # resumable: once the replacement exists, a re-run finishes (labels are in place: no label writes)
    w.controllers.skip = set()
    w.controllers.step()
    mark = len(w.dyn.log)
    res = w.runner().run("migrated")
    assert res["counts"]["deleted"] == 1 and res["counts"]["nodes_labelled"] == 0
    assert [e[0] for e in w.dyn.log[mark:] if e[0] != "GET" and not dry_run(e)] == ["DELETE", "PUT"]  # delete, then the mark
    assert "n2-hep" not in w.heps()
    assert all(e["deleted"] for e in w.record().values())


def test_an_automatic_endpoint_without_the_copied_labels_is_not_enough(tmp_path):
    w = World(tmp_path, kcc="Enabled")
    # calico-kube-controllers made n1's endpoint before the labels were copied, and has not synced yet
    w.dyn.put(CRD, "hostendpoints", hep("n1-auto-hep", "n1", {rules.CREATED_BY_LABEL: rules.CREATED_BY_VALUE}))
    w.controllers.skip = {"n1"}
    with pytest.raises(HostEndpointMigrationError) as err:
        w.runner(wait_timeout=3).run("migrated")
    assert "n1 (automatic host endpoint n1-auto-hep lacks the label(s) env, role, zone)" in str(err.value)
    assert "n1-hep" in w.heps()


def test_an_old_endpoint_relabelled_during_the_wait_is_kept(tmp_path):
    w = World(tmp_path)

    def relabel(seconds):
        hep3 = w.dyn.obj(CRD, "hostendpoints", "n3-hep")
        if hep3 is not None and "new" not in hep3["metadata"]["labels"]:
            hep3["metadata"]["labels"]["new"] = "label"
            w.dyn.put(CRD, "hostendpoints", hep3)
        World.sleep(w, seconds)
    w.sleep = relabel
    with pytest.raises(HostEndpointMigrationError) as err:
        w.runner().run("migrated")
    assert "HostEndpoint n3-hep: its labels changed since the plan, so it is kept" in str(err.value)
    assert "n3-hep" in w.heps() and "n1-hep" not in w.heps()


def test_killed_between_record_and_delete_then_resumed_and_restored(tmp_path):
    w = World(tmp_path)
    w.controllers.per_step = 3

    def die(method, path, body):
        if method == "DELETE" and "/hostendpoints/n2-hep" in path:
            raise Killed()
    w.dyn.before_write = die
    with pytest.raises(Killed):
        w.runner().run("migrated")
    assert "n1-hep" not in w.heps() and "n2-hep" in w.heps() and "n3-hep" in w.heps()
    entries = w.record()
    assert len(entries) == 3 and not any(e.get("deleted") for e in entries.values())  # recorded first
    w.dyn.before_write = None
    res = w.runner().run("migrated")
    assert res["counts"]["deleted"] == 2 and res["counts"]["old"] == 2  # n1-hep went before the kill
    assert len(w.record()) == 3  # the same entries, no duplicates

    # restored: every recorded endpoint is back, as it was
    res = w.runner(diff=True).run("restored")
    assert res["changed"] is True and res["counts"]["restored"] == 3
    for name, (node, labels) in w.old.items():
        back = w.heps()[name]
        assert back["metadata"]["labels"] == labels and back["spec"]["node"] == node
        assert back["spec"]["profiles"] == ["old-profile"]
    assert all(e["done"] and e["outcome"] == "restored" for e in w.record().values())
    assert [d["before"] for d in res["diff"]] == [{}, {}, {}]
    mark = len(w.dyn.log)
    again = w.runner().run("restored")
    assert again["changed"] is False and [e for e in w.dyn.log[mark:] if e[0] != "GET" and not dry_run(e)] == []

    # a second migration records the re-created endpoints as new entries (new UIDs)
    res = w.runner().run("migrated")
    assert res["counts"]["deleted"] == 3 and len(w.record()) == 6


def test_restore_check_mode_writes_nothing(tmp_path):
    w = World(tmp_path)
    w.runner().run("migrated")
    mark = len(w.dyn.log)
    res = w.runner(check_mode=True, diff=True).run("restored")
    assert [e for e in w.dyn.log[mark:] if e[0] != "GET" and not dry_run(e)] == []
    assert res["changed"] is True and res["counts"]["restored"] == 3
    assert set(e["action"] for e in res["endpoints"]) == {"would restore"}
    assert not any(n in w.heps() for n in w.old)


def test_restore_from_the_file_alone(tmp_path):
    w = World(tmp_path)
    w.runner().run("migrated")
    w.dyn.remove("v1", "configmaps", RECORD, "kube-system")
    res = w.runner().run("restored")
    assert res["counts"]["restored"] == 3 and all(n in w.heps() for n in w.old)
