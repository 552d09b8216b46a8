# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes layer: several objects read in one module run (``objects_info``).

A role that needs four objects used to run four ``kubernetes.core.k8s_info`` tasks (or one looped task): four
module start-ups, each with its own discovery. Here every wanted object is one entry ``{api_version, kind,
namespace, name, label_selectors}``; each group-version is discovered once (one GET of ``/apis/<gv>``, none for an
entry whose type is already known), then the reads go out a few at a time. An entry with a ``name`` is one GET (a
404 is ``[]``), an entry without one is a paginated LIST (of ``namespace``, or of every namespace). A type the server
does not serve - a CRD not installed yet - is ``served: false`` with ``[]``, never a failure; a read the caller's
RBAC does not grant (403) is ``forbidden: true`` with ``[]`` when ``allow_forbidden`` (a summary that reports what
it may see), else a failure; any other error (500, the server gone) fails the run naming the object and the
API's reason.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.discovery import Kinds
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import condition as status_condition
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.parallel import in_order
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import poll

FIELDS = ("api_version", "kind", "namespace", "name", "label_selectors")


def entry_problem(index, entry):
    """A message naming ``objects[index]`` when the entry cannot be read, else None (checked before any request)."""
    if not isinstance(entry, dict):
        return "objects[%d]: must be a mapping with api_version, kind and name (or label_selectors)" % index
    unknown = sorted(set(entry) - set(FIELDS))
    if unknown:
        return "objects[%d]: unknown key(s) %s; allowed: %s" % (index, ", ".join(unknown), ", ".join(FIELDS))
    for key in ("api_version", "kind"):
        if not entry.get(key):
            return "objects[%d]: %s is required" % (index, key)
    for key in ("api_version", "kind", "namespace", "name"):
        if entry.get(key) is not None and not isinstance(entry[key], str):
            return "objects[%d]: %s must be a string, not %r" % (index, key, entry[key])
    selectors = entry.get("label_selectors")
    if selectors is not None and (not isinstance(selectors, list)
                                  or not all(isinstance(s, str) and s for s in selectors)):
        return "objects[%d]: label_selectors must be a list of selectors such as ['k8s-app=kube-proxy'], not %r" % (
            index, selectors)
    if entry.get("name") and selectors:
        return "objects[%d]: give name or label_selectors, not both" % index
    return None


def _label(entry):
    where = entry.get("name") or ",".join(entry.get("label_selectors") or []) or "(all)"
    if entry.get("namespace"):
        where = "%s/%s" % (entry["namespace"], where)
    return "%s %s %s" % (entry["api_version"], entry["kind"], where)


_FORBIDDEN = object()


def read_objects(client, entries, workers=8, allow_forbidden=False):
    """``{"objects": [...], "api_requests": ...}``: per entry, in the entries' order, ``api_version``, ``kind``,
    ``namespace``, ``name``, ``served`` (the type is served), ``forbidden`` (403, with ``allow_forbidden``),
    ``found`` (at least one object) and ``resources`` (the object, or the LIST's items; ``[]`` when none)."""
    kinds = Kinds(client)
    versions = sorted(set(e["api_version"] for e in entries))
    for _types, exc in in_order(kinds.load, versions, workers):
        if exc is not None:
            raise exc

    def read(entry):
        try:
            return _read(entry)
        except ClientError as exc:
            if allow_forbidden and exc.status == 403:
                return _FORBIDDEN
            raise

    def _read(entry):
        rtype = kinds.find(entry["api_version"], entry["kind"])
        if rtype is None:
            return None
        namespace = entry.get("namespace") if rtype.namespaced else None
        if entry.get("name"):
            obj = client.get(entry["api_version"], rtype.plural, entry["name"], namespace=namespace)
            return [obj] if obj is not None else []
        selector = ",".join(entry.get("label_selectors") or []) or None
        return client.list(entry["api_version"], rtype.plural, namespace=namespace, label_selector=selector)

    out = []
    for entry, (resources, exc) in zip(entries, in_order(read, entries, workers)):
        if exc is not None:
            raise exc
        rtype = kinds.find(entry["api_version"], entry["kind"])
        forbidden = resources is _FORBIDDEN
        if forbidden:
            resources = []
        out.append({"api_version": entry["api_version"], "kind": entry["kind"],
                    "namespace": entry.get("namespace") if rtype is None or rtype.namespaced else None,
                    "name": entry.get("name"), "label": _label(entry), "served": rtype is not None,
                    "forbidden": forbidden, "found": bool(resources), "resources": resources or []})
    return {"objects": out, "api_requests": dict(client.requests)}


CONDITION_STATUSES = ("True", "False", "Unknown")


def condition_problem(wanted):
    """A bad ``wait_condition``, one line naming the option; None when it is good."""
    if not isinstance(wanted, dict) or not isinstance(wanted.get("type"), str) or not wanted["type"]:
        return "wait_condition: give the condition's type, e.g. {type: Available}, not %r" % (wanted,)
    if str(wanted.get("status", "True")) not in CONDITION_STATUSES:
        return "wait_condition.status is %r: one of %s" % (wanted.get("status"), ", ".join(CONDITION_STATUSES))
    return None


def unmet(objects, wanted):
    """What keeps ``objects`` (``read_objects``' entries) from the status condition ``wanted`` (``type``,
    ``status`` - default True), one line per entry or object, each with the object's own conditions; [] when
    every entry has found its objects and each of them has it."""
    ctype, status = wanted["type"], str(wanted.get("status", "True"))
    out = []
    for o in objects:
        if not o["found"]:
            out.append("%s: %s" % (o["label"], "not served" if not o["served"] else "not found"))
        for r in o["resources"]:
            if status_condition(r, ctype).get("status") != status:
                conditions = ((r.get("status") or {}).get("conditions")) or []
                out.append("%s/%s: %s" % (o["kind"], r["metadata"].get("name"), "; ".join(
                    "%s=%s%s" % (c.get("type"), c.get("status"), (": " + c["message"]) if c.get("message") else "")
                    for c in conditions) or "no conditions reported"))
    return out


def still_there(objects):
    """One line per object that exists (for a wait until every entry finds none); [] when all are gone."""
    return ["%s/%s: still there%s" % (o["kind"], r["metadata"].get("name"), " (deleted at %s)" % r["metadata"][
        "deletionTimestamp"] if r["metadata"].get("deletionTimestamp") else "")
        for o in objects for r in o["resources"]]


def wait_objects(client, entries, wanted, timeout, interval, workers=8, allow_forbidden=False, **clock):
    """``read_objects`` again every ``interval`` seconds until every object has the condition ``wanted`` (None:
    until no entry finds any object), or ``timeout`` seconds passed, inside one call (no retried task); with
    ``satisfied``, ``waited`` and ``unmet`` (what was still missing or still there, in the objects' own words)."""
    def left(objects):
        return still_there(objects) if wanted is None else unmet(objects, wanted)
    out, waited, _polls = poll(lambda: read_objects(client, entries, workers, allow_forbidden),
                               lambda r: not left(r["objects"]), timeout, interval, **clock)
    missing = left(out["objects"])
    out.update(satisfied=not missing, waited=waited, unmet=missing, api_requests=dict(client.requests))
    return out


def subject(params):
    """What a failure before any request names: the first object asked for (``ConfigMap kube-system/x``)."""
    entries = params.get("objects") or []
    first = entries[0] if entries and isinstance(entries[0], dict) else {}
    if not first.get("kind"):
        return "the objects asked for"
    where = "/".join(p for p in (first.get("namespace"), first.get("name")) if p)
    return ("%s %s" % (first["kind"], where)).strip()
