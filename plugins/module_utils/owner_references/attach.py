# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The owner references job, state ``attached`` (a mixin of ``runner.Runner``): for every recorded entry not
yet done, look up the owner, add the reference back with the owner's current UID, mark the entry done
(checkpointed as the run goes).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import threading
import time

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.discovery import discover
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.parallel import in_order, streamed
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.files import DEFAULT_RECORD_DIR, find_records
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references.rules import (
    ATTACH_AHEAD, CHECKPOINT_COST_SHARE, JOB, PREFETCH_MIN, OwnerReferencesError, describe_object,
    missing_owners_message, owner_brief, same_owner)


class AttachSteps(object):
    """State ``attached``: add the recorded owner references back, with the owners' current UIDs."""

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
        by_dependent, order = _by_dependent(store, pending)
        self.counts["affected"] = len(order)
        prefetched = self._prefetch(discovery, [store.get(by_dependent[u][0])["dependent"] for u in order])
        owners = {}
        checkpoints = _Checkpoints(store, self.check_mode, self.checkpoint_every, self.checkpoint_seconds)
        # ``workers`` dependents at a time; each outcome booked in order as soon as it is in (a checkpoint when
        # due) while the next patches are in flight; an unexpected error stops new patches, the ones sent are booked
        stop = threading.Event()
        unexpected = None
        try:
            for outcome, error in streamed(lambda u: self._attach_net(discovery, by_dependent[u], owners, prefetched),
                                           order, self.workers, ahead=ATTACH_AHEAD, stop=stop):
                if error is not None:
                    unexpected = unexpected or error
                    stop.set()
                    continue
                checkpoints.booked(self._attach_book(outcome))
                checkpoints.save()
            if unexpected is not None:
                raise unexpected
        finally:
            checkpoints.save(force=True)
        attached_any = self.counts["attached"] > 0 or checkpoints.changed
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
        wanted = []  # ((apiVersion, kind, namespace), type) worth a LIST
        for (api_version, kind, namespace), count in sorted(groups.items(), key=lambda g: str(g[0])):
            res = discovery.find(api_version, kind)
            if count >= PREFETCH_MIN and res is not None and res.listable:
                wanted.append(((api_version, kind, namespace), res))
        out = {}
        # ``workers`` LISTs at a time (one per namespace of a namespaced type)
        for (ident, _res), (items, error) in zip(wanted, in_order(
                lambda w: self.client.list(w[1].api_version, w[1].plural, namespace=w[0][2],
                                           page_size=self.page_size, metadata_only=True), wanted, self.workers)):
            if error is not None:
                if not isinstance(error, ClientError):
                    raise error
                continue  # fall back to one GET per dependent
            out[ident] = dict(((i.get("metadata") or {}).get("uid"), i) for i in items)
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
            with self._lock:
                lock = self._owner_locks.setdefault(ident, threading.Lock())
            with lock:  # one GET per owner, by the first worker that needs it; other owners are looked up meanwhile
                if ident not in owners:
                    owner = self.client.get(api_version, res.plural, name, namespace=namespace, metadata_only=True)
                    owners[ident] = ((owner or {}).get("metadata") or {}).get("uid")
        uid = owners[ident]
        if not uid:
            return None, "%s %s%s not found" % (kind, namespace + "/" if namespace else "", name)
        return uid, None

    def _attach_net(self, discovery, keys, owners, prefetched=None):
        """The reads and the patch for one dependent (run on a worker thread), nothing booked: an outcome dict
        for ``_attach_book``. A ClientError of the patch is an outcome; any other error is raised."""
        store = self.store
        dep = store.get(keys[0])["dependent"]
        out = {"dep": dep, "keys": keys}
        res = discovery.find(dep["apiVersion"], dep["kind"])
        if res is None:
            out["outcome"] = "type missing"
            return out
        listed = (prefetched or {}).get((dep["apiVersion"], dep["kind"], dep.get("namespace")))
        if listed is not None:
            obj = listed.get(dep["uid"])
        else:
            obj = self.client.get(res.api_version, res.plural, dep["name"], namespace=dep.get("namespace"),
                                  metadata_only=True)
        if obj is None or (obj.get("metadata") or {}).get("uid") != dep["uid"]:
            out["outcome"] = "gone before"
            return out
        wanted, out["missing"] = self._wanted(discovery, dep, keys, owners)
        out["wanted"] = wanted
        if not wanted:
            out["outcome"] = "owner missing"
            return out

        def compute(refs):
            return _with_owners(refs, wanted, store)

        if self.check_mode:
            current = (obj.get("metadata") or {}).get("ownerReferences") or []
            out.update(outcome="check", before=current, after=compute(copy.deepcopy(current)))
            return out
        try:
            before, after, _obj = self._patch_refs(res, obj, compute)
        except ClientError as exc:
            out.update(outcome="failed", error=exc)
            return out
        out.update(outcome="gone" if before is None else "patched", before=before, after=after)
        return out

    def _wanted(self, discovery, dep, keys, owners):
        """The references to put back, ``(key, reference with the owner's current uid)`` in the order of their
        recorded positions, and the ones whose owner is missing, ``(reference, why)``."""
        wanted, missing = [], []
        for key in keys:
            ref = self.store.get(key)["ownerReference"]
            uid, why = self._owner_uid(discovery, dep, ref, owners)
            if uid is None:
                missing.append((ref, why))
                continue
            new_ref = dict(ref)
            new_ref["uid"] = uid
            wanted.append((key, new_ref))
        # back where they were in the list (a position past the end appends)
        wanted.sort(key=lambda kr: int(self.store.get(kr[0]).get("position") or 0))
        return wanted, missing

    def _attach_book(self, out):
        """The counts, reports, diff and record marks of one dependent's outcome (in the calling thread, in
        order); returns how many entries were marked done."""
        store = self.store
        dep, keys, outcome = out["dep"], out["keys"], out["outcome"]
        if outcome == "type missing":
            self.counts["failed"] += 1
            self.failures.append({"dependent": dep, "error": "%s %s: type %s is not served" % (
                dep["kind"], dep["name"], dep["apiVersion"])})
            self._report_dep(dep, "failed", [])
            return 0
        if outcome == "gone before":
            self.counts["dependents_gone"] += 1
            self._report_dep(dep, "gone", [store.get(k)["ownerReference"] for k in keys])
            if not self.check_mode:
                for key in keys:
                    store.mark_done(key, outcome="dependent gone")
            return len(keys)
        for ref, why in out["missing"]:
            self.counts["missing_owners"] += 1
            self.missing.append({"dependent": dep, "owner": owner_brief(ref), "reason": why,
                                 "lost": "%s: owner %s" % (describe_object(dep), why)})
        wanted = out["wanted"]
        if outcome == "owner missing":
            self._report_dep(dep, "owner missing", [])
            return 0
        brief = [dict(owner_brief(r), previous_uid=store.get(k)["ownerReference"].get("uid")) for k, r in wanted]
        if outcome == "check":
            if out["after"] == out["before"]:
                self.counts["already_attached"] += len(wanted)
                self._report_dep(dep, "already attached", [], {"owners": brief})
            else:
                self.counts["attached"] += len(wanted)
                self._report_dep(dep, "would attach", [], {"owners": brief})
                self._add_diff(dep, out["before"], out["after"])
            return 0
        if outcome == "failed":
            self.counts["failed"] += 1
            self.failures.append({"dependent": dep, "error": str(out["error"])})
            self._report_dep(dep, "failed", [], {"owners": brief})
            return 0
        if outcome == "gone":
            self.counts["dependents_gone"] += 1
            self._report_dep(dep, "gone", [], {"owners": brief})
            for key in keys:
                store.mark_done(key, outcome="dependent gone")
            return len(keys)
        before, after = out["before"], out["after"]
        if before == after:
            self.counts["already_attached"] += len(wanted)
            action = "already attached"
        else:
            self.counts["attached"] += len(wanted)
            action = "attached"
            self._add_diff(dep, before, after)
        self._report_dep(dep, action, [], {"owners": brief})
        for key, new_ref in wanted:
            store.mark_done(key, outcome=action, attached_uid=new_ref["uid"])
        return len(wanted)


def _with_owners(refs, wanted, store):
    """``refs`` with each wanted reference in: the same owner's entry gets the new uid, a missing one goes back at
    its recorded position."""
    result = list(refs)
    for key, new_ref in wanted:
        for i, cur in enumerate(result):
            if same_owner(cur, new_ref):
                if cur.get("uid") != new_ref["uid"]:
                    result[i] = new_ref
                break
        else:
            position = int(store.get(key).get("position") or 0)
            result.insert(min(position, len(result)), new_ref)
    return result


def _by_dependent(store, pending):
    """The pending entries by dependent UID, and the dependents in the order to attach them: entries of one record
    chunk together, so that a checkpoint then rewrites one ConfigMap, not all of them."""
    by_dependent, order = {}, []
    for key in pending:
        uid = store.get(key)["dependent"]["uid"]
        if uid not in by_dependent:
            by_dependent[uid] = []
            order.append(uid)
        by_dependent[uid].append(key)
    order.sort(key=lambda u: (min(store.chunk_of(k) for k in by_dependent[u]), u))
    return by_dependent, order


class _Checkpoints(object):
    """When the record is saved during an attach: every ``every`` entries done, at most once per ``seconds`` (a
    large record costs more to save: its saving is kept under CHECKPOINT_COST_SHARE of the run), at once after ten
    times ``every``, and at the end. Nothing is saved in check mode or before anything changed."""

    def __init__(self, store, check_mode, every, seconds):
        self.store, self.check_mode, self.every, self.seconds = store, check_mode, every, seconds
        self.since, self.last, self.interval = 0, time.time(), seconds
        self.changed = False

    def booked(self, done):
        if done:
            self.changed = True
            self.since += done

    def save(self, force=False):
        if self.check_mode or not self.changed:
            return
        due = self.since >= self.every and time.time() - self.last >= self.interval
        if force or due or self.since >= 10 * self.every:
            started = time.time()
            self.store.save()
            self.since = 0
            self.last = time.time()
            if self.seconds > 0:
                self.interval = max(self.seconds, CHECKPOINT_COST_SHARE * (self.last - started))
