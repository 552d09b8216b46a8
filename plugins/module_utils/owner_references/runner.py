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
import os
import time

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.discovery import discover
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.store import (
    DEFAULT_RECORD_DIR, RecordStoreError, find_records, open_record_store)

JOB = "owner_references"
DEFAULT_OWNER_API_VERSIONS = ["projectcalico.org/v3"]
DEFAULT_RECORD_NAMESPACE = "kube-system"
DEFAULT_RECORD_NAME = "calico-ops-owner-references"
PATCH_RETRIES = 6
# attach saves the record after every CHECKPOINT_EVERY entries done, at most once per CHECKPOINT_SECONDS
# (and always after 10 * CHECKPOINT_EVERY); a run killed in between redoes nothing: it finds those
# references in place and only marks them done
CHECKPOINT_EVERY = 100
CHECKPOINT_SECONDS = 1.0
PREFETCH_MIN = 10  # dependents of one type in one namespace from which attach LISTs them instead of GETs


class OwnerReferencesError(Exception):
    """The job stopped or finished with failures; ``result`` is what it did and found."""

    def __init__(self, message, result):
        super(OwnerReferencesError, self).__init__(message)
        self.result = result


def group_of(api_version):
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def entry_key(dependent_uid, ref):
    """A stable key: the dependent and the exact reference (the owner UID included, so a later cycle
    that detaches the re-attached reference makes a new entry)."""
    return "|".join([dependent_uid, ref.get("apiVersion") or "", ref.get("kind") or "",
                     ref.get("name") or "", ref.get("uid") or ""])


def _same_owner(a, b):
    return (group_of(a.get("apiVersion") or "") == group_of(b.get("apiVersion") or "")
            and a.get("kind") == b.get("kind") and a.get("name") == b.get("name"))


def _owner_brief(ref):
    return dict((k, ref.get(k)) for k in ("apiVersion", "kind", "name", "uid"))


def _refs_patch(uid, current, new, resource_version):
    """A JSON patch replacing the ownerReferences, guarded by tests of the UID and the current value."""
    ops = [{"op": "test", "path": "/metadata/uid", "value": uid}]
    if current is None:
        # no ownerReferences field: a test cannot assert absence, the resourceVersion guards instead
        ops.append({"op": "test", "path": "/metadata/resourceVersion", "value": resource_version})
        if new:
            ops.append({"op": "add", "path": "/metadata/ownerReferences", "value": new})
        return ops
    ops.append({"op": "test", "path": "/metadata/ownerReferences", "value": current})
    if new:
        ops.append({"op": "replace", "path": "/metadata/ownerReferences", "value": new})
    else:
        ops.append({"op": "remove", "path": "/metadata/ownerReferences"})
    return ops


def describe_object(obj):
    """``Kind namespace/name`` (``Kind name`` when cluster-scoped) of a record's dependent."""
    return "%s %s%s" % (obj.get("kind"), (obj["namespace"] + "/") if obj.get("namespace") else "", obj.get("name"))


def missing_owners_message(missing):
    """One line naming every dependent left without an owner reference, with the owner it lost."""
    by_dependent = {}
    order = []
    for m in missing:
        label = describe_object(m["dependent"])
        if label not in by_dependent:
            by_dependent[label] = []
            order.append(label)
        by_dependent[label].append(m["reason"])
    return ("%d owner reference(s) were left out because the owner is missing (they stay pending in the record); "
            "%d dependent(s) are without them: %s" % (
                len(missing), len(order), "; ".join("%s: owner %s" % (label, ", owner ".join(by_dependent[label]))
                                                    for label in order)))


class Runner(object):
    def __init__(self, client, owner_api_versions=None, record_namespace=DEFAULT_RECORD_NAMESPACE,
                 record_name=DEFAULT_RECORD_NAME, record_path=None, fail_on_unlistable=True,
                 fail_on_missing_owner=True, diff=False, page_size=500, checkpoint_every=CHECKPOINT_EVERY,
                 checkpoint_seconds=CHECKPOINT_SECONDS, require_record=True):
        self.client = client
        self.owner_api_versions = list(owner_api_versions or DEFAULT_OWNER_API_VERSIONS)
        self.record_namespace = record_namespace or DEFAULT_RECORD_NAMESPACE
        self.record_name = record_name or DEFAULT_RECORD_NAME
        self.record_path = record_path
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
        self.store = open_record_store(self.client, self.record_namespace, self.record_name, self.record_path, JOB)
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
               "objects": self.objects, "unlistable": self.unlistable, "missing_owners": self.missing,
               "failures": self.failures}
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
            ops = _refs_patch(uid, current, wanted, meta.get("resourceVersion"))
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
        for res in discovery.listable():
            try:
                items = self.client.list(res.api_version, res.plural, page_size=self.page_size, metadata_only=True)
            except ClientError as exc:
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
            raise OwnerReferencesError(
                "%d resource type(s) cannot be listed, so some owner references could be missed: %s. "
                "Nothing was changed. Fix access to them, or set fail_on_unlistable=false to go on without "
                "them." % (len(self.unlistable), names), self.result("detached", False))
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
        for res, obj in found:
            self._detach_one(res, obj)
        changed = bool(new or self.counts["detached"])
        if self.failures:
            raise OwnerReferencesError("%d object(s) could not be detached: %s" % (
                len(self.failures), "; ".join(f["error"] for f in self.failures[:5])),
                self.result("detached", changed))
        return self.result("detached", changed)

    def _detach_one(self, res, obj):
        dep = self._dependent(res, obj)
        removed = []

        def compute(refs):
            mine = [r for r in refs if self._is_owner_ref(r)]
            if mine:
                current = dict(obj)
                current_meta = dict(obj.get("metadata") or {})
                current_meta["ownerReferences"] = refs
                current["metadata"] = current_meta
                if self._record(res, current):
                    self.store.save()  # a reference that appeared since the scan: record it first
            del removed[:]
            removed.extend(mine)
            return [r for r in refs if not self._is_owner_ref(r)]

        try:
            before, after, _obj = self._patch_refs(res, obj, compute)
        except ClientError as exc:
            self.counts["failed"] += 1
            self.failures.append({"dependent": dep, "error": str(exc)})
            self._report_dep(dep, "failed", [])
            return
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
        item["owners"] = [_owner_brief(r) for r in refs]
        if extra:
            item.update(extra)
        self.objects.append(item)

    # -- attached ------------------------------------------------------------------------------------

    def _no_record(self, store):
        """Attach found no record where it was told to look: fail naming where it looked and any record of this
        job found elsewhere (other namespaces' ConfigMaps, other files), unless the user said there is nothing
        to attach (``require_record=false``)."""
        where = "ConfigMap %s/%s and file %s" % (store.namespace, store.name, store.path)
        if not self.require_record:
            self.notes.append("no record at %s; require_record=false: nothing to attach" % where)
            return self.result("attached", False)
        directories = [os.path.dirname(store.path), os.path.expanduser(DEFAULT_RECORD_DIR)]
        found, unsearched = find_records(self.client, JOB, directories, cluster=store.cluster_id)
        msg = ("No owner references record at %s: nothing was attached. References detached earlier stay "
               "detached until the record is found." % where)
        if found:
            msg += " A record of this job was found at: %s; point record_namespace/record_name/record_path at it." % (
                "; ".join("%s (%d entries, %d pending)" % (f["where"], f["entries"], f["pending"]) for f in found))
        if unsearched:
            msg += " Not searched: %s." % "; ".join(unsearched)
        msg += " If there is nothing to attach (the detach recorded nothing), set require_record=false."
        result = self.result("attached", False)
        result["records_found"] = found
        raise OwnerReferencesError(msg, result)

    def attach(self):
        store = self._open_store()
        if not store.loaded_from["configmaps"] and not store.loaded_from["file"]:
            return self._no_record(store)
        pending = store.pending()
        if not pending:
            return self.result("attached", False)
        discovery = discover(self.client)
        by_dependent = {}
        order = []
        for key in pending:
            uid = store.get(key)["dependent"]["uid"]
            if uid not in by_dependent:
                by_dependent[uid] = []
                order.append(uid)
            by_dependent[uid].append(key)
        # entries of one record chunk together: a checkpoint then rewrites one ConfigMap, not all of them
        order.sort(key=lambda u: (min(store.chunk_of(k) for k in by_dependent[u]), u))
        self.counts["affected"] = len(order)
        prefetched = self._prefetch(discovery, [store.get(by_dependent[u][0])["dependent"] for u in order])
        owners = {}
        since_checkpoint = [0]
        last_checkpoint = [time.time()]
        changed = [False]

        def checkpoint(force=False):
            if self.check_mode or not changed[0]:
                return
            due = (since_checkpoint[0] >= self.checkpoint_every
                   and time.time() - last_checkpoint[0] >= self.checkpoint_seconds)
            if force or due or since_checkpoint[0] >= 10 * self.checkpoint_every:
                store.save()
                since_checkpoint[0] = 0
                last_checkpoint[0] = time.time()

        try:
            for uid in order:
                done = self._attach_one(discovery, by_dependent[uid], owners, prefetched)
                if done:
                    changed[0] = True
                    since_checkpoint[0] += done
                checkpoint()
        finally:
            checkpoint(force=True)
        attached_any = self.counts["attached"] > 0 or changed[0]
        problems = []
        if self.failures:
            problems.append("%d object(s) could not be re-attached: %s" % (
                len(self.failures), "; ".join(f["error"] for f in self.failures[:5])))
        if self.missing and self.fail_on_missing_owner:
            problems.append(missing_owners_message(self.missing))
        if problems:
            raise OwnerReferencesError(" ".join(problems), self.result("attached", attached_any))
        return self.result("attached", attached_any)

    def _prefetch(self, discovery, dependents):
        """One LIST instead of many GETs where many dependents share a type and namespace:
        (apiVersion, kind, namespace) -> {uid: object}. The patches stay guarded, so a stale copy only
        costs a retry."""
        groups = {}
        for dep in dependents:
            ident = (dep["apiVersion"], dep["kind"], dep.get("namespace"))
            groups[ident] = groups.get(ident, 0) + 1
        out = {}
        for (api_version, kind, namespace), count in sorted(groups.items(), key=lambda g: str(g[0])):
            if count < PREFETCH_MIN:
                continue
            res = discovery.find(api_version, kind)
            if res is None or not res.listable:
                continue
            try:
                items = self.client.list(res.api_version, res.plural, namespace=namespace,
                                         page_size=self.page_size, metadata_only=True)
            except ClientError:
                continue  # fall back to one GET per dependent
            out[(api_version, kind, namespace)] = dict(
                ((i.get("metadata") or {}).get("uid"), i) for i in items)
        return out

    def _owner_uid(self, discovery, dep, ref, owners):
        """(uid, None) of the owner ``ref`` names as it is now, or (None, reason)."""
        api_version, kind, name = ref.get("apiVersion"), ref.get("kind"), ref.get("name")
        res = discovery.find(api_version, kind)
        if res is None:
            failure = discovery.failure_for(api_version)
            why = "%s is not served" % api_version
            if failure is not None:
                why = "%s cannot be discovered (%s)" % (api_version, failure.message)
            return None, "%s %s: %s" % (kind, name, why)
        namespace = None
        if res.namespaced:
            namespace = dep.get("namespace")
            if not namespace:
                return None, "%s %s is namespaced but %s %s is cluster-scoped" % (
                    kind, name, dep.get("kind"), dep.get("name"))
        ident = (api_version, kind, namespace, name)
        if ident not in owners:
            owner = self.client.get(api_version, res.plural, name, namespace=namespace, metadata_only=True)
            owners[ident] = ((owner or {}).get("metadata") or {}).get("uid")
        uid = owners[ident]
        if not uid:
            return None, "%s %s%s not found" % (kind, namespace + "/" if namespace else "", name)
        return uid, None

    def _attach_one(self, discovery, keys, owners, prefetched=None):
        """Re-attach the pending entries of one dependent; return how many entries were marked done."""
        store = self.store
        dep = store.get(keys[0])["dependent"]
        res = discovery.find(dep["apiVersion"], dep["kind"])
        if res is None:
            self.counts["failed"] += 1
            self.failures.append({"dependent": dep, "error": "%s %s: type %s is not served" % (
                dep["kind"], dep["name"], dep["apiVersion"])})
            self._report_dep(dep, "failed", [])
            return 0
        listed = (prefetched or {}).get((dep["apiVersion"], dep["kind"], dep.get("namespace")))
        if listed is not None:
            obj = listed.get(dep["uid"])
        else:
            obj = self.client.get(res.api_version, res.plural, dep["name"], namespace=dep.get("namespace"),
                                  metadata_only=True)
        if obj is None or (obj.get("metadata") or {}).get("uid") != dep["uid"]:
            self.counts["dependents_gone"] += 1
            self._report_dep(dep, "gone", [store.get(k)["ownerReference"] for k in keys])
            if not self.check_mode:
                for key in keys:
                    store.mark_done(key, outcome="dependent gone")
            return len(keys)
        wanted = []  # (key, reference with the owner's current uid)
        for key in keys:
            ref = store.get(key)["ownerReference"]
            uid, why = self._owner_uid(discovery, dep, ref, owners)
            if uid is None:
                self.counts["missing_owners"] += 1
                self.missing.append({"dependent": dep, "owner": _owner_brief(ref), "reason": why,
                                     "lost": "%s: owner %s" % (describe_object(dep), why)})
                continue
            new_ref = dict(ref)
            new_ref["uid"] = uid
            wanted.append((key, new_ref))
        # back where they were in the list (a position past the end appends)
        wanted.sort(key=lambda kr: int(store.get(kr[0]).get("position") or 0))
        if not wanted:
            self._report_dep(dep, "owner missing", [])
            return 0

        def compute(refs):
            out = list(refs)
            for _key, new_ref in wanted:
                for i, cur in enumerate(out):
                    if _same_owner(cur, new_ref):
                        if cur.get("uid") != new_ref["uid"]:
                            out[i] = new_ref
                        break
                else:
                    position = int(store.get(_key).get("position") or 0)
                    out.insert(min(position, len(out)), new_ref)
            return out

        brief = [dict(_owner_brief(r), previous_uid=store.get(k)["ownerReference"].get("uid")) for k, r in wanted]
        if self.check_mode:
            current = (obj.get("metadata") or {}).get("ownerReferences") or []
            after = compute(copy.deepcopy(current))
            if after == current:
                self.counts["already_attached"] += len(wanted)
                self._report_dep(dep, "already attached", [], {"owners": brief})
            else:
                self.counts["attached"] += len(wanted)
                self._report_dep(dep, "would attach", [], {"owners": brief})
                self._add_diff(dep, current, after)
            return 0
        try:
            before, after, _obj = self._patch_refs(res, obj, compute)
        except ClientError as exc:
            self.counts["failed"] += 1
            self.failures.append({"dependent": dep, "error": str(exc)})
            self._report_dep(dep, "failed", [], {"owners": brief})
            return 0
        if before is None:
            self.counts["dependents_gone"] += 1
            self._report_dep(dep, "gone", [], {"owners": brief})
            for key in keys:
                store.mark_done(key, outcome="dependent gone")
            return len(keys)
        if before == after:
            self.counts["already_attached"] += len(wanted)
            outcome, action = "already attached", "already attached"
        else:
            self.counts["attached"] += len(wanted)
            outcome, action = "attached", "attached"
            self._add_diff(dep, before, after)
        self._report_dep(dep, action, [], {"owners": brief})
        for key, new_ref in wanted:
            store.mark_done(key, outcome=outcome, attached_uid=new_ref["uid"])
        return len(wanted)


def run(client, params, diff=False):
    """Entry point for the module: ``params`` holds the module's options."""
    if params.get("owner_api_versions") is not None and not [v for v in params["owner_api_versions"] if v]:
        raise OwnerReferencesError("owner_api_versions is an empty list: give at least one owner apiVersion (for "
                                   "example projectcalico.org/v3); nothing was read or written",
                                   {"changed": False, "state": params.get("state")})
    runner = Runner(client,
                    owner_api_versions=params.get("owner_api_versions"),
                    record_namespace=params.get("record_namespace"),
                    record_name=params.get("record_name"),
                    record_path=params.get("record_path"),
                    fail_on_unlistable=params.get("fail_on_unlistable", True),
                    fail_on_missing_owner=params.get("fail_on_missing_owner", True),
                    require_record=params.get("require_record", True),
                    diff=diff,
                    page_size=params.get("page_size") or 500)
    try:
        return runner.run(params["state"])
    except RecordStoreError as exc:
        raise OwnerReferencesError(str(exc), runner.result(params["state"], False))
