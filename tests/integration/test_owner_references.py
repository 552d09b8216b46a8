"""owner_references on the local control plane, with the real garbage collector.

There is no Calico API server here, so CRDs serving group ``projectcalico.org``, version ``v3`` (kinds
NetworkPolicy, namespaced, and GlobalNetworkPolicy, cluster-scoped) stand in for its objects. "The upgrade"
is played by deleting and re-creating the owners: same names, new UIDs.

* control: without the module, the garbage collector deletes the dependents (the test can fail);
* with the module (``playbooks/owner_references.yml``): detach -> owners re-created -> well past a GC cycle
  (a canary proves the collector was at work meanwhile) every dependent still exists -> attach -> every
  reference carries the new UID, the non-Calico owners are untouched, the references work again;
* crash: ``ansible-playbook`` is killed (SIGKILL, whole process group) in the middle of attach; a re-run
  finishes, the record shows every entry done, nothing is lost or duplicated;
* check mode writes nothing (audit log); an unavailable aggregated API stops detach before any write.
"""

import base64
import json
import signal
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from localcp.api import Api
from localcp.fixtures import ansible_bin, ansible_python, kill_tree
from localcp.mirror import REPO_ROOT

pytestmark = pytest.mark.integration

CALICO = "projectcalico.org/v3"
WIDGETS = "tests.calico-ops.io/v1"
PLAYBOOK = "playbooks/owner_references.yml"
GC_WINDOW = 30  # seconds the dependents must survive after the owners were replaced


def _crd(group, version, plural, kind, scope):
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "%s.%s" % (plural, group)},
        "spec": {"group": group, "scope": scope,
                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": kind + "List"},
                 "versions": [{"name": version, "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]}}


CRDS = [
    _crd("projectcalico.org", "v3", "networkpolicies", "NetworkPolicy", "Namespaced"),
    _crd("projectcalico.org", "v3", "globalnetworkpolicies", "GlobalNetworkPolicy", "Cluster"),
    _crd("tests.calico-ops.io", "v1", "widgets", "Widget", "Namespaced"),
]


def coll(api_version, plural, namespace=None):
    base = "/api/%s" % api_version if "/" not in api_version else "/apis/%s" % api_version
    return base + ("/namespaces/%s" % namespace if namespace else "") + "/" + plural


def ref(owner, **extra):
    out = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
           "uid": owner["metadata"]["uid"]}
    out.update(extra)
    return out


def calico_refs(obj):
    return [r for r in (obj["metadata"].get("ownerReferences") or []) if r["apiVersion"] == CALICO]


@pytest.fixture(scope="module")
def calico_crds(cluster):
    """The stand-in projectcalico.org/v3 types, and proof that the garbage collector already watches them."""
    api = Api(cluster)
    svc = api.get("/apis/apiregistration.k8s.io/v1/apiservices/v3.projectcalico.org")
    if svc is not None and (svc.get("spec") or {}).get("service"):
        pytest.fail("an aggregated projectcalico.org/v3 APIService exists in this control plane; the stand-in "
                    "CRDs cannot serve that group-version")
    cluster.apply(yaml.safe_dump_all(CRDS))
    for crd in CRDS:
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/" + crd["metadata"]["name"])
    cluster.wait_for(lambda: api.get("/apis/projectcalico.org/v3") and api.get("/apis/tests.calico-ops.io/v1"),
                     timeout=60, what="the stand-in group-versions in discovery")
    # The garbage collector picks up new types on its own schedule: wait until it deletes a canary's dependent.
    name = "gc-canary-%s" % uuid.uuid4().hex[:6]
    ns = "default"
    deadline = time.monotonic() + 180
    while True:
        owner = api.create(coll(CALICO, "networkpolicies", ns), {
            "apiVersion": CALICO, "kind": "NetworkPolicy", "metadata": {"name": name, "namespace": ns}})
        api.create(coll("v1", "configmaps", ns), {"metadata": {"name": name, "namespace": ns,
                                                               "ownerReferences": [ref(owner)]}})
        api.delete(coll(CALICO, "networkpolicies", ns) + "/" + name, wait=True)
        try:
            cluster.wait_for(lambda: api.get(coll("v1", "configmaps", ns) + "/" + name) is None, timeout=20,
                             what="the garbage collector to delete the canary")
            break
        except AssertionError:
            api.delete(coll("v1", "configmaps", ns) + "/" + name, wait=True)
            if time.monotonic() > deadline:
                raise
    yield api
    for crd in CRDS:
        cluster.kubectl("delete", "crd", crd["metadata"]["name"], "--wait=false", check=False)


@pytest.fixture
def namespaces(cluster, request):
    """Three fresh namespaces (the first also holds the record); gone (waited for) after the test."""
    tag = uuid.uuid4().hex[:6]
    names = ["t-oref-%s-%d" % (tag, i) for i in range(3)]
    for name in names:
        cluster.kubectl("create", "namespace", name)
    yield names
    cluster.kubectl("delete", "namespace", *names, "--wait=true", "--timeout=180s", check=False)


class World(object):
    """Calico owners and their dependents in several namespaces, some also owned by a non-Calico owner."""

    def __init__(self, api, namespaces):
        self.api = api
        self.namespaces = namespaces
        self.gnp_name = "gnp-" + namespaces[0]
        self.owners = {}      # key -> owner object (current)
        self.keepers = {}     # ns -> the non-Calico owner (a ConfigMap)
        self.expected = {}    # dependent path -> list of (owner key or "keeper", extra fields) in order
        self.untouched = {}   # path -> resourceVersion of objects that must never be written

    def _owner(self, key):
        return self.owners[key]

    def create(self):
        api = self.api
        self.owners["gnp"] = api.create(coll(CALICO, "globalnetworkpolicies"), {
            "apiVersion": CALICO, "kind": "GlobalNetworkPolicy", "metadata": {"name": self.gnp_name}})
        for ns in self.namespaces:
            self.owners["np/" + ns] = api.create(coll(CALICO, "networkpolicies", ns), {
                "apiVersion": CALICO, "kind": "NetworkPolicy", "metadata": {"name": "np", "namespace": ns}})
            keeper = api.create(coll("v1", "configmaps", ns), {"metadata": {"name": "keeper", "namespace": ns}})
            keeper.update(apiVersion="v1", kind="ConfigMap")
            self.keepers[ns] = keeper
            np_key = "np/" + ns
            deps = [
                ("v1", "configmaps", "cm-np", [(np_key, {"controller": True, "blockOwnerDeletion": True})], {}),
                ("v1", "configmaps", "cm-gnp", [("gnp", {})], {}),
                ("v1", "configmaps", "cm-both", [("keeper", {}), (np_key, {"blockOwnerDeletion": False})], {}),
                ("v1", "secrets", "sec", [(np_key, {}), ("gnp", {"controller": False})], {}),
                ("v1", "secrets", "sec-both", [("gnp", {}), ("keeper", {"controller": True})], {}),
                ("apps/v1", "deployments", "dep", [(np_key, {"controller": True})], {
                    "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "dep"}},
                             "template": {"metadata": {"labels": {"app": "dep"}},
                                          "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
                ("tests.calico-ops.io/v1", "widgets", "wid", [("gnp", {"controller": True})],
                 {"apiVersion": WIDGETS, "kind": "Widget"}),
            ]
            for api_version, plural, name, owners, body in deps:
                body = dict(body)
                body["metadata"] = {"name": name, "namespace": ns,
                                    "ownerReferences": [self.ref_of(o, ns, extra) for o, extra in owners]}
                api.create(coll(api_version, plural, ns), body)
                self.expected[coll(api_version, plural, ns) + "/" + name] = (ns, owners)
            plain = api.create(coll("v1", "configmaps", ns), {"metadata": {
                "name": "plain", "namespace": ns, "ownerReferences": [self.ref_of("keeper", ns, {})]}})
            self.untouched[coll("v1", "configmaps", ns) + "/plain"] = plain["metadata"]["resourceVersion"]
            self.untouched[coll("v1", "configmaps", ns) + "/keeper"] = keeper["metadata"]["resourceVersion"]

    def ref_of(self, owner_key, ns, extra):
        owner = self.keepers[ns] if owner_key == "keeper" else self.owners[owner_key]
        return ref(owner, **extra)

    def expected_refs(self, path):
        ns, owners = self.expected[path]
        return [self.ref_of(o, ns, extra) for o, extra in owners]

    @property
    def calico_ref_count(self):
        return sum(1 for _ns, owners in self.expected.values() for o, _e in owners if o != "keeper")

    def owner_paths(self):
        out = {"gnp": coll(CALICO, "globalnetworkpolicies") + "/" + self.gnp_name}
        for ns in self.namespaces:
            out["np/" + ns] = coll(CALICO, "networkpolicies", ns) + "/np"
        return out

    def delete_owners(self):
        for path in self.owner_paths().values():
            self.api.delete(path, wait=True)

    def create_owners(self):
        """Same names, new UIDs: what the v3.28 upgrade does to projectcalico.org/v3 objects."""
        old = dict((k, o["metadata"]["uid"]) for k, o in self.owners.items())
        self.owners["gnp"] = self.api.create(coll(CALICO, "globalnetworkpolicies"), {
            "apiVersion": CALICO, "kind": "GlobalNetworkPolicy", "metadata": {"name": self.gnp_name}})
        for ns in self.namespaces:
            self.owners["np/" + ns] = self.api.create(coll(CALICO, "networkpolicies", ns), {
                "apiVersion": CALICO, "kind": "NetworkPolicy", "metadata": {"name": "np", "namespace": ns}})
        for key, owner in self.owners.items():
            assert owner["metadata"]["uid"] != old[key]

    def cleanup(self):
        self.api.delete(coll(CALICO, "globalnetworkpolicies") + "/" + self.gnp_name)

    def existing(self):
        return dict((p, self.api.get(p)) for p in self.expected)


@pytest.fixture
def world(calico_crds, namespaces):
    w = World(calico_crds, namespaces)
    w.create()
    yield w
    w.cleanup()


def play_vars(namespaces, tmp_path, state, **extra):
    out = {"owner_references_state": state, "owner_references_record_namespace": namespaces[0],
           "owner_references_record_name": "oref-record",
           "owner_references_record_path": str(tmp_path / "record.json"),
           # every object listed: the control plane is shared, other tests' dependents may come first
           "owner_references_report_limit": 100000}
    out.update(extra)
    return out


def module_result(play):
    for task in play.tasks:
        if task["task"].split(" : ", 1)[-1].startswith("Owner references are"):  # "<role> : <task>"
            return task["result"]
    raise AssertionError("the owner_references task did not run:\n%s\n%s" % (play.stdout[-3000:], play.stderr[-3000:]))


def mine(result, namespaces):
    return [o for o in result["objects"] if o.get("namespace") in namespaces]


def record_entries(api, ns, name="oref-record"):
    cms = api.req("GET", coll("v1", "configmaps", ns),
                  query={"labelSelector": "lifecycle.calico-ops.io/record=%s" % name})["items"]
    entries = {}
    for cm in cms:
        entries.update(json.loads(cm["data"]["record.json"])["entries"])
    return entries


def test_control_without_the_module_the_garbage_collector_deletes_the_dependents(cluster, world):
    world.delete_owners()
    world.create_owners()
    solely_calico = [p for p, (_ns, owners) in world.expected.items() if "keeper" not in [o for o, _e in owners]]
    both = [p for p in world.expected if p not in solely_calico]
    assert len(solely_calico) == 15 and len(both) == 6
    cluster.wait_for(lambda: all(world.api.get(p) is None for p in solely_calico), timeout=180,
                     what="the garbage collector to delete the dependents of the replaced owners")
    # dependents with a second, living owner stay, but lose the references to the old UIDs
    cluster.wait_for(lambda: all(not calico_refs(world.api.get(p)) for p in both), timeout=120,
                     what="the garbage collector to drop the dangling references")
    for path in both:
        obj = world.api.get(path)
        ns = obj["metadata"]["namespace"]
        assert obj["metadata"]["ownerReferences"] == [r for r in world.expected_refs(path)
                                                     if r["apiVersion"] != CALICO]
        assert world.keepers[ns]["metadata"]["uid"] in [r["uid"] for r in obj["metadata"]["ownerReferences"]]


@pytest.mark.oldest_core  # also on ansible-core 2.16 in make test (tests/integration/conftest.py)
def test_detach_survive_the_new_uids_then_attach(cluster, world, namespaces, ansible, tmp_path):
    api = world.api
    assert world.calico_ref_count == 24
    before = world.existing()

    # -- detach -------------------------------------------------------------------------------------
    play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "detached"))
    assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:]
    res = module_result(play)
    assert res["changed"] is True
    assert res["counts"]["unlistable_types"] == 0 and res["counts"]["scanned_types"] > 40
    objs = mine(res, namespaces)
    assert len(objs) == 21 and set(o["action"] for o in objs) == {"detached"}
    assert sum(len(o["owners"]) for o in objs) == 24
    for path, obj in world.existing().items():
        assert calico_refs(obj) == []
        assert (obj["metadata"].get("ownerReferences") or []) == [
            r for r in before[path]["metadata"]["ownerReferences"] if r["apiVersion"] != CALICO]
    entries = record_entries(api, namespaces[0])
    assert len(entries) == 24 and not any(e["done"] for e in entries.values())
    with open(str(tmp_path / "record.json")) as f:
        assert set(json.load(f)["entries"]) == set(entries)

    # detach again: nothing new, nothing written, the record kept
    mark = cluster.audit.mark()
    again = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "detached"))
    assert again.rc == 0, again.stdout[-4000:]
    res2 = module_result(again)
    assert res2["changed"] is False and res2["counts"]["recorded"] == 0
    assert res2["record"]["entries"] == 24 and res2["record"]["pending"] == 24
    assert cluster.audit.writes_since(mark) == []

    # -- the upgrade: the owners get new UIDs ----------------------------------------------------------
    canary_ns = namespaces[1]
    canary_path = coll("v1", "configmaps", canary_ns) + "/canary"
    api.create(coll("v1", "configmaps", canary_ns), {"metadata": {
        "name": "canary", "namespace": canary_ns, "ownerReferences": [world.ref_of("np/" + canary_ns, canary_ns, {})]}})
    world.delete_owners()
    deleted_at = time.monotonic()
    world.create_owners()
    canary_gone = None
    while time.monotonic() - deleted_at < GC_WINDOW or canary_gone is None:
        gone = [p for p, o in world.existing().items() if o is None]
        assert gone == [], "dependents were garbage-collected after detach: %s" % gone
        if canary_gone is None and api.get(canary_path) is None:
            canary_gone = time.monotonic() - deleted_at
        assert time.monotonic() - deleted_at < 180, "the canary was never garbage-collected"
        time.sleep(2)
    assert canary_gone is not None  # the collector was at work in the window, and spared the detached ones

    # -- attach ------------------------------------------------------------------------------------------
    play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "attached"))
    assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:]
    res = module_result(play)
    assert res["changed"] is True
    assert res["counts"]["attached"] == 24 and res["counts"]["missing_owners"] == 0
    assert res["counts"]["failed"] == 0
    for path, obj in world.existing().items():
        assert obj is not None
        # every reference back, in its place, with the owner's new UID and the recorded fields
        assert obj["metadata"]["ownerReferences"] == world.expected_refs(path), path
    for path, rv in world.untouched.items():
        assert api.get(path)["metadata"]["resourceVersion"] == rv, "%s was written" % path
    entries = record_entries(api, namespaces[0])
    assert len(entries) == 24 and all(e["done"] for e in entries.values())
    with open(str(tmp_path / "record.json")) as f:
        assert all(e["done"] for e in json.load(f)["entries"].values())

    # attach twice: nothing changes
    mark = cluster.audit.mark()
    again = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "attached"))
    assert again.rc == 0 and module_result(again)["changed"] is False
    assert cluster.audit.writes_since(mark) == []

    # the references work: deleting the new GlobalNetworkPolicy takes its sole dependents with it
    sole_gnp = [p for p, (_ns, owners) in world.expected.items() if [o for o, _e in owners] == ["gnp"]]
    assert len(sole_gnp) == 6
    api.delete(world.owner_paths()["gnp"], wait=True)
    cluster.wait_for(lambda: all(api.get(p) is None for p in sole_gnp), timeout=120,
                     what="the garbage collector to follow the re-attached references")


def test_check_mode_writes_nothing(cluster, world, namespaces, ansible, tmp_path):
    mark = cluster.audit.mark()
    play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "detached"), check=True,
                            diff=True)
    assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:]
    res = module_result(play)
    assert cluster.audit.writes_since(mark) == []
    assert res["changed"] is True and res["check_mode"] is True
    objs = mine(res, namespaces)
    assert len(objs) == 21 and set(o["action"] for o in objs) == {"would detach"}
    assert not (tmp_path / "record.json").exists()
    assert record_entries(world.api, namespaces[0]) == {}
    for path, obj in world.existing().items():
        assert obj["metadata"]["ownerReferences"] == world.expected_refs(path)

    play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "detached"))
    assert play.rc == 0
    world.delete_owners()
    world.create_owners()
    mark = cluster.audit.mark()
    play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "attached",
                                                           owner_references_report_limit=5), check=True, diff=True)
    assert play.rc == 0, play.stdout[-4000:]
    res = module_result(play)
    assert cluster.audit.writes_since(mark) == []
    assert res["counts"]["attached"] == 24 and res["changed"] is True
    # the result lists 5 of the 21 dependents of this record and counts the others
    assert len(res["objects"]) == 5 and res["not_listed"] == {"objects": 16} and res["counts"]["affected"] == 21
    assert "ownerReferences" in play.stdout  # the per-object diff was shown
    for obj in world.existing().values():
        assert calico_refs(obj) == []
    assert not any(e["done"] for e in record_entries(world.api, namespaces[0]).values())


def _playbook_cmd(workdir, extra_vars):
    vars_file = Path(workdir) / "crash-vars.json"
    vars_file.write_text(json.dumps(extra_vars))
    return [ansible_bin("ansible-playbook"), str(REPO_ROOT / PLAYBOOK),
            "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=%s" % ansible_python(),
            "-e", "@%s" % vars_file]


def test_attach_killed_midway_is_finished_by_a_rerun(cluster, calico_crds, namespaces, ansible, tmp_path):
    api = calico_crds
    per_ns = 300
    gnp_name = "gnp-crash-" + namespaces[0]
    gnp = api.create(coll(CALICO, "globalnetworkpolicies"), {
        "apiVersion": CALICO, "kind": "GlobalNetworkPolicy", "metadata": {"name": gnp_name}})
    nps = dict((ns, api.create(coll(CALICO, "networkpolicies", ns), {
        "apiVersion": CALICO, "kind": "NetworkPolicy", "metadata": {"name": "np", "namespace": ns}}))
        for ns in namespaces)

    def make(args):
        ns, i = args
        refs = [ref(nps[ns], controller=True)] + ([ref(gnp)] if i % 2 else [])
        api.create(coll("v1", "configmaps", ns), {"metadata": {
            "name": "dep-%04d" % i, "namespace": ns, "labels": {"crash": "1"}, "ownerReferences": refs}})
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(make, [(ns, i) for ns in namespaces for i in range(per_ns)]))
    total = per_ns * len(namespaces)
    total_refs = total + total // 2

    def deps():
        out = []
        for ns in namespaces:
            out += api.req("GET", coll("v1", "configmaps", ns), query={"labelSelector": "crash=1"})["items"]
        return out

    try:
        play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "detached"))
        assert play.rc == 0, play.stdout[-4000:]
        assert module_result(play)["counts"]["recorded"] >= total_refs
        for ns in namespaces:
            api.delete(coll(CALICO, "networkpolicies", ns) + "/np", wait=True)
            nps[ns] = api.create(coll(CALICO, "networkpolicies", ns), {
                "apiVersion": CALICO, "kind": "NetworkPolicy", "metadata": {"name": "np", "namespace": ns}})
        api.delete(coll(CALICO, "globalnetworkpolicies") + "/" + gnp_name, wait=True)
        gnp = api.create(coll(CALICO, "globalnetworkpolicies"), {
            "apiVersion": CALICO, "kind": "GlobalNetworkPolicy", "metadata": {"name": gnp_name}})
        new_uids = set([gnp["metadata"]["uid"]] + [o["metadata"]["uid"] for o in nps.values()])

        def attached_count():
            return sum(1 for d in deps() if calico_refs(d))

        # -- attach, killed (SIGKILL to ansible-playbook and the module process) part-way ----------------
        env = cluster.env
        env.update({"ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCALHOST_WARNING": "0"})
        proc = subprocess.Popen(_playbook_cmd(tmp_path, play_vars(namespaces, tmp_path, "attached")),
                                env=env, cwd=str(REPO_ROOT), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            # kill once the record has checkpoints (some entries done) and much is left to do
            cluster.wait_for(lambda: proc.poll() is not None or (
                any(e["done"] for e in record_entries(api, namespaces[0]).values())
                and attached_count() >= 150), timeout=300, interval=0.1, what="attach to make progress")
        finally:
            killed = kill_tree(proc, timeout=30) if proc.poll() is None else []
            proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL, "attach finished before it could be killed"
        assert len(killed) >= 3  # ansible-playbook, its worker, the module (under a shell)
        time.sleep(2)
        at_kill = attached_count()
        time.sleep(2)
        assert attached_count() == at_kill, "something still patches after the kill"
        assert 0 < at_kill < total, at_kill
        refs_at_kill = sum(len(calico_refs(d)) for d in deps())
        done_at_kill = sum(1 for e in record_entries(api, namespaces[0]).values() if e["done"])
        assert 0 < done_at_kill <= refs_at_kill < total_refs

        # -- the re-run finishes ----------------------------------------------------------------------------
        play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "attached"))
        assert play.rc == 0, play.stdout[-4000:] + play.stderr[-2000:]
        res = module_result(play)
        print("killed at %d/%d dependents, %d references in place, %d entries done; re-run: %s"
              % (at_kill, total, refs_at_kill, done_at_kill, res["counts"]))
        # references patched before the kill but not yet checkpointed are found in place, not added twice
        assert res["counts"]["already_attached"] == refs_at_kill - done_at_kill
        assert res["counts"]["attached"] == total_refs - refs_at_kill
        items = deps()
        assert len(items) == total  # nothing lost
        for d in items:
            i = int(d["metadata"]["name"].split("-")[1])
            refs = calico_refs(d)
            assert len(refs) == (2 if i % 2 else 1), d["metadata"]["name"]  # nothing missing or duplicated
            assert set(r["uid"] for r in refs) <= new_uids
            assert refs[0]["controller"] is True and refs[0]["kind"] == "NetworkPolicy"
        entries = record_entries(api, namespaces[0])
        assert len(entries) == total_refs and all(e["done"] for e in entries.values())
        with open(str(tmp_path / "record.json")) as f:
            file_entries = json.load(f)["entries"]
        assert len(file_entries) == total_refs and all(e["done"] for e in file_entries.values())
    finally:
        api.delete(coll(CALICO, "globalnetworkpolicies") + "/" + gnp_name)


def test_an_unavailable_aggregated_api_stops_detach_before_any_write(cluster, world, namespaces, ansible,
                                                                       tmp_path):
    name = "v1alpha1.unavailable-%s.calico-ops.io" % uuid.uuid4().hex[:6]
    group = name.split(".", 1)[1]
    world.api.create("/apis/apiregistration.k8s.io/v1/apiservices", {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name},
        "spec": {"group": group, "version": "v1alpha1", "groupPriorityMinimum": 100, "versionPriority": 10,
                 "insecureSkipTLSVerify": True, "service": {"namespace": namespaces[0], "name": "nowhere"}}})
    try:
        cluster.wait_for(lambda: any(g["name"] == group for g in world.api.req("GET", "/apis")["groups"]),
                         timeout=30, what="the aggregated group to be listed")
        mark = cluster.audit.mark()
        play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "detached"))
        assert play.rc != 0
        res = module_result(play)
        assert cluster.audit.writes_since(mark) == []
        assert "%s/v1alpha1" % group in res["msg"] and "Nothing was changed" in res["msg"]
        assert [u["type"] for u in res["unlistable"]] == ["%s/v1alpha1" % group]
        assert res["unlistable"][0]["status"] == 503 and res["counts"]["unlistable_types"] == 1
        for path, obj in world.existing().items():
            assert obj["metadata"]["ownerReferences"] == world.expected_refs(path)

        play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(
            namespaces, tmp_path, "detached", owner_references_fail_on_unlistable=False))
        assert play.rc == 0, play.stdout[-4000:]
        res = module_result(play)
        assert res["counts"]["unlistable_types"] == 1 and len(mine(res, namespaces)) == 21
        for obj in world.existing().values():
            assert calico_refs(obj) == []
    finally:
        world.api.delete("/apis/apiregistration.k8s.io/v1/apiservices/" + name, wait=True)


def test_the_api_server_answers_the_scan_with_metadata_only(cluster, calico_crds, namespaces):
    """The module's reads (Client.list/get with metadata_only) get PartialObjectMetadata from this API server, for a
    built-in type and a custom resource alike: a Secret's data never reaches the module. The control: the same
    LIST without it carries the data."""
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import Client
    ns = namespaces[0]
    secret_value = "calico-ops-" + uuid.uuid4().hex
    cluster.kubectl("create", "secret", "generic", "creds", "-n", ns, "--from-literal=password=" + secret_value)
    client = Client(cluster.k8s)
    client.create(CALICO, "networkpolicies", {"apiVersion": CALICO, "kind": "NetworkPolicy",
                                              "metadata": {"name": "np", "namespace": ns},
                                              "spec": {"selector": "all()"}}, namespace=ns)

    full = client.list("v1", "secrets", namespace=ns)
    assert [s["metadata"]["name"] for s in full] == ["creds"] and full[0]["data"], "control: a plain LIST has the data"
    meta = client.list("v1", "secrets", namespace=ns, metadata_only=True)
    assert [s["metadata"]["name"] for s in meta] == ["creds"]
    assert set(meta[0]) == {"apiVersion", "metadata"} and meta[0]["apiVersion"] == "v1", meta[0]
    assert meta[0]["metadata"]["uid"] == full[0]["metadata"]["uid"]
    one = client.get("v1", "secrets", "creds", namespace=ns, metadata_only=True)
    assert "data" not in one and one["metadata"]["name"] == "creds", one
    encoded = base64.b64encode(secret_value.encode()).decode()
    assert encoded not in json.dumps([meta, one]) and secret_value not in json.dumps([meta, one])
    # the patches of detach and attach ask for the metadata back too; the control: the same patch without it
    ops = [{"op": "add", "path": "/metadata/labels", "value": {"patched": "1"}}]
    patched = client.json_patch("v1", "secrets", "creds", ops, namespace=ns)
    assert patched["metadata"]["labels"] == {"patched": "1"} and "data" not in patched, patched
    assert encoded not in json.dumps(patched)
    ops = [{"op": "replace", "path": "/metadata/labels", "value": {"patched": "2"}}]
    control = client.request("PATCH", "/api/v1/namespaces/%s/secrets/creds" % ns, body=ops,
                             content_type="application/json-patch+json")  # the same patch, plain Accept
    assert control["data"], "control: a plain PATCH answers the data"

    policies = client.list(CALICO, "networkpolicies", namespace=ns, metadata_only=True)
    assert [p["metadata"]["name"] for p in policies] == ["np"] and "spec" not in policies[0], policies
    assert policies[0]["apiVersion"] == CALICO


# -- issue 23 ----------------------------------------------------------------------------------------------------

def test_attach_with_no_record_where_told_fails_naming_where_it_looked(cluster, world, namespaces, ansible, tmp_path):
    """A typo in the record's location used to report ok, changed=0, leaving every reference detached."""
    play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "detached"))
    assert play.rc == 0, play.stdout[-4000:]
    world.delete_owners()
    world.create_owners()
    elsewhere = tmp_path / "elsewhere" / "record.json"
    wrong = play_vars(namespaces, tmp_path, "attached", owner_references_record_namespace=namespaces[1],
                      owner_references_record_path=str(elsewhere))
    mark = cluster.audit.mark()
    play = ansible.playbook(PLAYBOOK, extra_vars=wrong)
    writes = cluster.audit.writes_since(mark)
    assert play.rc != 0, play.stdout[-4000:]
    msg = module_result(play)["msg"]
    assert writes == []
    assert "No owner references record at ConfigMap %s/oref-record and file %s" % (namespaces[1], elsewhere) in msg, msg
    assert "ConfigMap %s/oref-record (24 entries, 24 pending)" % namespaces[0] in msg, msg  # where it is
    assert "require_record=false" in msg, msg
    for obj in world.existing().values():
        assert calico_refs(obj) == []

    # said explicitly: nothing to attach there
    play = ansible.playbook(PLAYBOOK, extra_vars=dict(wrong, owner_references_require_record=False))
    assert play.rc == 0, play.stdout[-4000:]
    assert module_result(play)["changed"] is False

    # the right place: every reference back
    play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "attached"))
    assert play.rc == 0, play.stdout[-4000:]
    assert module_result(play)["counts"]["attached"] == 24


def test_missing_owners_name_each_dependent_and_the_owner_it_lost(cluster, world, namespaces, ansible, tmp_path):
    play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "detached"))
    assert play.rc == 0, play.stdout[-4000:]
    world.delete_owners()
    world.create_owners()
    ns = namespaces[0]
    world.api.delete(world.owner_paths()["np/" + ns], wait=True)  # gone for good
    play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "attached"))
    assert play.rc != 0
    res = module_result(play)
    expected = {("ConfigMap", ns, "cm-np"), ("ConfigMap", ns, "cm-both"), ("Secret", ns, "sec"),
                ("Deployment", ns, "dep")}
    lost = res["missing_owners"]
    assert set((m["dependent"]["kind"], m["dependent"]["namespace"], m["dependent"]["name"]) for m in lost) == expected
    assert all((m["owner"]["kind"], m["owner"]["name"]) == ("NetworkPolicy", "np") for m in lost), lost
    for kind, namespace, name in sorted(expected):
        line = "%s %s/%s: owner NetworkPolicy %s/np not found" % (kind, namespace, name, namespace)
        assert line in res["msg"], res["msg"]
        assert line in [m["lost"] for m in lost]
    assert res["counts"]["attached"] == 24 - 4


def test_an_empty_list_of_owner_api_versions_is_refused_before_any_write(cluster, world, namespaces, ansible,
                                                                          tmp_path):
    mark = cluster.audit.mark()
    play = ansible.playbook(PLAYBOOK, extra_vars=play_vars(namespaces, tmp_path, "detached",
                                                           owner_references_owner_api_versions=[]))
    assert play.rc != 0
    assert cluster.audit.writes_since(mark) == []
    msgs = " ".join(str(t["result"].get("msg", "")) for t in play.tasks if t["result"].get("failed"))
    assert "owner_references_owner_api_versions is an empty list" in msgs, msgs
    for path, obj in world.existing().items():
        assert obj["metadata"]["ownerReferences"] == world.expected_refs(path)
