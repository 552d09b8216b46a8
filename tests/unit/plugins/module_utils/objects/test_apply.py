"""objects/apply.py, manifest apply: dry run first, write only what would change (stub client; the real API is in
tests/integration/test_install_ebpf.py)."""

import copy
import threading
import time

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.objects import apply as ap
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.objects.apply import TypeResolver

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_clock import Clock
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import client
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.objects_cluster import cluster


class StubClient:
    """Serves /api/v1 discovery and keeps objects; SSA = merge of the body into the stored object."""

    def __init__(self, objects=None):
        self.objects = objects or {}
        self.calls = []

    def request(self, method, path, body=None, query=None, content_type=None, dry_run=False):
        self.calls.append((method, path, bool(dry_run)))
        if path == "/api/v1":
            return {"resources": [{"name": "configmaps", "kind": "ConfigMap", "namespaced": True, "verbs": ["list"]},
                                  {"name": "namespaces", "kind": "Namespace", "namespaced": False, "verbs": ["list"]}]}
        if path.startswith("/apis/"):
            raise ClientError("the server could not find the requested resource", status=404)
        if method == "PATCH":
            ns = body["metadata"].get("namespace")
            if ns and ("v1", "Namespace", None, ns) not in self.objects:
                raise ClientError("namespaces %r not found" % ns, status=404)
            key = (body["apiVersion"], body["kind"], ns, body["metadata"]["name"])
            merged = copy.deepcopy(self.objects.get(key, {}))
            merged.update(copy.deepcopy(body))
            merged.setdefault("metadata", {})["resourceVersion"] = "2" if key in self.objects else "1"
            if not dry_run:
                self.objects[key] = merged
            return merged
        raise AssertionError("unexpected %s %s" % (method, path))

    def get(self, api_version, plural, name, namespace=None):
        self.calls.append(("GET", plural, False))
        kind = {"configmaps": "ConfigMap", "namespaces": "Namespace"}[plural]
        return copy.deepcopy(self.objects.get((api_version, kind, namespace, name)))

    def list(self, api_version, plural, namespace=None):
        self.calls.append(("LIST", plural, False))
        kind = {"configmaps": "ConfigMap", "namespaces": "Namespace"}[plural]
        return [copy.deepcopy(o) for k, o in self.objects.items() if k[1] == kind and k[2] == namespace]


NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "app"}, "data": {"k": "v"}}


def writes(client):
    return [c for c in client.calls if c[0] == "PATCH" and not c[2]]


def test_new_objects_are_created_and_a_rerun_writes_nothing():
    client = StubClient()
    results, changed = ap.apply_documents(client, [NS, CM], "calico-ops")
    assert changed and [r["action"] for r in results] == ["created", "created"]
    assert len(writes(client)) == 2
    client.calls = []
    results, changed = ap.apply_documents(client, [NS, CM], "calico-ops")
    assert not changed and [r["action"] for r in results] == ["unchanged", "unchanged"]
    assert writes(client) == []


def test_a_changed_field_is_the_only_write():
    client = StubClient()
    ap.apply_documents(client, [NS, CM], "calico-ops")
    client.calls = []
    new = dict(CM, data={"k": "v2"})
    results, changed = ap.apply_documents(client, [NS, new], "calico-ops")
    assert changed and [r["action"] for r in results] == ["unchanged", "updated"]
    assert writes(client) == [("PATCH", "/api/v1/namespaces/app/configmaps/a", False)]
    assert results[1]["before"]["data"] == {"k": "v"} and results[1]["after"]["data"] == {"k": "v2"}


def test_check_mode_sends_only_dry_runs_even_for_a_namespace_it_would_create():
    client = StubClient()
    results, changed = ap.apply_documents(client, [NS, CM], "calico-ops", check_mode=True)
    assert changed and [r["action"] for r in results] == ["created", "created"]
    assert writes(client) == [] and client.objects == {}


def test_a_namespace_that_does_not_exist_and_is_not_created_is_an_error():
    with pytest.raises(ap.ApplyError, match="ConfigMap app/a"):
        ap.apply_documents(StubClient(), [CM], "calico-ops", check_mode=True)


INSTALLATION = {"apiVersion": "operator.tigera.io/v1", "kind": "Installation", "metadata": {"name": "default"},
                "spec": {"calicoNetwork": {"linuxDataplane": "BPF"}}}


def test_check_mode_reports_an_object_of_a_type_not_served_yet_without_waiting():
    client = StubClient({("v1", "Namespace", None, "app"): dict(NS)})
    started = time.monotonic()
    results, changed = ap.apply_documents(client, [INSTALLATION, CM], "calico-ops", check_mode=True, wait=30)
    assert time.monotonic() - started < 5
    assert changed and [(r["kind"], r["action"]) for r in results] == [("Installation", "created"), ("ConfigMap", "created")]
    assert "not served yet" in results[0]["note"] and "note" not in results[1]
    assert writes(client) == [] and len(client.objects) == 1


def test_outside_check_mode_a_type_that_is_not_served_is_an_error_after_the_wait():
    with pytest.raises(ap.ApplyError, match="operator.tigera.io/v1 Installation is not served"):
        ap.apply_documents(StubClient(), [INSTALLATION], "calico-ops", wait=0)


def test_documents_of_one_type_are_read_with_one_list():
    client = StubClient({("v1", "Namespace", None, "app"): dict(NS)})
    docs = [dict(CM, metadata={"name": n, "namespace": "app"}) for n in "abc"]
    ap.apply_documents(client, docs, "calico-ops")
    reads = [c for c in client.calls if c[0] in ("GET", "LIST") and c[1] != "/api/v1"]
    assert reads == [("LIST", "configmaps", False)]


def test_normalize_ignores_server_bookkeeping():
    a = {"metadata": {"name": "x", "resourceVersion": "1", "managedFields": [1], "uid": "u"}, "status": {"a": 1}}
    b = {"metadata": {"name": "x", "resourceVersion": "9"}}
    assert ap.normalize(a) == ap.normalize(b)


def test_unnamed_document_is_refused():
    with pytest.raises(ap.ApplyError, match="no apiVersion, kind or metadata.name"):
        ap.apply_documents(StubClient(), [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}], "m")


POOLS = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pools", "namespace": "app"},
         "spec": {"mode": "BPF", "ipPools": [{"name": "default", "cidr": "192.168.0.0/16"}]}}


def _controller_defaults(client):
    """What the Tigera operator does after an apply: defaults filled in inside the list (not by our manager)."""
    key = ("v1", "ConfigMap", "app", "pools")
    client.objects[key]["spec"]["ipPools"][0].update({"assignmentMode": "Automatic", "allowedUses": ["Workload"]})


def test_a_controllers_defaults_inside_a_list_we_set_are_not_stripped_by_a_rerun():
    client = StubClient()
    ap.apply_documents(client, [NS, POOLS], "calico-ops")
    _controller_defaults(client)
    client.calls = []
    results, changed = ap.apply_documents(client, [NS, POOLS], "calico-ops")
    assert not changed and results[1]["action"] == "unchanged" and "defaults" in results[1]["note"]
    assert writes(client) == []


def test_a_change_of_ours_inside_that_list_is_still_written():
    client = StubClient()
    ap.apply_documents(client, [NS, POOLS], "calico-ops")
    _controller_defaults(client)
    client.calls = []
    new = copy.deepcopy(POOLS)
    new["spec"]["ipPools"][0]["cidr"] = "10.0.0.0/16"
    results, changed = ap.apply_documents(client, [NS, new], "calico-ops")
    assert changed and results[1]["action"] == "updated" and len(writes(client)) == 1


def test_a_field_of_ours_a_controller_changed_outside_lists_is_written_back():
    client = StubClient()
    ap.apply_documents(client, [NS, POOLS], "calico-ops")
    client.objects[("v1", "ConfigMap", "app", "pools")]["spec"]["mode"] = "Iptables"
    client.calls = []
    results, changed = ap.apply_documents(client, [NS, POOLS], "calico-ops")
    assert changed and results[1]["action"] == "updated" and len(writes(client)) == 1


def test_only_controller_defaults_rule():
    doc = {"spec": {"a": 1, "l": [{"x": 1}]}}
    live = {"metadata": {"resourceVersion": "5"}, "spec": {"a": 1, "l": [{"x": 1, "d": 2}], "other": 3}}
    meta = {"metadata": {"resourceVersion": "6"}}
    assert ap.only_controller_defaults(doc, live, dict(meta, spec={"a": 1, "l": [{"x": 1}], "other": 3}))
    # a difference outside the lists the document sets
    assert not ap.only_controller_defaults(doc, live, dict(meta, spec={"a": 1, "l": [{"x": 1}]}))
    # nothing differs at all: not this rule's case (plain "unchanged")
    assert not ap.only_controller_defaults(doc, live, live)
    # the live object lacks something the document sets
    assert not ap.only_controller_defaults({"spec": {"a": 2, "l": [{"x": 1}]}}, live, {"spec": {"a": 2}})
    # a list of another length is not "contained"
    assert not ap.contains({"l": [1, 2]}, {"l": [1]})
    assert ap.contains({"l": [{"x": 1, "y": 2}], "z": 0}, {"l": [{"x": 1}]})


class RejectingClient(StubClient):
    """The API server rejects (422) one named ConfigMap, dry run or not."""

    def __init__(self, bad, objects=None):
        super().__init__(objects)
        self.bad = bad

    def request(self, method, path, body=None, query=None, content_type=None, dry_run=False):
        if method == "PATCH" and body["metadata"]["name"] in self.bad:
            self.calls.append((method, path, bool(dry_run)))
            raise ClientError("PATCH %s: 422 Unprocessable Entity: ConfigMap %r is invalid: data: Too long"
                              % (path, body["metadata"]["name"]), status=422)
        return super().request(method, path, body, query, content_type, dry_run)


def test_every_document_is_dry_run_before_the_first_write_and_a_rejection_writes_nothing():
    client = RejectingClient({"c", "e"}, {("v1", "Namespace", None, "app"): dict(NS)})
    docs = [dict(CM, metadata={"name": n, "namespace": "app"}) for n in "abcde"]
    with pytest.raises(ap.ApplyError) as err:
        ap.apply_documents(client, docs, "calico-ops")
    assert writes(client) == []
    assert [r["document"] for r in err.value.rejected] == ["ConfigMap app/c", "ConfigMap app/e"]
    msg = str(err.value)
    assert "rejected 2 of 5 document(s)" in msg and "nothing was written" in msg
    assert "ConfigMap app/c (v1): PATCH /api/v1/namespaces/app/configmaps/c: 422 Unprocessable Entity" in msg
    dry = [c for c in client.calls if c[0] == "PATCH" and c[2]]
    assert len(dry) == 5  # every document, not only up to the first rejection


def test_without_a_rejection_the_dry_runs_come_first_then_the_writes_in_order():
    client = StubClient({("v1", "Namespace", None, "app"): dict(NS)})
    docs = [dict(CM, metadata={"name": n, "namespace": "app"}) for n in "ab"]
    ap.apply_documents(client, docs, "calico-ops")
    patches = [(c[1].rsplit("/", 1)[1], c[2]) for c in client.calls if c[0] == "PATCH"]
    assert sorted(patches[:2]) == [("a", True), ("b", True)]  # the dry runs go out together, in any order
    assert patches[2:] == [("a", False), ("b", False)]


CRD_API = "apiextensions.k8s.io/v1"


def _crd_doc(name):
    return {"apiVersion": CRD_API, "kind": "CustomResourceDefinition", "metadata": {"name": name},
            "spec": {"group": "example.org"}}


class InFlightClient(StubClient):
    """Also serves CRDs; each PATCH takes a moment and the client notes how many were in flight at once, dry runs
    and writes apart, and when each write started and ended; ``refuse``: names whose write is refused (422)."""

    def __init__(self, objects=None, refuse=()):
        super().__init__(objects)
        self.lock = threading.Lock()
        self.in_flight = {True: 0, False: 0}
        self.most = {True: 0, False: 0}
        self.spans = {}
        self.refuse = set(refuse)

    def request(self, method, path, body=None, query=None, content_type=None, dry_run=False):
        if path == "/apis/" + CRD_API:
            return {"resources": [{"name": "customresourcedefinitions", "kind": "CustomResourceDefinition",
                                   "namespaced": False, "verbs": ["list"]}]}
        if method != "PATCH":
            return super().request(method, path, body, query, content_type, dry_run)
        dry = bool(dry_run)
        with self.lock:
            self.in_flight[dry] += 1
            self.most[dry] = max(self.most[dry], self.in_flight[dry])
            start = time.monotonic()
        try:
            time.sleep(0.05)
            if not dry and body["metadata"]["name"] in self.refuse:
                raise ClientError("PATCH %s: 422 Unprocessable Entity: refused" % path, status=422)
            self.calls.append((method, path, dry))
            ns = body["metadata"].get("namespace")
            key = (body["apiVersion"], body["kind"], ns, body["metadata"]["name"])
            merged = dict(copy.deepcopy(body), metadata=dict(body["metadata"], resourceVersion="1"))
            if ns and ("v1", "Namespace", None, ns) not in self.objects:
                raise ClientError("namespaces %r not found" % ns, status=404)
            if not dry:
                self.objects[key] = merged
            return merged
        finally:
            with self.lock:
                self.in_flight[dry] -= 1
                if not dry:
                    self.spans[body["metadata"]["name"]] = (start, time.monotonic())

    def list(self, api_version, plural, namespace=None):
        if plural == "customresourcedefinitions":
            self.calls.append(("LIST", plural, False))
            return [copy.deepcopy(o) for k, o in self.objects.items() if k[1] == "CustomResourceDefinition"]
        return super().list(api_version, plural, namespace)


def test_dry_runs_go_out_together_and_one_worker_sends_them_one_at_a_time():
    docs = [dict(CM, metadata={"name": n, "namespace": "app"}) for n in "abcd"]
    client = InFlightClient({("v1", "Namespace", None, "app"): dict(NS)})
    ap.apply_documents(client, docs, "calico-ops", workers=4)
    assert client.most[True] == 4
    assert client.most[False] == 1  # ConfigMaps are written one after another, in order
    assert [c[1].rsplit("/", 1)[1] for c in client.calls if c[0] == "PATCH" and not c[2]] == list("abcd")
    client = InFlightClient({("v1", "Namespace", None, "app"): dict(NS)})
    ap.apply_documents(client, docs, "calico-ops", workers=1)
    assert client.most == {True: 1, False: 1}


def test_consecutive_crds_are_written_together_and_before_the_document_after_them():
    docs = [_crd_doc("a.example.org"), _crd_doc("b.example.org"), _crd_doc("c.example.org"),
            dict(CM, metadata={"name": "x", "namespace": "app"})]
    client = InFlightClient({("v1", "Namespace", None, "app"): dict(NS)})
    results, changed = ap.apply_documents(client, docs, "calico-ops", workers=8)
    assert changed and client.most[False] == 3
    assert [(r["name"], r["action"]) for r in results] == [
        ("a.example.org", "created"), ("b.example.org", "created"), ("c.example.org", "created"), ("x", "created")]
    assert all(r["after"]["spec"] == {"group": "example.org"} for r in results[:3])  # the write's answer
    crds_done = max(client.spans[n][1] for n in ("a.example.org", "b.example.org", "c.example.org"))
    assert client.spans["x"][0] >= crds_done
    client2 = InFlightClient(dict(client.objects))
    assert ap.apply_documents(client2, docs, "calico-ops")[1] is False  # a re-run writes nothing
    assert writes(client2) == []


def test_a_refused_crd_write_names_the_crd_and_stops_before_the_documents_after_the_batch():
    docs = [_crd_doc("a.example.org"), _crd_doc("b.example.org"),
            dict(CM, metadata={"name": "x", "namespace": "app"})]
    client = InFlightClient({("v1", "Namespace", None, "app"): dict(NS)}, refuse={"b.example.org"})
    with pytest.raises(ap.ApplyError, match="CustomResourceDefinition b.example.org: PATCH .*422"):
        ap.apply_documents(client, docs, "calico-ops")
    assert "x" not in client.spans  # the ConfigMap after the batch was not written


class NeedsEarlierClient(StubClient):
    """Plays RBAC's escalation check: the dry run of ``binding`` is NotFound while ``role`` does not exist."""

    def request(self, method, path, body=None, query=None, content_type=None, dry_run=False):
        if method == "PATCH" and body["metadata"]["name"] == "binding" and \
                ("v1", "ConfigMap", "app", "role") not in self.objects:
            self.calls.append((method, path, bool(dry_run)))
            raise ClientError('PATCH %s: 404 Not Found: clusterroles.rbac.authorization.k8s.io "role" not found'
                              % path, status=404)
        return super().request(method, path, body, query, content_type, dry_run)


def test_a_document_that_needs_an_object_the_call_creates_is_dry_run_after_that_write():
    client = NeedsEarlierClient({("v1", "Namespace", None, "app"): dict(NS)})
    docs = [dict(CM, metadata={"name": n, "namespace": "app"}) for n in ("role", "binding")]
    results, _changed = ap.apply_documents(client, docs, "calico-ops")
    assert [r["action"] for r in results] == ["created", "created"]
    # not created by this call: a real rejection, nothing written
    client = NeedsEarlierClient({("v1", "Namespace", None, "app"): dict(NS)})
    with pytest.raises(ap.ApplyError, match="rejected 1 of 1"):
        ap.apply_documents(client, docs[1:], "calico-ops")
    assert writes(client) == []


# -- waiting for CRDs: one the API server accepted but never established (it restarted in between) ---------------

def _crd(name, names_accepted, established, reason="InitialNamesAccepted"):
    conds = [{"type": "NamesAccepted", "status": names_accepted, "reason": reason}]
    if established is not None:
        conds.append({"type": "Established", "status": established,
                      "reason": "InitialNamesAccepted" if established == "True" else "Installing"})
    return {"metadata": {"name": name}, "status": {"conditions": conds}}


class CrdClient:
    """CRDs whose state the test sets; an update of one that is stuck Installing makes it Established, as the API
    server's establishing controller does on the update event."""

    def __init__(self, crds, establish_on_update=True):
        self.crds = dict((c["metadata"]["name"], c) for c in crds)
        self.establish_on_update = establish_on_update
        self.patches = []

    def list(self, api_version, plural):
        assert (api_version, plural) == ("apiextensions.k8s.io/v1", "customresourcedefinitions")
        return [copy.deepcopy(c) for c in self.crds.values()]

    def merge_patch(self, api_version, plural, name, patch, namespace=None):
        self.patches.append((name, patch))
        if self.establish_on_update:
            self.crds[name] = _crd(name, "True", "True")
        return self.crds[name]


def test_a_crd_stuck_installing_is_nudged_once_after_the_grace_and_then_established():
    client = CrdClient([_crd("a.example.org", "True", "True"), _crd("b.example.org", "True", "False")])
    clock = Clock(1000.0)
    pending, nudged = ap.wait_crds_established(client, ["a.example.org", "b.example.org"], 60, clock=clock,
                                               sleep=clock.sleep)
    assert pending == [] and nudged == ["b.example.org"]
    # set, then removed again (the CRD is left as it was), 10 s into the wait and not before: the API server
    # establishes a CRD within seconds on its own
    assert client.patches == [
        ("b.example.org", {"metadata": {"annotations": {ap.NUDGE_ANNOTATION: "1010"}}}),
        ("b.example.org", {"metadata": {"annotations": {ap.NUDGE_ANNOTATION: None}}})]


def test_established_crds_and_crds_whose_names_are_not_accepted_are_not_nudged():
    client = CrdClient([_crd("a.example.org", "True", "True"), _crd("c.example.org", "False", "False", "NameConflict")])
    clock = Clock(1000.0)
    pending, nudged = ap.wait_crds_established(client, ["a.example.org", "c.example.org"], 30, clock=clock,
                                               sleep=clock.sleep)
    assert pending == ["c.example.org"] and nudged == [] and client.patches == []


def test_a_nudge_that_does_not_help_is_not_repeated_and_the_wait_times_out():
    client = CrdClient([_crd("b.example.org", "True", "False")], establish_on_update=False)
    clock = Clock(1000.0)
    pending, nudged = ap.wait_crds_established(client, ["b.example.org"], 40, clock=clock, sleep=clock.sleep)
    assert pending == ["b.example.org"] and nudged == ["b.example.org"] and len(client.patches) == 2


def test_a_refused_nudge_is_tried_again_at_the_next_poll():
    class Refusing(CrdClient):
        def merge_patch(self, *args, **kwargs):
            if len(self.patches) == 0:
                self.patches.append("refused")
                raise ClientError("forbidden", status=403)
            return CrdClient.merge_patch(self, *args, **kwargs)

    client = Refusing([_crd("b.example.org", "True", "False")])
    clock = Clock(1000.0)
    pending, nudged = ap.wait_crds_established(client, ["b.example.org"], 60, clock=clock, sleep=clock.sleep)
    assert pending == [] and nudged == ["b.example.org"] and client.patches[0] == "refused"


def test_apply_resolver_reads_again_for_a_kind_its_first_read_did_not_have():
    dyn = cluster()
    resolver = TypeResolver(client(dyn))
    assert resolver.resolve("v1", "ConfigMap").plural == "configmaps"
    dyn.add_type("v1", "services", "Service")
    assert resolver.resolve("v1", "Service").plural == "services"  # a CRD applied after the first read
