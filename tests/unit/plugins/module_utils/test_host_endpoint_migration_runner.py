"""host_endpoint_migration.Runner against the in-memory API (the real Client, a fake transport).

calico-kube-controllers does not run here: ``Controllers`` plays its part (when KubeControllersConfiguration
default says autoCreate Enabled it creates ``<node>-auto-hep`` with the node's labels and the created-by label),
called from the runner's ``sleep`` so the waits take no time. Its writes go straight into the fake's storage,
so ``dyn.writes()`` holds the runner's writes only.

The etcd datastore is driven through ``calicoctl``; no calicoctl binary can be fetched here, so the tests at the
end write a stand-in executable that answers calicoctl's commands (get/create/patch/delete, JSON output) from
a JSON file.
"""

import copy
import json
import os
import stat
import subprocess
import sys

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints import datastore as hem
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.datastore import (
    CalicoctlDatastore, KubeDatastore)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.rules import (
    HostEndpointMigrationError)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.runner import Runner, run
from ansible_collections.calico_ops.lifecycle.tests.unit.plugins.module_utils.fake_k8s import FakeDynamic, _error, client

CRD = "crd.projectcalico.org/v1"
V3 = "projectcalico.org/v3"
RECORD = "hep-record"


class Killed(BaseException):
    """The module's process dies here."""


def merge(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


class HepFake(FakeDynamic):
    """FakeDynamic plus JSON merge patches (resourceVersion precondition) and DELETE uid preconditions."""

    def _target(self, path):
        group, version, plural, namespace, name = self._parse(path)
        api_version = "%s/%s" % (group, version) if group else version
        return api_version, plural, namespace, name

    def _handle(self, method, path, body, query, content_type):
        parts = path.strip("/").split("/")
        is_object = not ((parts[0] == "api" and len(parts) <= 2) or (parts[0] == "apis" and len(parts) <= 3))
        if is_object and method == "PATCH" and content_type == "application/merge-patch+json":
            api_version, plural, namespace, name = self._target(path)
            current = self.obj(api_version, plural, name, namespace)
            if current is None:
                raise _error(404, "Not Found", "%s %s not found" % (plural, name))
            rv = (body.get("metadata") or {}).get("resourceVersion")
            if rv and rv != current["metadata"]["resourceVersion"]:
                raise _error(409, "Conflict", "the object has been modified")
            patched = merge(current, body)
            patched["metadata"]["uid"] = current["metadata"]["uid"]
            return self.put(api_version, plural, patched)
        if is_object and method == "DELETE" and body and body.get("preconditions"):
            api_version, plural, namespace, name = self._target(path)
            current = self.obj(api_version, plural, name, namespace)
            if current is not None and current["metadata"]["uid"] != body["preconditions"]["uid"]:
                raise _error(409, "Conflict", "Precondition failed: UID in precondition")
        return super(HepFake, self)._handle(method, path, body, query, content_type)


def hep(name, node, labels=None, interface="*", api=CRD):
    meta = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": api, "kind": "HostEndpoint", "metadata": meta,
            "spec": {"node": node, "interfaceName": interface, "expectedIPs": ["10.0.0.%d" % (len(name) % 250)],
                     "profiles": ["old-profile"]}}


class Controllers(object):
    """calico-kube-controllers' automatic host endpoints, one node per step (``per_step``)."""

    def __init__(self, world, skip=(), per_step=1):
        self.world = world
        self.skip = set(skip)
        self.per_step = per_step
        self.created = []  # (len(dyn.log) at creation, node)

    def step(self):
        w = self.world
        kcc = w.dyn.obj(w.api, "kubecontrollersconfigurations", "default")
        if rules.auto_create_of(kcc) != "Enabled":
            return
        made = 0
        for node in sorted(w.node_names):
            if node in self.skip or w.dyn.obj("v1", "nodes", node) is None:
                continue
            labels = dict(w.dyn.obj("v1", "nodes", node)["metadata"].get("labels") or {})
            labels[rules.CREATED_BY_LABEL] = rules.CREATED_BY_VALUE
            name = node + "-auto-hep"
            current = w.dyn.obj(w.api, "hostendpoints", name)
            if current is not None and current["metadata"].get("labels") == labels:
                continue
            if made >= self.per_step:
                return
            body = hep(name, node, labels, api=w.api)
            body["spec"]["profiles"] = ["projectcalico-default-allow"]
            if current is not None:
                body["metadata"]["uid"] = current["metadata"]["uid"]
            w.dyn.put(w.api, "hostendpoints", body)
            self.created.append((len(w.dyn.log), node))
            made += 1


class World(object):
    """Three nodes with old all-interfaces endpoints, a fourth with an automatic one, and the record's home."""

    def __init__(self, tmp_path, api=CRD, kcc="Disabled", serve_v3=False):
        self.tmp_path = tmp_path
        self.api = api
        self.dyn = dyn = HepFake()
        dyn.add_type("v1", "namespaces", "Namespace", namespaced=False)
        dyn.add_type("v1", "configmaps", "ConfigMap")
        dyn.add_type("v1", "nodes", "Node", namespaced=False)
        groups = [CRD] + ([V3] if serve_v3 or api == V3 else [])
        for group in groups:
            dyn.add_type(group, "hostendpoints", "HostEndpoint", namespaced=False, storage="heps-" + group)
            dyn.add_type(group, "kubecontrollersconfigurations", "KubeControllersConfiguration",
                         namespaced=False, storage="kcc-" + group)
        dyn.put("v1", "namespaces", {"metadata": {"name": "kube-system", "uid": "cluster-uid-1"}})
        self.node_names = ["n1", "n2", "n3", "n4"]
        self.node_labels = {"n1": {"zone": "a"}, "n2": {}, "n3": {"env": "prod"}, "n4": {}}
        for name in self.node_names:
            labels = {"kubernetes.io/hostname": name}
            labels.update(self.node_labels[name])
            dyn.put("v1", "nodes", {"metadata": {"name": name, "labels": labels}})
        self.old = {
            "n1-hep": ("n1", {"env": "prod", "zone": "a", "role": "edge"}),
            "n2-hep": ("n2", {"env": "prod"}),
            "n3-hep": ("n3", {"env": "prod", "tier": "db"}),
        }
        for name, (node, labels) in self.old.items():
            dyn.put(api, "hostendpoints", hep(name, node, labels, api=api))
        # automatic endpoints (one by label, one by name only) and a named-interface one: never touched
        self.untouched = ["n4-auto-hep", "custom-auto", "n1-eth0"]
        dyn.put(api, "hostendpoints", hep("n4-auto-hep", "n4", {"x": "1"}, api=api))
        dyn.put(api, "hostendpoints", hep("custom-auto", "n4", {rules.CREATED_BY_LABEL: rules.CREATED_BY_VALUE},
                                          api=api))
        dyn.put(api, "hostendpoints", hep("n1-eth0", "n1", {"env": "prod"}, interface="eth0", api=api))
        if kcc is not None:
            dyn.put(api, "kubecontrollersconfigurations", {
                "apiVersion": api, "kind": "KubeControllersConfiguration", "metadata": {"name": "default"},
                "spec": {"controllers": {"node": {"syncLabels": "Enabled", "hostEndpoint": {"autoCreate": kcc}},
                                         "policy": {"reconcilerPeriod": "5m"}}}})
        self.controllers = Controllers(self)
        self.clock = [0.0]
        self.slept = []

    @property
    def record_path(self):
        return str(self.tmp_path / "record.json")

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.clock[0] += seconds
        self.controllers.step()

    def runner(self, check_mode=False, diff=False, datastore=None, **kw):
        c = client(self.dyn, check_mode=check_mode)
        params = dict(wait_timeout=30, poll_interval=1, record_namespace="kube-system", record_name=RECORD,
                      record_path=self.record_path, workers=1)
        params.update(kw)
        return Runner(c, datastore or KubeDatastore(c), diff=diff, sleep=self.sleep, clock=lambda: self.clock[0],
                      **params)

    def heps(self):
        return dict(((n, o) for (_ns, n), o in self.dyn.objects["heps-" + self.api].items()))

    def node_labels_now(self, node):
        return self.dyn.obj("v1", "nodes", node)["metadata"].get("labels") or {}

    def record(self):
        cm = self.dyn.obj("v1", "configmaps", RECORD, "kube-system")
        return json.loads(cm["data"]["record.json"])["entries"] if cm else None

    def file_record(self):
        if not os.path.exists(self.record_path):
            return None
        with open(self.record_path) as handle:
            return json.load(handle)["entries"]


def writes(dyn):
    return [(m, p) for m, p, _q in dyn.writes()]


def dry_run(entry):
    """A request of the fake's log that is a server-side dry run (the record location's proof: writes nothing)."""
    return entry[2].get("dryRun") == "All"


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


# -- the etcd datastore, through a stand-in calicoctl -----------------------------------------------------------

CALICOCTL = r'''#!%(python)s
"""A stand-in for calicoctl (no binary can be fetched here): the commands host_endpoint_migration uses,
answered from a JSON file as calicoctl answers them (JSON output, errors on stderr with rc 1)."""
import json, os, sys, uuid
STATE = %(state)r
args = sys.argv[1:]
with open(STATE) as f:
    state = json.load(f)
state["calls"].append(args)
state.setdefault("datastore_types", []).append(os.environ.get("DATASTORE_TYPE"))
def save():
    with open(STATE, "w") as f:
        json.dump(state, f)
def fail(msg):
    save()
    sys.stderr.write(msg + "\n")
    sys.exit(1)
if "--config=%(config)s" not in args:
    fail("Failed to create Calico API client: no etcd endpoints: use --config")
args = [a for a in args if not a.startswith("--")]
verb = args[0]
if verb == "get" and args[1] == "hostendpoints":
    save()
    print(json.dumps({"kind": "HostEndpointList", "apiVersion": "projectcalico.org/v3",
                      "items": sorted(state["heps"].values(), key=lambda h: h["metadata"]["name"])}))
elif verb == "get" and args[1] == "kubecontrollersconfigurations":
    if state["kcc"] is None:
        fail("resource does not exist: KubeControllersConfiguration(default) with error: "
             "resource does not exist: KubeControllersConfiguration(default)")
    save()
    print(json.dumps(state["kcc"]))
elif verb == "create":
    obj = json.loads(sys.stdin.read())
    obj["metadata"]["uid"] = str(uuid.uuid4())
    if obj["kind"] == "HostEndpoint":
        if obj["metadata"]["name"] in state["heps"]:
            fail("Failed to create any 'HostEndpoint' resources: resource already exists")
        state["heps"][obj["metadata"]["name"]] = obj
    else:
        state["kcc"] = obj
    save()
    print("Successfully created 1 '%%s' resource(s)" %% obj["kind"])
elif verb == "patch":
    patch = json.loads(args[args.index("-p") + 1])
    def merge(t, p):
        for k, v in p.items():
            if isinstance(v, dict) and isinstance(t.get(k), dict):
                merge(t[k], v)
            else:
                t[k] = v
    merge(state["kcc"], patch)
    save()
    print("Successfully patched 1 'KubeControllersConfiguration' resource")
elif verb == "delete" and args[1] == "hostendpoint":
    if args[2] not in state["heps"]:
        fail("Failed to delete any 'HostEndpoint' resources: resource does not exist: HostEndpoint(%%s)" %% args[2])
    del state["heps"][args[2]]
    save()
    print("Successfully deleted 1 'HostEndpoint' resource(s)")
else:
    fail("unexpected command: %%s" %% sys.argv[1:])
'''


def run_command(argv, data, timeout, environ_update):
    """What the module's run_command does for calicoctl (K8sModule.run_command), without a module."""
    env = dict(os.environ, **environ_update)
    proc = subprocess.run(argv, input=data, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    return proc.returncode, proc.stdout, proc.stderr


class Etcd(object):
    """The etcd datastore behind the stand-in calicoctl; Nodes and the record stay in the (fake) Kubernetes API."""

    def __init__(self, tmp_path, kcc="Disabled"):
        self.world = World(tmp_path)
        self.state_path = str(tmp_path / "etcd.json")
        self.config = str(tmp_path / "calicoctl.cfg")
        self.path = str(tmp_path / "calicoctl")
        with open(self.config, "w") as f:
            f.write("apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\n"
                    "spec:\n  datastoreType: etcdv3\n  etcdEndpoints: https://etcd.example.com:2379\n")
        with open(self.path, "w") as f:
            f.write(CALICOCTL % {"python": sys.executable, "state": self.state_path, "config": self.config})
        os.chmod(self.path, os.stat(self.path).st_mode | stat.S_IXUSR)
        heps = {}
        for name, (node, labels) in self.world.old.items():
            heps[name] = hep(name, node, labels, api=V3)
            heps[name]["metadata"]["uid"] = "etcd-" + name
        heps["n4-auto-hep"] = hep("n4-auto-hep", "n4", {rules.CREATED_BY_LABEL: rules.CREATED_BY_VALUE}, api=V3)
        self.save({"calls": [], "heps": heps, "kcc": None if kcc is None else {
            "apiVersion": V3, "kind": "KubeControllersConfiguration", "metadata": {"name": "default"},
            "spec": {"controllers": {"node": {"hostEndpoint": {"autoCreate": kcc}}}}}})
        self.world.sleep = self.controllers

    def load(self):
        with open(self.state_path) as f:
            return json.load(f)

    def save(self, state):
        with open(self.state_path, "w") as f:
            json.dump(state, f)

    def controllers(self, seconds):
        """calico-kube-controllers with the etcd datastore: automatic endpoints from the Kubernetes nodes."""
        self.world.clock[0] += seconds
        state = self.load()
        if rules.auto_create_of(state["kcc"]) == "Enabled":
            for node in ("n1", "n2", "n3"):
                labels = dict(self.world.node_labels_now(node))
                labels[rules.CREATED_BY_LABEL] = rules.CREATED_BY_VALUE
                state["heps"][node + "-auto-hep"] = hep(node + "-auto-hep", node, labels, api=V3)
        self.save(state)

    def datastore(self, check_mode=False):
        return CalicoctlDatastore(path=self.path, config=self.config, extra_args=["--allow-version-mismatch"],
                                  check_mode=check_mode, run=run_command, environ={})

    def verbs(self):
        return [[a for a in c if not a.startswith("--")][:2] for c in self.load()["calls"]]


def test_etcd_through_calicoctl(tmp_path):
    e = Etcd(tmp_path)
    w = e.world
    res = w.runner(check_mode=True, datastore=e.datastore(check_mode=True)).run("migrated")
    assert res["changed"] is True and res["kube_controllers"]["action"] == "would patch"
    assert all(v[0] == "get" for v in e.verbs())
    assert w.dyn.writes() == []

    res = w.runner(datastore=e.datastore()).run("migrated")
    assert res["datastore"]["datastore"] == "etcd" and res["counts"]["deleted"] == 3
    state = e.load()
    assert sorted(state["heps"]) == ["n1-auto-hep", "n2-auto-hep", "n3-auto-hep", "n4-auto-hep"]
    assert state["kcc"]["spec"]["controllers"]["node"]["hostEndpoint"]["autoCreate"] == "Enabled"
    assert all("--allow-version-mismatch" in c and "--config=%s" % e.config in c for c in state["calls"])
    assert set(state["datastore_types"]) == {"etcdv3"}  # every call told the datastore explicitly
    verbs = e.verbs()
    assert ["patch", "kubecontrollersconfiguration"] in verbs
    assert [v for v in verbs if v[0] == "delete"] == [["delete", "hostendpoint"]] * 3
    assert w.node_labels_now("n1")["role"] == "edge"  # labels go onto the Kubernetes nodes
    assert len(w.record()) == 3

    calls = len(e.load()["calls"])
    again = w.runner(datastore=e.datastore()).run("migrated")
    assert again["changed"] is False
    assert all(v[0] == "get" for v in e.verbs()[calls:])

    res = w.runner(datastore=e.datastore()).run("restored")
    assert res["counts"]["restored"] == 3
    state = e.load()
    for name, (node, labels) in w.old.items():
        assert state["heps"][name]["metadata"]["labels"] == labels
        assert "uid" in state["heps"][name]["metadata"] and state["heps"][name]["metadata"]["uid"] != "etcd-" + name


def test_etcd_missing_default_is_created_and_errors_are_reported(tmp_path):
    e = Etcd(tmp_path, kcc=None)
    w = e.world
    res = w.runner(datastore=e.datastore()).run("migrated")
    assert res["kube_controllers"]["action"] == "created"
    assert e.load()["kcc"]["spec"] == rules.KCC_DEFAULT_SPEC
    # calicoctl failing on its configuration: the module says what calicoctl said
    with open(e.config + ".other", "w") as f:
        f.write(open(e.config).read())
    bad = CalicoctlDatastore(path=e.path, config=e.config + ".other", run=run_command, environ={})
    with pytest.raises(HostEndpointMigrationError) as err:
        w.runner(datastore=bad).run("migrated")
    assert "calicoctl get hostendpoints -o json failed (rc=1): Failed to create Calico API client" in str(err.value)
    assert "\n" not in str(err.value) and str(tmp_path) not in str(err.value)  # one line, no local path
    missing = CalicoctlDatastore(path=str(tmp_path / "nowhere" / "calicoctl"), config=e.config, run=run_command,
                                 environ={})
    with pytest.raises(HostEndpointMigrationError) as err:
        w.runner(datastore=missing).run("migrated")
    assert "cannot run" in str(err.value)


def test_calicoctl_writes_are_refused_in_check_mode(tmp_path):
    e = Etcd(tmp_path)
    ds = e.datastore(check_mode=True)
    with pytest.raises(hem.ReadOnlyViolation):
        ds.delete_host_endpoint(hep("n1-hep", "n1"))
    assert e.verbs() == []
