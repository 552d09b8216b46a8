# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: hand the fields of other field managers over to ours before a server-side apply.

Server-side apply removes a field only when the applier owned it and no longer applies it. Objects
installed by ``kubectl apply``/``create`` (or anyone else) are owned by that manager, so applying a newer
manifest under our manager would leave behind whatever the new release dropped (an init container, an env
var, a volume). ``kubectl apply --server-side`` migrates client-side-applied objects the same way; here the
managers to take over are given (the role passes the ones that applied the installed manifest).

``handover`` is pure (unit-tested); ``run`` reads each object once and, when it has something to hand over,
replaces ``metadata.managedFields`` with a JSON patch guarded by the object's resourceVersion.

A handover is a write of its own, so it is made only where the apply would otherwise leave something behind:
when the whole document is given, a server-side dry run of its apply (force, our manager) shows who would own
what afterwards; if every field the other managers would still own is one the new document sets too (shared
ownership, nothing left behind), the object is left to the apply alone. A dry run that fails (a type not served
yet, an invalid document) changes nothing: the handover is made as before.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import time

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError, api_path
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.discovery import Kinds

RETRIES = 3


def merge_fields(a, b):
    """The union of two ``fieldsV1`` sets."""
    out = copy.deepcopy(a) if isinstance(a, dict) else {}
    for key, value in (b or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_fields(out[key], value)
        else:
            out[key] = copy.deepcopy(value) if isinstance(value, dict) else {}
    return out


def handover(managed_fields, from_managers, to_manager, api_version, now=None):
    """``(new managedFields, adopted manager names)``: the main-resource entries of ``from_managers`` merged
    into one ``Apply`` entry of ``to_manager``; subresource entries (status) and other managers untouched.
    Nothing to adopt -> the list unchanged and ``[]``."""
    entries = list(managed_fields or [])
    wanted = set(m for m in (from_managers or []) if m and m != to_manager)
    adopted, keep, fields = [], [], {}
    own = None
    for entry in entries:
        if entry.get("subresource"):
            keep.append(entry)
            continue
        manager = entry.get("manager")
        if manager in wanted:
            fields = merge_fields(fields, entry.get("fieldsV1"))
            if manager not in adopted:
                adopted.append(manager)
            continue
        if manager == to_manager and entry.get("operation") == "Apply" and own is None:
            own = entry
            keep.append(None)  # placeholder: our entry goes where it was
            continue
        keep.append(entry)
    if not adopted:
        return entries, []
    merged = {
        "manager": to_manager,
        "operation": "Apply",
        "apiVersion": (own or {}).get("apiVersion") or api_version,
        "time": now or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "fieldsType": "FieldsV1",
        "fieldsV1": merge_fields((own or {}).get("fieldsV1"), fields),
    }
    if own is None:
        keep.insert(0, merged)
    else:
        keep[keep.index(None)] = merged
    return keep, adopted


def covers(ours, theirs):
    """True when every field path of ``theirs`` (a ``fieldsV1`` set) is in ``ours`` too."""
    for key, value in (theirs or {}).items():
        if key not in (ours or {}):
            return False
        if isinstance(value, dict) and value and not covers((ours or {}).get(key) or {}, value):
            return False
    return True


def left_behind(managed_fields, from_managers, to_manager):
    """The ``fieldsV1`` set that ``from_managers`` own on the main resource and ``to_manager``'s Apply entry does
    not (``{}`` when nothing): what an apply by ``to_manager`` would leave in place if the document dropped it."""
    ours, theirs = {}, {}
    for entry in managed_fields or []:
        if entry.get("subresource"):
            continue
        if entry.get("manager") == to_manager and entry.get("operation") == "Apply":
            ours = merge_fields(ours, entry.get("fieldsV1"))
        elif entry.get("manager") in (from_managers or []):
            theirs = merge_fields(theirs, entry.get("fieldsV1"))
    return {} if covers(ours, theirs) else theirs


def _whole_document(obj):
    return any(k not in ("apiVersion", "kind", "metadata") for k in obj or {})


def _apply_would_leave_behind(client, api_version, plural, obj, namespace, from_managers, to_manager):
    """True/False from a server-side dry run of the apply; None when the dry run could not tell."""
    body = dict((k, v) for k, v in obj.items() if k != "status")
    body["metadata"] = dict((k, v) for k, v in (obj.get("metadata") or {}).items()
                            if k not in ("managedFields", "resourceVersion", "uid", "creationTimestamp"))
    if namespace:
        body["metadata"]["namespace"] = namespace
    try:
        after = client.request("PATCH", api_path(api_version, plural, namespace, body["metadata"]["name"]),
                               body=body, content_type="application/apply-patch+yaml", dry_run=True,
                               query={"fieldManager": to_manager, "force": "true"})
    except ClientError:
        return None
    fields = ((after or {}).get("metadata") or {}).get("managedFields")
    if not fields:
        return None
    return bool(left_behind(fields, from_managers, to_manager))


def managers(managed_fields):
    return sorted(set("%s (%s%s)" % (e.get("manager"), e.get("operation"),
                                     ", " + e["subresource"] if e.get("subresource") else "")
                      for e in managed_fields or []))


class Resolver(object):
    """kind -> (plural, namespaced), one discovery GET per group-version (``discovery.Kinds``)."""

    def __init__(self, client):
        self.kinds = Kinds(client)

    def resolve(self, api_version, kind):
        found = self.kinds.find(api_version, kind)
        return (found.plural, found.namespaced) if found is not None else None


def _prefetch(client, resolver, objects):
    """Live objects by (apiVersion, kind, namespace, name): one LIST per type (per namespace) holding several
    documents, instead of a GET each (operator-crds.yaml alone has some 80 CRDs)."""
    groups = {}
    for obj in objects or []:
        meta = obj.get("metadata") or {}
        res = resolver.resolve(obj.get("apiVersion"), obj.get("kind")) if obj.get("apiVersion") else None
        if res is None:
            continue
        namespace = (meta.get("namespace") or "default") if res[1] else None
        groups.setdefault((obj.get("apiVersion"), obj.get("kind"), namespace), []).append(meta.get("name"))
    found = {}
    for (api_version, kind, namespace), names in groups.items():
        if len(names) < 2:
            continue
        plural = resolver.resolve(api_version, kind)[0]
        for item in client.list(api_version, plural, namespace=namespace):
            name = (item.get("metadata") or {}).get("name")
            if name in names:
                found[(api_version, kind, namespace, name)] = item
        for name in names:
            found.setdefault((api_version, kind, namespace, name), None)
    return found


def run(client, objects, from_managers, to_manager, diff=False):
    """Hand the fields of ``from_managers`` over to ``to_manager`` on each existing object of ``objects``
    (manifests: only apiVersion, kind, name and namespace are used)."""
    resolver = Resolver(client)
    prefetched = _prefetch(client, resolver, objects)
    report, diffs = [], []
    counts = {"objects": 0, "adopted": 0, "absent": 0, "unchanged": 0, "unknown_type": 0, "covered": 0}
    for obj in objects or []:
        meta = obj.get("metadata") or {}
        api_version, kind, name = obj.get("apiVersion"), obj.get("kind"), meta.get("name")
        item = {"apiVersion": api_version, "kind": kind, "name": name}
        counts["objects"] += 1
        res = resolver.resolve(api_version, kind) if api_version and kind else None
        if res is None:
            counts["unknown_type"] += 1
            item["action"] = "type not served yet"
            report.append(item)
            continue
        plural, namespaced = res
        namespace = (meta.get("namespace") or "default") if namespaced else None
        if namespace:
            item["namespace"] = namespace
        handed = _Handover(client, obj, plural, namespace, from_managers, to_manager)
        counts[handed.run(prefetched.get((api_version, kind, namespace, name), _NOT_READ), item, diffs if diff else None)] += 1
        report.append(item)
    result = {"changed": counts["adopted"] > 0, "objects": report, "counts": counts}
    if diff:
        result["diff"] = diffs
    return result


# not in the prefetched lists: read with a GET
_NOT_READ = object()


class _Handover(object):
    """One object's handover: read (the prefetched copy first), compare, patch managedFields guarded by the
    resourceVersion read; a conflict reads again, up to RETRIES times."""

    def __init__(self, client, obj, plural, namespace, from_managers, to_manager):
        self.client, self.obj, self.plural, self.namespace = client, obj, plural, namespace
        self.from_managers, self.to_manager = from_managers, to_manager
        self.api_version, self.kind = obj.get("apiVersion"), obj.get("kind")
        self.name = (obj.get("metadata") or {}).get("name")

    def run(self, prefetched, item, diffs):
        """``prefetched``: the object as listed (None: listed and absent), or _NOT_READ. Fills ``item`` (action,
        adopted_from / shared_with) and ``diffs`` (when not None); returns the counter to raise: absent, unchanged,
        covered or adopted."""
        for attempt in range(RETRIES):
            live = prefetched if attempt == 0 and prefetched is not _NOT_READ else self.client.get(
                self.api_version, self.plural, self.name, namespace=self.namespace)
            outcome = self._attempt(attempt, live, item, diffs)
            if outcome is not None:
                return outcome
        raise ClientError("%s %s: managedFields kept changing; tried %d times" % (self.kind, self.name, RETRIES))

    def _attempt(self, attempt, live, item, diffs):
        """One read-compare-patch round; None when the object changed meanwhile (read again)."""
        if live is None:
            item["action"] = "absent"
            return "absent"
        current = (live.get("metadata") or {}).get("managedFields") or []
        new, adopted = handover(current, self.from_managers, self.to_manager, self.api_version)
        if not adopted:
            item["action"] = "nothing to adopt"
            return "unchanged"
        if attempt == 0 and _whole_document(self.obj) and _apply_would_leave_behind(
                self.client, self.api_version, self.plural, self.obj, self.namespace, self.from_managers,
                self.to_manager) is False:
            item.update(action="covered by the apply", shared_with=adopted)
            return "covered"
        item["adopted_from"] = adopted
        ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": live["metadata"]["resourceVersion"]},
               {"op": "replace", "path": "/metadata/managedFields", "value": new}]
        if diffs is not None:
            what = "%s %s" % (self.kind, self.name)
            diffs.append({"before": {"object": what, "managers": managers(current)},
                          "after": {"object": what, "managers": managers(new)}})
        if self.client.check_mode:
            item["action"] = "would adopt"
            return "adopted"
        try:
            self.client.json_patch(self.api_version, self.plural, self.name, ops, namespace=self.namespace)
        except ClientError as exc:
            if exc.status in (409, 422):
                return None  # changed meanwhile: read again
            raise
        item["action"] = "adopted"
        return "adopted"
