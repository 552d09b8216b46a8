# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: server-side apply of a set of documents that writes only what would change.

For each document a server-side dry-run apply shows what the object would become; it is compared with the
live object, and only an object that would change is applied for real. So a re-run makes no write at all,
check mode makes none either (dry runs persist nothing), and the diff is exact: it is the server's own
answer. Live objects are read with one LIST per type (paginated) when several documents share a type.

The dry runs go out ``workers`` at a time (they persist nothing and none depends on another), and so do the writes
of consecutive CustomResourceDefinitions (no CRD needs another); every other write is sent in the documents' order,
one after another (a namespace before its objects). The API server answering one request at a time was most of
the time of a 32-CRD apply (benchmarks/results/design-measurements.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import time

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError, api_path
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.discovery import Kinds
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import condition
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.parallel import DEFAULT_WORKERS, in_order
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.redact import redact_object

_VOLATILE_METADATA = ("resourceVersion", "managedFields", "generation", "creationTimestamp", "uid")


class ApplyError(Exception):
    """A document could not be applied; the message names it. ``rejected``: the documents the API server
    refused in the dry run before any write (document, apiVersion, status, message)."""

    def __init__(self, message, rejected=None):
        super(ApplyError, self).__init__(message)
        self.rejected = rejected or []
        self.result = {"rejected": self.rejected}


def normalize(obj):
    """The object without the metadata the server changes on every write (for comparison)."""
    out = copy.deepcopy(obj or {})
    meta = out.get("metadata") or {}
    for key in _VOLATILE_METADATA:
        meta.pop(key, None)
    out.pop("status", None)
    return out


def contains(live, want):
    """Whether ``live`` holds every field and value of ``want`` (maps: a subset; lists: the same length, each item
    contained; other values: equal)."""
    if isinstance(want, dict):
        return isinstance(live, dict) and all(k in live and contains(live[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(live, list) and len(live) == len(want) and all(
            contains(item, w) for item, w in zip(live, want))
    return live == want


def _diff_paths(a, b, path=()):
    """Paths where ``a`` and ``b`` differ (lists of the same length compared item by item)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in set(a) | set(b):
            if key not in a or key not in b:
                out.append(path + (key,))
            else:
                out.extend(_diff_paths(a[key], b[key], path + (key,)))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out.extend(_diff_paths(x, y, path + (i,)))
        return out
    return [] if a == b else [path]


def _inside_a_list_of(doc, path):
    """Whether ``path`` runs through a list that ``doc`` sets (server-side apply replaces such a list whole)."""
    node = doc
    for step in path:
        if isinstance(node, list):
            return True
        if not isinstance(node, dict) or step not in node:
            return False
        node = node[step]
    return False


def only_controller_defaults(doc, before, dry):
    """True when writing ``doc`` would change nothing it sets: the live object already holds every field of the
    document, and the dry run differs from it only inside lists the document sets - values a controller filled in
    after an earlier apply (the Tigera operator defaults allowedUses, assignmentMode, ... inside the Installation's
    ipPools). Server-side apply replaces such a list whole; writing would only strip those defaults and start a tug
    of war with the controller on every run."""
    live = normalize(before)
    if not contains(live, {k: v for k, v in doc.items() if k != "status"}):
        return False
    paths = _diff_paths(live, normalize(dry))
    return bool(paths) and all(_inside_a_list_of(doc, p) for p in paths)


def describe(doc):
    meta = doc.get("metadata") or {}
    where = "%s/%s" % (meta.get("namespace"), meta.get("name")) if meta.get("namespace") else meta.get("name")
    return "%s %s" % (doc.get("kind"), where)


class TypeResolver(object):
    """kind -> (plural, namespaced), reading each group-version's resource list once (``discovery.Kinds``)."""

    def __init__(self, client):
        self.kinds = Kinds(client)

    def resolve(self, api_version, kind, timeout=0, interval=1.0):
        """The served type, waiting up to ``timeout`` seconds for a CRD just applied to be served."""
        deadline = time.time() + timeout
        while True:
            cached = self.kinds.loaded(api_version)
            found = self.kinds.load(api_version)
            if cached and (found is None or kind not in found):  # read before the CRD was: read again
                found = self.kinds.load(api_version, refresh=True)
            if found is not None and kind in found:
                return found[kind]
            if time.time() >= deadline:
                raise ApplyError("%s %s is not served by the cluster (is its CRD installed?)" % (api_version, kind))
            time.sleep(interval)


def _live_objects(client, resolver, docs, wait):
    """Live objects keyed by (apiVersion, kind, namespace, name): one LIST per type and namespace when a
    type has several documents, a GET otherwise."""
    groups = {}
    for doc in docs:
        rtype = resolver.resolve(doc["apiVersion"], doc["kind"], timeout=wait)
        ns = (doc.get("metadata") or {}).get("namespace") if rtype.namespaced else None
        groups.setdefault((doc["apiVersion"], doc["kind"], rtype.plural, ns), []).append(doc)
    live = {}
    for (api_version, kind, plural, ns), members in groups.items():
        if len(members) > 1:
            for obj in client.list(api_version, plural, namespace=ns):
                live[(api_version, kind, ns, obj["metadata"]["name"])] = obj
        else:
            name = members[0]["metadata"]["name"]
            obj = client.get(api_version, plural, name, namespace=ns)
            if obj is not None:
                live[(api_version, kind, ns, name)] = obj
    return live


def _dry_run(client, path, doc, query):
    return client.request("PATCH", path, body=doc, content_type="application/apply-patch+yaml",
                          query=dict(query, dryRun="All"), dry_run=True)


def _place(resolver, doc, namespace):
    """Set (or drop) the document's namespace as its type requires; return ``(namespace, path)``."""
    rtype = resolver.resolve(doc["apiVersion"], doc["kind"])
    meta = doc.setdefault("metadata", {})
    ns = None
    if rtype.namespaced:
        ns = meta.get("namespace") or namespace or "default"
        meta["namespace"] = ns
    else:
        meta.pop("namespace", None)
    return ns, api_path(doc["apiVersion"], rtype.plural, ns, meta["name"])


def apply_documents(client, docs, field_manager, force=True, check_mode=False, namespace=None, wait=0,
                    workers=DEFAULT_WORKERS):
    """Apply ``docs``; return ``(results, changed)``. ``results`` has one entry per document:
    ``{"kind", "name", "namespace", "action": created|updated|unchanged, "before", "after"}``.

    Every document is dry-run (server-side) before the first write, so a document the API server rejects stops
    the call with nothing written (ApplyError naming every rejected document with the server's message, its
    ``rejected`` attribute listing them). Only documents that cannot be dry-run yet are dry-run when reached:
    objects of a type a CRD of the same call creates, and objects whose dry run is refused as NotFound naming
    an object an earlier document of the same call creates (their namespace; the ClusterRole a new
    ClusterRoleBinding grants, which RBAC's escalation check reads when the caller may not bind any role).
    ``workers``: how many dry runs (and writes of consecutive CRDs) are in flight at once; 1 sends each in turn. A
    write the API server refuses stops the call (ApplyError naming the document); of a batch of CRDs, the others of
    the batch may have been written by then - a re-run writes what is still missing."""
    resolver = TypeResolver(client)
    docs = [copy.deepcopy(d) for d in docs if d]
    for doc in docs:
        if not doc.get("apiVersion") or not doc.get("kind") or not (doc.get("metadata") or {}).get("name"):
            raise ApplyError("a document has no apiVersion, kind or metadata.name: %r" % (redact_object(doc),)[:300])
    query = {"fieldManager": field_manager, "force": "true" if force else None}
    plan = _dry_run_all(client, resolver, docs, namespace, query, workers)
    return _write_plan(client, resolver, plan, namespace, query, check_mode, wait, workers)


def _dry_run_all(client, resolver, docs, namespace, query, workers):
    """1. The dry run of every document that can be dry-run now, ``workers`` at a time; nothing is written before
    every one has passed (ApplyError naming each rejected document). Returns the plan: ``[(doc, step)]``, step None
    (dry-run when reached) or ``(ns, path, before, dry)``."""
    served, places = [], {}
    for doc in docs:
        try:
            resolver.resolve(doc["apiVersion"], doc["kind"], timeout=0)
        except ApplyError:
            continue
        places[id(doc)] = _place(resolver, doc, namespace)
        served.append(doc)
    live = _live_objects(client, resolver, served, 0) if served else {}
    served_ids = set(id(d) for d in served)
    plan = []
    rejected = []
    created = []  # names of the earlier documents of this call that would be created
    outcomes = dict((id(doc), outcome) for doc, outcome in zip(served, in_order(
        lambda doc: _dry_run(client, places[id(doc)][1], doc, query), served, workers)))
    for doc in docs:
        if id(doc) not in served_ids:
            plan.append((doc, None))
            continue
        ns, path = places[id(doc)]
        dry, exc = outcomes[id(doc)]
        if exc is not None:
            if not isinstance(exc, ClientError):
                raise exc
            if exc.status == 404 and any('"%s"' % name in str(exc) or "'%s'" % name in str(exc) for name in created):
                # it needs an object an earlier document of this call creates (its namespace; the ClusterRole a
                # binding grants, which the API server must read when the caller may not bind any role):
                # dry-run when reached, after that write
                plan.append((doc, None))
                continue
            rejected.append({"document": describe(doc), "apiVersion": doc["apiVersion"], "status": exc.status,
                             "message": str(exc)})
            continue
        before = live.get((doc["apiVersion"], doc["kind"], ns, doc["metadata"]["name"]))
        plan.append((doc, (ns, path, before, dry)))
        if before is None:
            created.append(doc["metadata"]["name"])
    if rejected:
        raise ApplyError("the API server rejected %d of %d document(s) in a server-side dry run; nothing was "
                         "written: %s" % (len(rejected), len(docs), "; ".join(
                             "%s (%s): %s" % (r["document"], r["apiVersion"], r["message"]) for r in rejected)),
                         rejected=rejected)
    return plan


def _write_plan(client, resolver, plan, namespace, query, check_mode, wait, workers):
    """2. In order, write what would change (consecutive CRDs several at a time); ``(results, changed)``."""
    results = []
    changed = False
    crds = []  # consecutive CRDs to write: (index in results, doc, path)

    def write_crds():
        for (index, doc, path), (after, exc) in zip(crds, in_order(
                lambda item: _write(client, item[2], item[1], query), crds, workers)):
            if exc is not None:
                raise exc
            results[index] = dict(results[index], after=normalize(after) if after else {})
        del crds[:]

    for doc, step in plan:
        if crds and not (step is not None and doc.get("kind") == "CustomResourceDefinition"):
            write_crds()
        if step is None and check_mode:
            changed = True
            results.append(_not_created_yet(resolver, doc, namespace))
            continue
        ns, path, before, dry = step if step is not None else _dry_run_when_reached(
            client, resolver, doc, namespace, query, wait)
        if before is not None and normalize(dry) == normalize(before):
            results.append(_result(doc, ns, "unchanged", before, before))
            continue
        if before is not None and only_controller_defaults(doc, before, dry):
            results.append(dict(_result(doc, ns, "unchanged", before, before),
                                note="every field it sets is in place; a controller's defaults inside its lists "
                                     "are left alone"))
            continue
        changed = True
        action = "created" if before is None else "updated"
        after = dry
        if not check_mode and step is not None and doc.get("kind") == "CustomResourceDefinition":
            crds.append((len(results), doc, path))  # written with the CRDs next to it; ``after`` set then
        elif not check_mode:
            after = _write(client, path, doc, query)
        results.append(_result(doc, ns, action, before, after))
    if crds:
        write_crds()
    return results, changed


def _not_created_yet(resolver, doc, namespace):
    """Check mode, a document that could not be dry-run: nothing is created in check mode, so a type whose CRD (or
    a namespace that) an earlier document or step would create does not exist: reported as to be created."""
    note = {}
    try:
        resolver.resolve(doc["apiVersion"], doc["kind"], timeout=0)
        ns = _place(resolver, doc, namespace)[0]
    except ApplyError:
        ns = None
        note = {"note": "%s %s is not served yet" % (doc["apiVersion"], doc["kind"])}
    return dict(_result(doc, ns, "created", None, doc), **note)


def _dry_run_when_reached(client, resolver, doc, namespace, query, wait):
    """``(ns, path, before, dry)`` of a document dry-run only now (its type or what it needs was written by an
    earlier document of the call), waiting up to ``wait`` seconds for its type to be served."""
    resolver.resolve(doc["apiVersion"], doc["kind"], timeout=wait)
    ns, path = _place(resolver, doc, namespace)
    rtype = resolver.resolve(doc["apiVersion"], doc["kind"])
    before = client.get(doc["apiVersion"], rtype.plural, doc["metadata"]["name"], namespace=ns)
    try:
        dry = _dry_run(client, path, doc, query)
    except ClientError as exc:
        raise ApplyError("%s: %s" % (describe(doc), exc))
    return ns, path, before, dry


def _write(client, path, doc, query):
    """The server-side apply of ``doc``; its answer (the object as written)."""
    try:
        return client.request("PATCH", path, body=doc, content_type="application/apply-patch+yaml", query=query)
    except ClientError as exc:
        raise ApplyError("%s: %s" % (describe(doc), exc))


def _result(doc, ns, action, before, after):
    return {"apiVersion": doc["apiVersion"], "kind": doc["kind"], "name": doc["metadata"]["name"],
            "namespace": ns, "action": action, "before": normalize(before) if before else {},
            "after": normalize(after) if after else {}}


# An annotation set and removed again to give a CRD an update event (``wait_crds_established``)
NUDGE_ANNOTATION = "lifecycle.calico-ops.io/establishing"


def stuck_installing(crd):
    """Whether a CRD's names are accepted but it is not Established: the API server's establishing controller
    has it in an in-memory queue, filled only by an update event of the CRD; an API server that dies between the
    two loses the queue, and a restarted one establishes the CRD only at its next update (or informer resync,
    minutes later)."""
    return (condition(crd, "NamesAccepted").get("status") == "True"
            and condition(crd, "Established").get("status") != "True")


def nudge_crd(client, name, clock=time.time):
    """Give the CRD ``name`` an update event, leaving it as it was: an annotation set, then removed."""
    path = "apiextensions.k8s.io/v1"
    client.merge_patch(path, "customresourcedefinitions", name,
                       {"metadata": {"annotations": {NUDGE_ANNOTATION: "%d" % clock()}}})
    client.merge_patch(path, "customresourcedefinitions", name, {"metadata": {"annotations": {NUDGE_ANNOTATION: None}}})


def wait_crds_established(client, names, timeout, interval=1.0, nudge_after=10.0, clock=time.time, sleep=time.sleep):
    """Wait until every named CRD has condition Established=True; return ``(not_established, nudged)``: the names
    that are not, and those that were nudged. A CRD whose names were accepted but that is still not Established
    ``nudge_after`` seconds into the wait (the API server establishes a CRD within 5 s of accepting its names; one
    that restarted in between does not, see ``stuck_installing``) gets an update event (``nudge_crd``), once."""
    start = clock()
    deadline = start + timeout
    pending = set(names)
    nudged = []
    while pending:
        for crd in client.list("apiextensions.k8s.io/v1", "customresourcedefinitions"):
            name = crd["metadata"]["name"]
            if name not in pending:
                continue
            if condition(crd, "Established").get("status") == "True":
                pending.discard(name)
            elif name not in nudged and clock() - start >= nudge_after and stuck_installing(crd):
                try:
                    nudge_crd(client, name, clock)
                except ClientError:
                    continue  # not nudged: waited for as before (and tried again at the next poll)
                nudged.append(name)
        if not pending or clock() >= deadline:
            break
        sleep(interval)
    return sorted(pending), nudged
