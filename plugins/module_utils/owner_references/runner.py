# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the runner of the ``owner_references`` module.

Calico v3.28 gave every ``projectcalico.org/v3`` object a new UID. An object whose ``ownerReferences``
name one of them by its old UID is deleted by the garbage collector after the upgrade. The remedy in the
upgrade guide: remove those references before the upgrade and add them back, with the new UIDs, after.

* ``detached``: discover every listable type, LIST each (paginated), and for every object holding a
  reference whose ``apiVersion`` is one of ``owner_api_versions``: **record** it first (the dependent's
  apiVersion/kind/namespace/name/uid and the full reference, saved to the cluster and to a file), **then**
  remove those references with a JSON patch that first tests the object's UID and its current
  ``ownerReferences`` (a concurrent change makes the test fail: re-read, record again if needed, retry).
  Other owners are kept as they are.
* ``attached``: for every entry of the record not yet done, look up the owner by apiVersion/kind/name (in
  the dependent's namespace when discovery says the owner kind is namespaced), add the reference back with
  the owner's current UID and the other fields as recorded, and mark the entry done. A missing owner is
  reported and left out; entries are checkpointed to the record as the run goes, and an entry found
  already attached (a run killed between its patch and its checkpoint) is just marked done.

Check mode reads everything and writes nothing (the ``Client`` refuses writes, the record is not saved).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import threading

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.discovery import discover
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import status_counts
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.parallel import (
    DEFAULT_WORKERS, in_order, workers_problem)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.report import (
    DEFAULT_REPORT_LIMIT, listed, report_limit_problem)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.store import (
    RecordStoreError, open_record_store)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references.attach import AttachSteps
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references.rules import (
    CHECKPOINT_EVERY, CHECKPOINT_SECONDS, DEFAULT_OWNER_API_VERSIONS, DEFAULT_RECORD_NAME, DEFAULT_RECORD_NAMESPACE,
    JOB, PATCH_RETRIES, OwnerReferencesError, entry_key, owner_brief, refs_patch)


class Runner(AttachSteps):
    """The job: ``detached`` (here) and ``attached`` (``attach.AttachSteps``)."""

    def __init__(self, client, owner_api_versions=None, record_namespace=DEFAULT_RECORD_NAMESPACE,
                 record_name=DEFAULT_RECORD_NAME, record_path=None, variable_prefix=None,
                 fail_on_unlistable=True, fail_on_missing_owner=True, diff=False, page_size=500,
                 checkpoint_every=CHECKPOINT_EVERY, checkpoint_seconds=CHECKPOINT_SECONDS, require_record=True, workers=DEFAULT_WORKERS,
                 report_limit=DEFAULT_REPORT_LIMIT):
        self.client = client
        self.report_limit = DEFAULT_REPORT_LIMIT if report_limit is None else report_limit
        self.workers = max(1, int(workers or 1))
        # the patches go out ``workers`` at a time; what they share (the record, the owners looked up) is changed
        # under this lock, the counts and reports only in the calling thread, in order
        self._lock = threading.RLock()
        self._owner_locks = {}  # attach: (apiVersion, kind, namespace, name) -> the lock of that owner's one GET
        self.owner_api_versions = list(owner_api_versions or DEFAULT_OWNER_API_VERSIONS)
        self.record_namespace = record_namespace or DEFAULT_RECORD_NAMESPACE
        self.record_name = record_name or DEFAULT_RECORD_NAME
        self.record_path = record_path
        self.variable_prefix = variable_prefix
        self.fail_on_unlistable = fail_on_unlistable
        self.fail_on_missing_owner = fail_on_missing_owner
        self.require_record = require_record
        self.want_diff = diff
        self.page_size = page_size
        self.checkpoint_every = max(1, int(checkpoint_every))
        self.checkpoint_seconds = checkpoint_seconds
        self.check_mode = bool(getattr(client, "check_mode", False))
        self.counts = {"scanned_types": 0, "unlistable_types": 0, "objects": 0, "affected": 0,
                       "recorded": 0, "detached": 0, "attached": 0, "already_attached": 0,
                       "missing_owners": 0, "dependents_gone": 0, "failed": 0}
        self.objects = []
        self.unlistable = []
        self.missing = []
        self.failures = []
        self.notes = []
        self.diffs = []
        self.store = None

    # -- common --------------------------------------------------------------------------------------

    def _open_store(self):
        self.store = open_record_store(self.client, self.record_namespace, self.record_name, self.record_path, JOB,
                                       variable_prefix=self.variable_prefix)
        return self.store

    def _is_owner_ref(self, ref):
        return (ref or {}).get("apiVersion") in self.owner_api_versions

    def _add_diff(self, dep, before, after):
        if not self.want_diff:
            return
        where = "%s %s%s" % (dep.get("kind"), dep.get("namespace") + "/" if dep.get("namespace") else "",
                             dep.get("name"))
        self.diffs.append({"before_header": where, "after_header": where,
                           "before": {"metadata": {"ownerReferences": before or []}},
                           "after": {"metadata": {"ownerReferences": after or []}}})

    def result(self, state, changed):
        out = {"changed": changed, "state": state, "check_mode": self.check_mode,
               "owner_api_versions": self.owner_api_versions, "counts": dict(self.counts),
               "unlistable": self.unlistable, "missing_owners": self.missing, "failures": self.failures}
        listed(out, self.report_limit, objects=self.objects)
        if self.store is not None:
            out["record"] = self.store.describe()
        if self.notes:
            out["notes"] = list(self.notes)
        if self.want_diff:
            out["diff"] = self.diffs
        return out

    def run(self, state):
        if state == "detached":
            return self.detach()
        if state == "attached":
            return self.attach()
        raise ValueError("state must be detached or attached, not %r" % (state,))

    def _patch_refs(self, res, obj, compute):
        """Patch ``obj`` (of type ``res``) to ``compute(current refs)``; re-read and retry when the guard
        fails. Returns (before, after, obj) of the applied patch, (refs, refs, obj) when nothing had to
        change, or (None, None, None) when the object is gone (or was replaced by another with its name)."""
        meta = obj.get("metadata") or {}
        uid, name, namespace = meta.get("uid"), meta.get("name"), meta.get("namespace")
        last_error = None
        for _attempt in range(PATCH_RETRIES):
            meta = obj.get("metadata") or {}
            current = meta.get("ownerReferences")
            wanted = compute(copy.deepcopy(current or []))
            if wanted == (current or []):
                return current or [], current or [], obj
            ops = refs_patch(uid, current, wanted, meta.get("resourceVersion"))
            try:
                self.client.json_patch(res.api_version, res.plural, name, ops, namespace=namespace)
                return current or [], wanted, obj
            except ClientError as exc:
                if exc.status == 404:
                    return None, None, None
                if exc.status not in (409, 422):
                    raise
                last_error = exc
            obj = self.client.get(res.api_version, res.plural, name, namespace=namespace, metadata_only=True)
            if obj is None or (obj.get("metadata") or {}).get("uid") != uid:
                return None, None, None
        raise last_error

    # -- detached ------------------------------------------------------------------------------------

    def _scan(self):
        """LIST every listable type; return [(type, object)] of the objects holding owner references."""
        found = []
        seen = set()
        discovery = discover(self.client)
        self.unlistable.extend(f.as_dict() for f in discovery.failures)
        types = list(discovery.listable())
        # the types listed ``workers`` at a time, their objects taken in discovery's order
        pages = in_order(lambda r: self.client.list(r.api_version, r.plural, page_size=self.page_size,
                                                    metadata_only=True), types, self.workers)
        for res, (items, exc) in zip(types, pages):
            if exc is not None:
                if not isinstance(exc, ClientError):
                    raise exc
                if exc.status == 404:
                    continue  # the type went away between discovery and LIST: it holds no objects
                self.unlistable.append({"type": res.name, "status": exc.status, "reason": str(exc),
                                        "stage": "list"})
                continue
            self.counts["scanned_types"] += 1
            for item in items:
                uid = (item.get("metadata") or {}).get("uid")
                if not uid or uid in seen:
                    continue  # one object served by two groups (events: v1 and events.k8s.io/v1)
                seen.add(uid)
                self.counts["objects"] += 1
                if any(self._is_owner_ref(r) for r in (item.get("metadata") or {}).get("ownerReferences") or []):
                    found.append((res, item))
        self.counts["unlistable_types"] = len(self.unlistable)
        return found

    @staticmethod
    def _dependent(res, obj):
        meta = obj.get("metadata") or {}
        dep = {"apiVersion": res.api_version, "kind": res.kind, "resource": res.plural,
               "name": meta.get("name"), "uid": meta.get("uid")}
        if res.namespaced:
            dep["namespace"] = meta.get("namespace")
        return dep

    def _record(self, res, obj):
        """Add an entry for each owner reference of ``obj`` to the record; return how many were new."""
        dep = self._dependent(res, obj)
        new = 0
        for position, ref in enumerate((obj.get("metadata") or {}).get("ownerReferences") or []):
            if self._is_owner_ref(ref):
                if self.store.add(entry_key(dep["uid"], ref), {"dependent": dep, "ownerReference": ref,
                                                               "position": position}):
                    new += 1
        self.counts["recorded"] += new
        return new

    def detach(self):
        found = self._scan()
        if self.unlistable and self.fail_on_unlistable:
            names = ", ".join(u["type"] for u in self.unlistable)
            statuses = [u.get("status") for u in self.unlistable]
            raise OwnerReferencesError(
                "%d resource type(s) cannot be listed (%s), so some owner references could be missed: %s. "
                "Nothing was changed. %s, or set fail_on_unlistable=false to go on without them."
                % (len(self.unlistable), status_counts(statuses), names,
                   "Grant the roles docs/rbac.yml lists for owner_references" if 403 in statuses
                   else "Fix access to them"), self.result("detached", False))
        self._open_store()
        self.counts["affected"] = len(found)
        new = 0
        for res, obj in found:
            new += self._record(res, obj)
        if self.check_mode:
            for res, obj in found:
                refs = obj["metadata"]["ownerReferences"]
                keep = [r for r in refs if not self._is_owner_ref(r)]
                removed = [r for r in refs if self._is_owner_ref(r)]
                self.counts["detached"] += len(removed)
                self._report(res, obj, "would detach", removed)
                self._add_diff(self._dependent(res, obj), refs, keep)
            return self.result("detached", bool(found))
        if new:
            self.store.meta.update({"owner_api_versions": self.owner_api_versions})
            self.store.save()  # the record is durable before the first reference is removed
        unexpected = None
        for (res, obj), (outcome, error) in zip(found, in_order(lambda ro: self._detach_patch(*ro), found,
                                                                self.workers)):
            if error is not None and not isinstance(error, ClientError):
                unexpected = unexpected or error
                continue
            self._detach_book(res, obj, outcome, error)
        if unexpected is not None:
            raise unexpected
        changed = bool(new or self.counts["detached"])
        if self.failures:
            raise OwnerReferencesError("%d object(s) could not be detached: %s" % (
                len(self.failures), "; ".join(f["error"] for f in self.failures[:5])),
                self.result("detached", changed))
        return self.result("detached", changed)

    def _detach_patch(self, res, obj):
        """The requests for one dependent (run on a worker thread): ``(before, after, removed)`` of its patch (see
        ``_patch_refs``). A reference that appeared since the scan is recorded, and the record saved, first."""
        removed = []

        def compute(refs):
            mine = [r for r in refs if self._is_owner_ref(r)]
            if mine:
                current = dict(obj)
                current_meta = dict(obj.get("metadata") or {})
                current_meta["ownerReferences"] = refs
                current["metadata"] = current_meta
                with self._lock:
                    if self._record(res, current):
                        self.store.save()  # a reference that appeared since the scan: record it first
            del removed[:]
            removed.extend(mine)
            return [r for r in refs if not self._is_owner_ref(r)]

        before, after, _obj = self._patch_refs(res, obj, compute)
        return before, after, removed

    def _detach_book(self, res, obj, outcome, error):
        """The counts, report and diff of one dependent's detach (in the calling thread, in order)."""
        dep = self._dependent(res, obj)
        if error is not None:
            self.counts["failed"] += 1
            self.failures.append({"dependent": dep, "error": str(error)})
            self._report_dep(dep, "failed", [])
            return
        before, after, removed = outcome
        if before is None:
            self._report_dep(dep, "gone", [])
            return
        if before == after:
            self._report_dep(dep, "already detached", [])
            return
        self.counts["detached"] += len(removed)
        self._report_dep(dep, "detached", removed)
        self._add_diff(dep, before, after)

    def _report(self, res, obj, action, refs):
        self._report_dep(self._dependent(res, obj), action, refs)

    def _report_dep(self, dep, action, refs, extra=None):
        item = dict(dep)
        item["action"] = action
        item["owners"] = [owner_brief(r) for r in refs]
        if extra:
            item.update(extra)
        self.objects.append(item)


def run(client, params, diff=False):
    """Entry point for the module: ``params`` holds the module's options."""
    if params.get("owner_api_versions") is not None and not [v for v in params["owner_api_versions"] if v]:
        raise OwnerReferencesError("owner_api_versions is an empty list: give at least one owner apiVersion (for "
                                   "example projectcalico.org/v3); nothing was read or written",
                                   {"changed": False, "state": params.get("state")})
    problem = workers_problem(params.get("workers")) or report_limit_problem(params.get("report_limit"))
    if problem:
        raise OwnerReferencesError(problem + "; nothing was read or written", {"changed": False,
                                                                               "state": params.get("state")})
    runner = Runner(client,
                    owner_api_versions=params.get("owner_api_versions"),
                    record_namespace=params.get("record_namespace"),
                    record_name=params.get("record_name"),
                    record_path=params.get("record_path"),
                    variable_prefix=params.get("variable_prefix"),
                    fail_on_unlistable=params.get("fail_on_unlistable", True),
                    fail_on_missing_owner=params.get("fail_on_missing_owner", True),
                    require_record=params.get("require_record", True),
                    diff=diff,
                    page_size=params.get("page_size") or 500,
                    workers=params.get("workers") or DEFAULT_WORKERS,
                    report_limit=params.get("report_limit"))
    try:
        return runner.run(params["state"])
    except RecordStoreError as exc:
        raise OwnerReferencesError(str(exc), runner.result(params["state"], False))
