# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: server-side apply of a set of documents that writes only what would change.

For each document a server-side dry-run apply shows what the object would become; it is compared with the
live object, and only an object that would change is applied for real. So a re-run makes no write at all,
check mode makes none either (dry runs persist nothing), and the diff is exact: it is the server's own
answer. Live objects are read with one LIST per type (paginated) when several documents share a type.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import time

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.client import ClientError, api_path
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.discovery import _group_version_resources

_VOLATILE_METADATA = ("resourceVersion", "managedFields", "generation", "creationTimestamp", "uid")


class ApplyError(Exception):
    """A document could not be applied; the message names it."""


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
    """kind -> (plural, namespaced), reading each group-version's resource list once."""

    def __init__(self, client):
        self.client = client
        self._cache = {}

    def _load(self, api_version):
        path = "/api/%s" % api_version if "/" not in api_version else "/apis/%s" % api_version
        group, version = api_version.rpartition("/")[0::2]
        try:
            types = _group_version_resources(self.client, path, group, version, True)
        except ClientError as exc:
            if exc.status == 404:
                return None
            raise
        return dict((t.kind, t) for t in types)

    def resolve(self, api_version, kind, timeout=0, interval=1.0):
        """The served type, waiting up to ``timeout`` seconds for a CRD just applied to be served."""
        deadline = time.time() + timeout
        while True:
            types = self._cache.get(api_version)
            if types is None or kind not in types:
                types = self._load(api_version)
                if types is not None:
                    self._cache[api_version] = types
            if types is not None and kind in types:
                return types[kind]
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


def apply_documents(client, docs, field_manager, force=True, check_mode=False, namespace=None, wait=0):
    """Apply ``docs``; return ``(results, changed)``. ``results`` has one entry per document:
    ``{"kind", "name", "namespace", "action": created|updated|unchanged, "before", "after"}``."""
    resolver = TypeResolver(client)
    docs = [copy.deepcopy(d) for d in docs if d]
    for doc in docs:
        if not doc.get("apiVersion") or not doc.get("kind") or not (doc.get("metadata") or {}).get("name"):
            raise ApplyError("a document has no apiVersion, kind or metadata.name: %r" % (doc,)[:300])
    results = []
    changed = False
    created_namespaces = set()
    # Types created by the same call (CRDs first, then their objects) are resolved when reached.
    pending = list(docs)
    while pending:
        # the next run of documents whose types are served now
        batch = []
        for doc in pending:
            try:
                resolver.resolve(doc["apiVersion"], doc["kind"], timeout=0)
            except ApplyError:
                if batch:
                    break
                if check_mode:
                    # Nothing was created in check mode, so a type whose CRD an earlier step (or document)
                    # would create is not served: report the object as to be created, do not wait for it.
                    changed = True
                    results.append(dict(_result(doc, None, "created", None, doc),
                                        note="%s %s is not served yet" % (doc["apiVersion"], doc["kind"])))
                    break
                resolver.resolve(doc["apiVersion"], doc["kind"], timeout=wait)
            batch.append(doc)
        if not batch:
            pending = pending[1:]
            continue
        pending = pending[len(batch):]
        live = _live_objects(client, resolver, batch, wait)
        for doc in batch:
            rtype = resolver.resolve(doc["apiVersion"], doc["kind"])
            meta = doc.setdefault("metadata", {})
            ns = None
            if rtype.namespaced:
                ns = meta.get("namespace") or namespace or "default"
                meta["namespace"] = ns
            else:
                meta.pop("namespace", None)
            path = api_path(doc["apiVersion"], rtype.plural, ns, meta["name"])
            query = {"fieldManager": field_manager, "force": "true" if force else None}
            before = live.get((doc["apiVersion"], doc["kind"], ns, meta["name"]))
            try:
                dry = client.request("PATCH", path, body=doc, content_type="application/apply-patch+yaml",
                                     query=dict(query, dryRun="All"), dry_run=True)
            except ClientError as exc:
                if check_mode and exc.status == 404 and ns and ns in created_namespaces:
                    # check mode: its namespace would be created by an earlier document of this call
                    changed = True
                    results.append(_result(doc, ns, "created", None, doc))
                    continue
                raise ApplyError("%s: %s" % (describe(doc), exc))
            if before is not None and normalize(dry) == normalize(before):
                results.append(_result(doc, ns, "unchanged", before, before))
                continue
            if before is not None and only_controller_defaults(doc, before, dry):
                results.append(dict(_result(doc, ns, "unchanged", before, before),
                                    note="every field it sets is in place; a controller's defaults inside its "
                                         "lists are left alone"))
                continue
            changed = True
            action = "created" if before is None else "updated"
            after = dry
            if not check_mode:
                try:
                    after = client.request("PATCH", path, body=doc, content_type="application/apply-patch+yaml",
                                           query=query)
                except ClientError as exc:
                    raise ApplyError("%s: %s" % (describe(doc), exc))
            results.append(_result(doc, ns, action, before, after))
            if doc["kind"] == "Namespace" and doc["apiVersion"] == "v1" and action == "created":
                created_namespaces.add(meta["name"])
    return results, changed


def _result(doc, ns, action, before, after):
    return {"apiVersion": doc["apiVersion"], "kind": doc["kind"], "name": doc["metadata"]["name"],
            "namespace": ns, "action": action, "before": normalize(before) if before else {},
            "after": normalize(after) if after else {}}


def wait_crds_established(client, names, timeout, interval=1.0):
    """Wait until every named CRD has condition Established=True; return the names that are not."""
    deadline = time.time() + timeout
    pending = set(names)
    while pending:
        for crd in client.list("apiextensions.k8s.io/v1", "customresourcedefinitions"):
            conds = (crd.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
                pending.discard(crd["metadata"]["name"])
        if not pending or time.time() >= deadline:
            break
        time.sleep(interval)
    return sorted(pending)
