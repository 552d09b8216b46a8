"""host_endpoints/runner.py: host_endpoint_migration's Runner and ``run`` against the in-memory API (the real Client,
a fake transport; ``helpers/host_endpoints_world.py``): the whole job, which API it uses, bad input refused before
any request, what the result lists."""

from __future__ import absolute_import, division, print_function

import copy
import os

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.rules import HostEndpointMigrationError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.runner import run

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import NoClient, client
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.host_endpoints_world import CRD, HepFake, V3, World, dry_run, hep, writes


# -- migrated -------------------------------------------------------------------------------------------------

def test_migration_copies_labels_enables_auto_create_and_deletes_each_old_endpoint_after_its_replacement(tmp_path):
    w = World(tmp_path)
    untouched = dict((n, copy.deepcopy(w.heps()[n])) for n in w.untouched)
    res = w.runner(diff=True).run("migrated")
    assert res["changed"] is True
    assert res["counts"]["old"] == 3 and res["counts"]["automatic"] == 2 and res["counts"]["other"] == 1
    assert res["counts"]["deleted"] == 3 and res["counts"]["nodes_labelled"] == 3
    assert res["labels"] == {"n1": {"env": "prod", "role": "edge"}, "n2": {"env": "prod"}, "n3": {"tier": "db"}}
    for name, (node, labels) in w.old.items():
        assert name not in w.heps()
        for key, value in labels.items():
            assert w.node_labels_now(node)[key] == value
            assert w.heps()[node + "-auto-hep"]["metadata"]["labels"][key] == value
    kcc = w.dyn.obj(CRD, "kubecontrollersconfigurations", "default")
    assert kcc["spec"]["controllers"]["node"] == {"syncLabels": "Enabled", "hostEndpoint": {"autoCreate": "Enabled"}}
    assert kcc["spec"]["controllers"]["policy"] == {"reconcilerPeriod": "5m"}
    assert res["kube_controllers"]["action"] == "patched"
    for name, obj in untouched.items():
        assert w.heps()[name] == obj  # same resourceVersion: never written

    log = w.dyn.writes()
    paths = [p for _m, p, _q in log]
    assert not any(p.endswith("/" + n) for p in paths for n in w.untouched)
    # (1) labels, (2) autoCreate, then per node: record saved, then delete; each delete after its replacement
    first_kcc = next(i for i, p in enumerate(paths) if "kubecontrollersconfigurations" in p)
    assert all(paths[i].startswith("/api/v1/nodes/") for i in range(first_kcc))
    deletes = [(i, p.rsplit("/", 1)[1]) for i, (m, p, _q) in enumerate(log) if m == "DELETE"]
    assert [n for _i, n in deletes] == ["n1-hep", "n2-hep", "n3-hep"]
    log_index = [i for i, e in enumerate(w.dyn.log) if e[0] not in ("GET", "HEAD") and not dry_run(e)]
    created_at = dict((node, pos) for pos, node in w.controllers.created)
    for i, name in deletes:
        node = w.old[name][0]
        assert created_at[node] <= log_index[i], "deleted %s before %s-auto-hep existed" % (name, node)
        record_writes = [j for j, p in enumerate(paths[:i]) if "/configmaps" in p]
        assert record_writes, "no record written before deleting %s" % name
    # one node per poll: the deletes are interleaved with the waits, not all at the end
    assert [n["node"] for n in res["nodes"]] == ["n1", "n2", "n3"]
    assert [n["status"] for n in res["nodes"]] == ["replaced"] * 3
    assert [n["waited_s"] for n in res["nodes"]] == [1.0, 2.0, 3.0]

    entries = w.record()
    assert sorted(e["endpoint"]["metadata"]["name"] for e in entries.values()) == ["n1-hep", "n2-hep", "n3-hep"]
    assert all(e["deleted"] and not e["done"] for e in entries.values())
    assert w.file_record() == entries
    n1 = [e for e in entries.values() if e["endpoint"]["metadata"]["name"] == "n1-hep"][0]
    assert n1["endpoint"]["metadata"]["labels"] == {"env": "prod", "zone": "a", "role": "edge"}
    assert n1["endpoint"]["spec"]["profiles"] == ["old-profile"] and n1["automatic_endpoint"] == "n1-auto-hep"

    headers = [d["before_header"] for d in res["diff"]]
    assert headers == ["Node n1", "Node n2", "Node n3", "KubeControllersConfiguration default",
                       "HostEndpoint n1-hep", "HostEndpoint n2-hep", "HostEndpoint n3-hep"]
    assert res["diff"][0]["after"]["metadata"]["labels"]["role"] == "edge"
    assert "role" not in res["diff"][0]["before"]["metadata"]["labels"]
    assert res["diff"][4]["after"] == {}

    # re-run: nothing to do, nothing written
    mark = len(w.dyn.log)
    again = w.runner().run("migrated")
    assert again["changed"] is False and again["counts"]["old"] == 0
    assert [e for e in w.dyn.log[mark:] if e[0] != "GET" and not dry_run(e)] == []


def test_many_workers_give_the_same_result(tmp_path):
    w = World(tmp_path)
    w.controllers.per_step = 2
    res = w.runner(workers=4).run("migrated")
    assert res["counts"]["deleted"] == 3 and res["counts"]["nodes_labelled"] == 3
    assert not any(n in w.heps() for n in w.old)
    assert sorted(res["labels"]) == ["n1", "n2", "n3"] and res["failures"] == []
    assert all(e["deleted"] for e in w.record().values())


def test_missing_default_is_created(tmp_path):
    w = World(tmp_path, kcc=None)
    res = w.runner().run("migrated")
    assert res["kube_controllers"]["action"] == "created" and res["kube_controllers"]["exists"] is False
    kcc = w.dyn.obj(CRD, "kubecontrollersconfigurations", "default")
    assert kcc["spec"] == rules.KCC_DEFAULT_SPEC
    assert res["counts"]["deleted"] == 3


def test_check_mode_plans_and_writes_nothing(tmp_path):
    w = World(tmp_path)
    res = w.runner(check_mode=True, diff=True).run("migrated")
    assert w.dyn.writes() == []
    assert not os.path.exists(w.record_path)
    assert res["changed"] is True and res["check_mode"] is True
    assert res["kube_controllers"]["action"] == "would patch"
    assert res["labels"] == {"n1": {"env": "prod", "role": "edge"}, "n2": {"env": "prod"}, "n3": {"tier": "db"}}
    assert set(e["action"] for e in res["endpoints"]) == {"would delete once the automatic host endpoint exists"}
    assert [n["status"] for n in res["nodes"]] == ["would wait (no automatic host endpoint)"] * 3
    assert w.slept == []  # nothing is waited for
    assert len(res["diff"]) == 3 + 1 + 3
    assert res["record"]["entries"] == 0


def test_a_conflict_writes_nothing_and_is_listed(tmp_path):
    w = World(tmp_path)
    w.dyn.put("v1", "nodes", {"metadata": {"name": "n2", "labels": {"env": "staging"}}})
    with pytest.raises(HostEndpointMigrationError) as err:
        w.runner().run("migrated")
    assert w.dyn.writes() == []
    msg = str(err.value)
    assert "1 label conflict(s), nothing was written" in msg
    assert "node n2: label env is 'staging' on the node, 'prod' on host endpoint n2-hep" in msg
    assert "label_conflicts=overwrite" in msg
    res = err.value.result
    assert res["changed"] is False
    assert res["conflicts"] == [{"node": "n2", "key": "env", "node_value": "staging",
                                 "endpoint_values": {"n2-hep": "prod"}, "kind": "node", "resolution": "blocking"}]
    assert [e["action"] for e in res["endpoints"] if e["node"] == "n2"] == ["blocked by a label conflict"]
    # check mode says the same
    with pytest.raises(HostEndpointMigrationError):
        w.runner(check_mode=True).run("migrated")
    assert w.dyn.writes() == []


def test_a_missing_node_is_reported_and_its_endpoint_left_alone(tmp_path):
    w = World(tmp_path)
    w.dyn.put(CRD, "hostendpoints", hep("ghost-hep", "ghost", {"env": "prod"}))
    res = w.runner().run("migrated")
    assert res["missing_nodes"] == [{"endpoint": "ghost-hep", "node": "ghost"}]
    assert "ghost-hep" in w.heps() and res["counts"]["deleted"] == 3
    assert "1 old host endpoint(s) name a node that does not exist" in res["warnings"][0]
    assert [e["action"] for e in res["endpoints"] if e["name"] == "ghost-hep"] == ["node missing"]


def test_no_default_host_endpoint_stops_before_any_write(tmp_path):
    w = World(tmp_path)
    w.dyn.put(CRD, "kubecontrollersconfigurations", {"metadata": {"name": "default"}, "spec": {"controllers": {
        "node": {"hostEndpoint": {"autoCreate": "Enabled", "createDefaultHostEndpoint": "Disabled"}}}}})
    with pytest.raises(HostEndpointMigrationError) as err:
        w.runner().run("migrated")
    assert "createDefaultHostEndpoint: Disabled" in str(err.value) and "Nothing was written" in str(err.value)
    assert w.dyn.writes() == []


# -- which API --------------------------------------------------------------------------------------------------

def test_projectcalico_v3_is_used_when_it_serves_host_endpoints(tmp_path):
    w = World(tmp_path, api=V3, serve_v3=True)
    res = w.runner().run("migrated")
    assert res["datastore"] == {"datastore": "kubernetes", "api_version": V3}
    assert res["counts"]["deleted"] == 3
    assert not any("crd.projectcalico.org" in p for _m, p in writes(w.dyn))


def test_an_unavailable_calico_api_server_stops_everything(tmp_path):
    w = World(tmp_path, serve_v3=True)
    w.dyn.failing[V3] = (503, "Service Unavailable")
    with pytest.raises(HostEndpointMigrationError) as err:
        run(client(w.dyn), {"state": "migrated", "record_path": w.record_path, "wait_timeout": 1,
                            "poll_interval": 0.1})
    assert "projectcalico.org/v3 is registered but its resources cannot be read" in str(err.value)
    assert w.dyn.writes() == []


def test_no_calico_at_all(tmp_path):
    dyn = HepFake()
    dyn.add_type("v1", "nodes", "Node", namespaced=False)
    with pytest.raises(HostEndpointMigrationError) as err:
        run(client(dyn), {"state": "migrated", "record_path": str(tmp_path / "r.json"), "wait_timeout": 1,
                          "poll_interval": 0.1})
    assert "served neither by projectcalico.org/v3 nor by crd.projectcalico.org/v1" in str(err.value)


def test_host_endpoint_migration_refuses_zero_workers_before_any_request():
    with pytest.raises(HostEndpointMigrationError, match="workers is 0: .*1 or more.*nothing was read or written"):
        run(NoClient(), {"state": "migrated", "workers": 0}, datastore=object())


def test_host_endpoint_migration_refuses_a_negative_limit_before_any_request():
    with pytest.raises(HostEndpointMigrationError,
                       match="report_limit is -1: .*0 or more.*nothing was read or written"):
        run(NoClient(), {"state": "migrated", "report_limit": -1}, datastore=object())


def test_host_endpoint_migration_lists_the_first_endpoints_nodes_and_labels(tmp_path):
    w = World(tmp_path)
    res = w.runner(report_limit=1).run("migrated")
    assert res["counts"]["deleted"] == 3 and res["counts"]["nodes_labelled"] == 3
    assert len(res["endpoints"]) == 1 and len(res["nodes"]) == 1 and list(res["labels"]) == ["n1"]
    assert res["not_listed"] == {"endpoints": 2, "labels": 2, "nodes": 2}
    assert not any(n in w.heps() for n in w.old)
    assert len(w.record()) == 3  # every endpoint deleted is recorded, listed or not
    restored = w.runner(report_limit=0).run("restored")
    assert restored["endpoints"] == [] and restored["not_listed"] == {"endpoints": 3}
    assert restored["counts"]["restored"] == 3 and all(n in w.heps() for n in w.old)
