"""host_endpoints/labels.py, the migration's step "copy the labels onto the nodes" (a mixin of ``runner.Runner``),
through the runner against the in-memory API (``helpers/host_endpoints_world.py``): label conflicts resolved as
asked, a node whose labels changed since the plan planned again."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.rules import HostEndpointMigrationError

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.host_endpoints_world import World


def test_overwrite_gives_the_node_the_endpoint_value(tmp_path):
    w = World(tmp_path)
    w.dyn.put("v1", "nodes", {"metadata": {"name": "n2", "labels": {"env": "staging", "keep": "me"}}})
    res = w.runner(label_conflicts="overwrite").run("migrated")
    assert w.node_labels_now("n2") == {"env": "prod", "keep": "me"}
    assert w.heps()["n2-auto-hep"]["metadata"]["labels"]["env"] == "prod"
    assert "n2-hep" not in w.heps() and res["counts"]["deleted"] == 3
    assert res["conflicts"][0]["resolution"] == "overwrite"


def test_skip_keeps_the_node_value(tmp_path):
    w = World(tmp_path)
    w.dyn.put("v1", "nodes", {"metadata": {"name": "n1", "labels": {"env": "staging"}}})
    res = w.runner(label_conflicts="skip").run("migrated")
    assert w.node_labels_now("n1") == {"env": "staging", "zone": "a", "role": "edge"}
    assert w.heps()["n1-auto-hep"]["metadata"]["labels"]["env"] == "staging"
    assert "n1-hep" not in w.heps() and res["counts"]["deleted"] == 3
    n1 = [n for n in res["nodes"] if n["node"] == "n1"][0]
    assert n1["skipped_labels"] == ["env"] and n1["copied_labels"] == {"zone": "a", "role": "edge"}


def test_a_node_label_changed_since_the_plan_is_planned_again(tmp_path):
    w = World(tmp_path)
    seen = []

    def concurrent(method, path, body):
        if method == "PATCH" and path.startswith("/api/v1/nodes/") and not seen:
            seen.append(path)
            n1 = w.dyn.obj("v1", "nodes", "n1")
            n1["metadata"]["labels"]["role"] = "core"  # someone labels n1 in the meantime: now a conflict
            w.dyn.put("v1", "nodes", n1)
            n2 = w.dyn.obj("v1", "nodes", "n2")
            n2["metadata"]["labels"]["unrelated"] = "x"  # and n2, harmlessly
            w.dyn.put("v1", "nodes", n2)
            w.dyn.put("v1", "nodes", w.dyn.obj("v1", "nodes", "n3"))  # n3: a status heartbeat, new resourceVersion
    w.dyn.before_write = concurrent
    with pytest.raises(HostEndpointMigrationError) as err:
        w.runner().run("migrated")
    assert "node n1: label role changed to 'core' since the plan and conflicts with 'edge'" in str(err.value)
    assert w.node_labels_now("n1")["role"] == "core"  # not overwritten
    assert "n1-hep" in w.heps()  # n1 does not go further
    assert w.node_labels_now("n2") == {"kubernetes.io/hostname": "n2", "unrelated": "x", "env": "prod"}
    assert "n2-hep" not in w.heps() and "n3-hep" not in w.heps()
    # only n1 and n2 were read again; n3's patch went through at once (its labels had not changed)
    assert [p for m, p, _q in w.dyn.log if m == "GET" and p.startswith("/api/v1/nodes/")] == [
        "/api/v1/nodes/n1", "/api/v1/nodes/n2"]
    assert [p for m, p, _q in w.dyn.log if m == "PATCH" and p.startswith("/api/v1/nodes/")] == [
        "/api/v1/nodes/n1", "/api/v1/nodes/n2", "/api/v1/nodes/n2", "/api/v1/nodes/n3"]
